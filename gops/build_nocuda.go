//go:build !cuda

package gops

// cudaBuild says whether this build has the cuda tag (gops/cuda.go).
const cudaBuild = false
