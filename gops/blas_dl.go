//go:build ((linux && !android) || darwin) && (amd64 || arm64) && !gops_nodl

package gops

import (
	"errors"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// openBLASNames are the names loadOpenBLAS tries, in order.
var openBLASNames = []string{
	"libopenblas.so.0", "libopenblas.so", // Linux (Debian: libopenblas0)
	"libopenblas.dylib", "/opt/homebrew/opt/openblas/lib/libopenblas.dylib", "/usr/local/opt/openblas/lib/libopenblas.dylib", // macOS (Homebrew)
}

// loadOpenBLAS opens the first OpenBLAS of openBLASNames that loads, has
// the symbols gops needs and 32-bit integers, sets it to one thread and
// returns it with its name. Libraries it rejects are closed again.
func loadOpenBLAS() (*openBLAS, string, error) {
	var reasons []string
	for _, name := range openBLASNames {
		h, err := dlopen(name)
		if err != nil {
			if msg := err.Error(); msg != "" && !strings.Contains(msg, "No such file") && !strings.Contains(msg, "not found") {
				reasons = append(reasons, name+": "+msg) // there, but does not load
			}
			continue
		}
		o, err := openBLASFrom(h)
		if err != nil {
			reasons = append(reasons, name+" "+err.Error())
			_ = purego.Dlclose(h)
			continue
		}
		return o, name, nil
	}
	if len(reasons) == 0 {
		return nil, "", errors.New("no OpenBLAS shared library found (" + strings.Join(openBLASNames[:2], ", ") + ", ...)")
	}
	return nil, "", errors.New(strings.Join(reasons, "; "))
}

// dlopen is purego.Dlopen on one OS thread: dlerror, which gives the error
// message, is per thread, and the goroutine could otherwise move between
// the two calls (the message was then empty).
func dlopen(name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// openBLASFrom binds the functions gops uses from the library h.
func openBLASFrom(h uintptr) (*openBLAS, error) {
	syms := map[string]uintptr{}
	for _, s := range []string{"cblas_sgemm", "cblas_dgemm", "openblas_set_num_threads", "openblas_get_config"} {
		p, err := purego.Dlsym(h, s)
		if err != nil {
			return nil, errors.New("lacks " + s)
		}
		syms[s] = p
	}
	var config func() string
	purego.RegisterFunc(&config, syms["openblas_get_config"])
	if cfg := config(); strings.Contains(cfg, "USE64BITINT") {
		return nil, errors.New("uses 64-bit integers (" + cfg + ")")
	}
	o := &openBLAS{}
	purego.RegisterFunc(&o.sgemm, syms["cblas_sgemm"])
	purego.RegisterFunc(&o.dgemm, syms["cblas_dgemm"])
	if !o.selfTest() {
		return nil, errors.New("failed the self-test (a small product differs from gonum's)")
	}
	var setThreads func(int32)
	purego.RegisterFunc(&setThreads, syms["openblas_set_num_threads"])
	setThreads(1)
	return o, nil
}
