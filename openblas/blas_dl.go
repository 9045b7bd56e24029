//go:build ((linux && !android) || darwin) && (amd64 || arm64) && !gops_nodl

package openblas

import (
	"errors"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// libNames are the names load tries, in order.
var libNames = []string{
	"libopenblas.so.0", "libopenblas.so", // Linux (Debian: libopenblas0)
	"libopenblas.dylib", "/opt/homebrew/opt/openblas/lib/libopenblas.dylib", "/usr/local/opt/openblas/lib/libopenblas.dylib", // macOS (Homebrew)
}

// load is Load: it opens the first OpenBLAS of libNames that loads, has
// the symbols BLAS needs and 32-bit integers and passes the self-test, sets
// it to one thread and returns it. Libraries it rejects are closed again.
func load() (*BLAS, error) {
	var reasons []string
	for _, name := range libNames {
		h, err := dlopen(name)
		if err != nil {
			if msg := err.Error(); msg != "" && !strings.Contains(msg, "No such file") && !strings.Contains(msg, "not found") {
				reasons = append(reasons, name+": "+msg) // there, but does not load
			}
			continue
		}
		o, err := blasFrom(h)
		if err != nil {
			reasons = append(reasons, name+" "+err.Error())
			_ = purego.Dlclose(h)
			continue
		}
		o.name = name
		return o, nil
	}
	if len(reasons) == 0 {
		return nil, errors.New("no OpenBLAS shared library found (" + strings.Join(libNames[:2], ", ") + ", ...)")
	}
	return nil, errors.New(strings.Join(reasons, "; "))
}

// dlopen is purego.Dlopen on one OS thread: dlerror, which gives the error
// message, is per thread, and the goroutine could otherwise move between
// the two calls (the message was then empty).
func dlopen(name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// blasFrom binds the functions BLAS uses from the library h, checks the
// library and sets it to one thread.
func blasFrom(h uintptr) (*BLAS, error) {
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
	o := &BLAS{}
	purego.RegisterFunc(&o.sgemm, syms["cblas_sgemm"])
	purego.RegisterFunc(&o.dgemm, syms["cblas_dgemm"])
	if !o.selfTest() {
		return nil, errors.New("failed the self-test (a small product differs from gonum's)")
	}
	o.core = "unknown"
	if p, err := purego.Dlsym(h, "openblas_get_corename"); err == nil {
		var corename func() string
		purego.RegisterFunc(&corename, p)
		if c := strings.TrimSpace(corename()); c != "" {
			o.core = c
		}
	}
	var setThreads func(int32)
	purego.RegisterFunc(&setThreads, syms["openblas_set_num_threads"])
	setThreads(1)
	return o, nil
}
