// Package openblas runs Gorgonia's float32/float64 matrix products on
// OpenBLAS, found at run time as a shared library, when a program asks for
// it. Importing gops changes no process-wide state, and importing this
// package loads nothing either (it has no init): a program opts in by
// calling Use once at start-up, the convention of gonum's blas64.Use and of
// gorgonia.Use itself:
//
//	func main() {
//		desc, _ := openblas.UseFromEnv()    // before running graphs
//		log.Printf("blas: %s", desc) // "openblas (libopenblas.so.0, core SkylakeX)", or "gonum (pure Go): why"
//		...
//	}
//
// UseFromEnv is Use behind a switch, the environment variable GOPS_BLAS,
// for the programs that want one (gops' demo, tests and benchmarks).
//
// Use's error only says why OpenBLAS is not in use; gonum's BLAS then
// computes the same results (up to the last bits), more slowly.
//
// Nothing in packages gops and nn calls Use; gops' demo (cmd/demo) and its
// tests and benchmarks do. Those matrix products are every gorgonia.Mul /
// BatchedMatMul, and nn.MatMul (so DeformConv2d's grouped product) and
// nn.Conv2d's, which otherwise run on gops' own product (package gemm),
// not on gonum's. Load returns the library as a BLAS without installing
// it, and Describe says which BLAS a process uses now.
//
// OpenBLAS is looked for on Linux and macOS on amd64/arm64 (libopenblas.so.0,
// libopenblas.so, libopenblas.dylib; Debian: apt-get install libopenblas0;
// macOS: brew install openblas) and loaded with
// github.com/ebitengine/purego: no C compiler or headers are needed to
// build, but the binary then links the system's C library dynamically. The
// build tag gops_nodl leaves the loader out (Load then always fails; with
// CGO_ENABLED=0 the binary is static). A library is used only if it has the
// symbols this package calls, 32-bit integers (LP64) and passes a
// self-test. It then computes the products (Sgemm/Dgemm) of at least 16³
// multiply-adds, single-threaded, each large product cut into blocks spread
// over goroutines; smaller products and all other BLAS routines stay
// gonum's. Results are bitwise the same for any GOMAXPROCS with either BLAS;
// between the two they differ in the last bits.
package openblas

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	gemmk "github.com/gops-dev/gops/internal/gemm"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/gorgonia"
)

// Load finds an OpenBLAS shared library (see the package documentation for
// where it looks), opens it, checks it (32-bit integers, the symbols it
// needs, a self-test against gonum) and returns it as a BLAS for
// gorgonia.Use or gonum's blas64.Use. It does not install it anywhere: Use
// does that for Gorgonia.
//
// Load sets the library's own thread count to 1
// (openblas_set_num_threads(1)) because BLAS splits large products over
// goroutines itself. That setting belongs to the shared library, so it
// holds for the whole process, for any other user of the same libopenblas
// too.
//
// The error says why no library qualified: none found, or for each one
// found why it was rejected; it is always an error in a build without the
// loader (other platforms, or the build tag gops_nodl). Each call opens the
// library again (the dynamic loader keeps one copy).
func Load() (*BLAS, error) {
	return load()
}

// Use makes OpenBLAS compute Gorgonia's matrix products for the whole
// process, and those of nn.MatMul and nn.Conv2d (gops' own product
// otherwise): gorgonia.Use of what Load returns, if it succeeds and its
// kernels are not OpenBLAS's generic ones (the fallback it takes for a CPU
// it does not know: Prescott, Nehalem, ... without fused multiply-add) on a
// CPU where gops' own product has AVX2/FMA or AVX-512 kernels, which are
// then faster: such an OpenBLAS is refused with an error that says so and
// how to name the CPU (OPENBLAS_CORETYPE).
//
// It returns a one-line description of the BLAS now in use, for logs and
// benchmark reports: "openblas (NAME, core CORE)", NAME the library's file
// name and CORE the kernels it chose for this CPU (BLAS.Core), or
// "gonum (pure Go): " followed by why OpenBLAS is not used. The error is
// Load's, or the refusal; the description is filled in either way, and gonum's BLAS keeps
// working, so a program can log it and go on.
//
// Use changes process-wide state (Gorgonia's BLAS, and OpenBLAS's thread
// count: see Load), so programs call it once at start-up, before running
// graphs; nothing in package gops calls it. The first call of Use or
// UseFromEnv decides; later calls return the same description and error
// and install the same OpenBLAS again (undoing a gorgonia.Use of the program
// in between). Calls of Use and UseFromEnv are safe for concurrent use with
// each other, but not with graphs running: Gorgonia's ops, and nn's
// products (nn.MatMul, the convolutions), read Gorgonia's BLAS without a
// lock, as gorgonia.Use documents for itself.
func Use() (string, error) { return use(false) }

// UseFromEnv is Use unless the environment variable GOPS_BLAS says
// otherwise: unset or "openblas" (any case), Use; "gonum", nothing
// (gonum's pure-Go BLAS, Gorgonia's default, stays, and the description
// says why); anything else, nothing and an error. gops' demo, tests and
// benchmarks call it, so that GOPS_BLAS=gonum runs them on gonum's BLAS.
func UseFromEnv() (string, error) { return use(true) }

func use(fromEnv bool) (string, error) {
	useMu.Lock()
	defer useMu.Unlock()
	if !used {
		used = true
		usedDesc, usedBLAS, usedErr = choose(fromEnv)
	}
	if usedBLAS != nil && gorgonia.WhichBLAS() != usedBLAS {
		gorgonia.Use(usedBLAS) // (installed already: no write)
	}
	return usedDesc, usedErr
}

// Describe is the one-line description of the BLAS that computes
// Gorgonia's matrix products now, in Use's words: Use's description while
// what Use chose is in use; "replaced by the program's gorgonia.Use
// (openblas.Use chose ...)" once the program installed another BLAS after
// Use; and without a call of Use, "gonum (pure Go): openblas.Use was not
// called" for Gorgonia's default, "openblas (NAME, core CORE)" for a BLAS of Load the
// program installed itself, or the Go type of another one. It changes
// nothing.
func Describe() string {
	useMu.Lock()
	called, desc, chosen := used, usedDesc, usedBLAS
	useMu.Unlock()
	cur := gorgonia.WhichBLAS()
	_, isGonum := cur.(gonum.Implementation)
	if !called {
		switch b := cur.(type) {
		case *BLAS:
			return b.describe()
		case gonum.Implementation:
			return "gonum (pure Go): openblas.Use was not called"
		default:
			return fmt.Sprintf("%T (the program's gorgonia.Use; openblas.Use was not called)", cur)
		}
	}
	if chosen != nil && cur != gorgonia.BLAS(chosen) || chosen == nil && !isGonum {
		return "replaced by the program's gorgonia.Use (openblas.Use chose " + desc + ")"
	}
	return desc
}

// What the first call of Use chose: usedBLAS is the OpenBLAS it installed,
// nil when it kept gonum's BLAS.
var (
	useMu    sync.Mutex
	used     bool
	usedDesc string
	usedBLAS *BLAS
	usedErr  error
)

// choose loads OpenBLAS, unless fromEnv and GOPS_BLAS asks for none: Use's
// description, the OpenBLAS to install (nil for none) and the error.
func choose(fromEnv bool) (string, *BLAS, error) {
	env := os.Getenv("GOPS_BLAS")
	if !fromEnv {
		env = ""
	}
	switch strings.ToLower(env) {
	case "", "openblas":
	case "gonum":
		return "gonum (pure Go): GOPS_BLAS=" + env, nil, nil
	default:
		err := errors.New("GOPS_BLAS=" + env + " is neither gonum nor openblas")
		return "gonum (pure Go): " + err.Error(), nil, err
	}
	o, err := Load()
	if err == nil {
		err = genericCore(o, gemmk.Kernel())
	}
	if err != nil {
		return "gonum (pure Go): " + err.Error(), nil, err
	}
	return o.describe(), o, nil
}

// errGenericCore marks Use's refusal of an OpenBLAS running its generic
// kernels (errors.Is).
var errGenericCore = errors.New("generic kernels")

// genericCores are OpenBLAS cores without fused multiply-add: its fallback
// when it does not know the CPU (Debian's 0.3.21 picks Prescott, SSE3, on
// recent AVX-512 Xeons), 2 to 10 times slower than gops' own product on a
// CPU with AVX2/FMA or AVX-512 (measured: BENCHMARKS.md).
var genericCores = []string{"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
	"coppermine", "northwood", "banias", "opteron", "opteron_sse3", "barcelona", "bobcat", "sandybridge", "generic"}

// genericCore is an error when o runs generic kernels and gops' product
// (kernel, internal/gemm's) has AVX2/FMA or AVX-512 ones.
func genericCore(o *BLAS, kernel string) error {
	if kernel != "avx512" && kernel != "avx2" {
		return nil
	}
	for _, c := range genericCores {
		if strings.EqualFold(o.Core(), c) {
			return fmt.Errorf("%s refused: its %w (core %s) are slower than gops' own product (%s kernels); "+
				"name the CPU with OPENBLAS_CORETYPE (SkylakeX with AVX-512, Haswell with AVX2, Zen on AMD) to use it",
				o.describe(), errGenericCore, o.Core(), kernel)
		}
	}
	return nil
}
