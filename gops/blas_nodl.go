//go:build !((linux || darwin) && (amd64 || arm64))

package gops

import "errors"

// loadOpenBLAS: gops loads OpenBLAS on Linux and macOS (amd64, arm64) only.
func loadOpenBLAS() (*openBLAS, string, error) {
	return nil, "", errors.New("OpenBLAS is loaded on Linux and macOS (amd64, arm64) only")
}
