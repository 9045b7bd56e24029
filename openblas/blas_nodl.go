//go:build !(((linux && !android) || darwin) && (amd64 || arm64)) || gops_nodl

package openblas

import "errors"

// load is Load where this package has no loader: it loads OpenBLAS on
// Linux and macOS (amd64, arm64) only, and not with the build tag gops_nodl.
func load() (*BLAS, error) {
	return nil, errors.New("OpenBLAS is not loaded in this build (Linux and macOS on amd64/arm64 only, not with -tags gops_nodl)")
}
