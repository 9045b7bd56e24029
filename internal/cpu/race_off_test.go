//go:build !race

package cpu

// raceBuild: see race_on_test.go.
const raceBuild = false
