//go:build (linux || darwin) && (amd64 || arm64)

package gops

import (
	"errors"
	"strings"

	"github.com/ebitengine/purego"
)

// openBLASNames are the names loadOpenBLAS tries, in order.
var openBLASNames = []string{
	"libopenblas.so.0", "libopenblas.so", // Linux (Debian: libopenblas0)
	"libopenblas.dylib", "/opt/homebrew/opt/openblas/lib/libopenblas.dylib", "/usr/local/opt/openblas/lib/libopenblas.dylib", // macOS (Homebrew)
}

// loadOpenBLAS opens the first OpenBLAS of openBLASNames that has the
// symbols gops needs and 32-bit integers, sets it to one thread and returns
// it with its name.
func loadOpenBLAS() (*openBLAS, string, error) {
	var reasons []string
	for _, name := range openBLASNames {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			continue
		}
		syms := map[string]uintptr{}
		for _, s := range []string{"cblas_sgemm", "cblas_dgemm", "openblas_set_num_threads", "openblas_get_config"} {
			if p, err := purego.Dlsym(h, s); err == nil {
				syms[s] = p
			}
		}
		if len(syms) < 4 {
			reasons = append(reasons, name+" lacks cblas_sgemm, cblas_dgemm or openblas_* symbols")
			continue
		}
		var config func() string
		purego.RegisterFunc(&config, syms["openblas_get_config"])
		if cfg := config(); strings.Contains(cfg, "USE64BITINT") {
			reasons = append(reasons, name+" uses 64-bit integers ("+cfg+")")
			continue
		}
		var setThreads func(int32)
		purego.RegisterFunc(&setThreads, syms["openblas_set_num_threads"])
		setThreads(1)
		o := &openBLAS{}
		purego.RegisterFunc(&o.sgemm, syms["cblas_sgemm"])
		purego.RegisterFunc(&o.dgemm, syms["cblas_dgemm"])
		return o, name, nil
	}
	if len(reasons) == 0 {
		return nil, "", errors.New("no OpenBLAS shared library found (" + strings.Join(openBLASNames[:2], ", ") + ", ...)")
	}
	return nil, "", errors.New(strings.Join(reasons, "; "))
}
