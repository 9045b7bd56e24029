package gops_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gops-dev/gops/openblas"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// importBLAS and importTensorBLAS are Gorgonia's and its tensor package's
// BLAS as importing gops (and the rest of this test binary) left them,
// before TestMain's openblas.UseFromEnv.
var importBLAS, importTensorBLAS any

// TestMain records the BLAS that importing gops left, then runs the tests
// and benchmarks as cmd/demo runs: after openblas.UseFromEnv, so on OpenBLAS when
// it is installed (GOPS_BLAS=gonum go test keeps gonum's pure-Go BLAS).
// What Use chose, and why not OpenBLAS, is TestBLAS's log line
// (openblas.Describe()).
func TestMain(m *testing.M) {
	importBLAS, importTensorBLAS = gorgonia.WhichBLAS(), tensor.WhichBLAS()
	openblas.UseFromEnv() // its error is in Describe's line; TestBLAS checks it
	os.Exit(m.Run())
}

// TestImportLeavesGorgoniaBLAS: importing gops changes no process-wide
// state; in particular Gorgonia's BLAS is still its default, gonum's
// pure-Go one, until the program calls openblas.Use (or gorgonia.Use).
func TestImportLeavesGorgoniaBLAS(t *testing.T) {
	if _, ok := importBLAS.(gonum.Implementation); !ok {
		t.Errorf("after importing gops, gorgonia.WhichBLAS() is %T, want gonum.Implementation", importBLAS)
	}
	if _, ok := importTensorBLAS.(gonum.Implementation); !ok {
		t.Errorf("after importing gops, tensor.WhichBLAS() is %T, want gonum.Implementation", importTensorBLAS)
	}
}

// TestBLAS logs which BLAS runs the matrix products of these tests and
// benchmarks (scripts/bench.sh reads the "BLAS: " line) and checks that
// GOPS_BLAS=gonum is obeyed; with GOPS_TEST_REQUIRE_OPENBLAS=1 (CI, where
// libopenblas is installed) OpenBLAS must be in use unless GOPS_BLAS=gonum
// asked for none or Use refused its generic kernels.
func TestBLAS(t *testing.T) {
	desc := openblas.Describe()
	t.Logf("BLAS: %s", desc)
	onOpenBLAS := strings.HasPrefix(desc, "openblas (")
	if onOpenBLAS != isOpenBLAS(gorgonia.WhichBLAS()) {
		t.Fatalf("openblas.Describe() = %q, but gorgonia.WhichBLAS() is %T", desc, gorgonia.WhichBLAS())
	}
	gonumAsked := strings.EqualFold(os.Getenv("GOPS_BLAS"), "gonum")
	if gonumAsked && onOpenBLAS {
		t.Fatalf("GOPS_BLAS=%s, but OpenBLAS is in use: %s", os.Getenv("GOPS_BLAS"), desc)
	}
	refused := strings.Contains(desc, "refused: its generic kernels")
	if !onOpenBLAS && !gonumAsked && !refused && os.Getenv("GOPS_TEST_REQUIRE_OPENBLAS") == "1" {
		t.Fatalf("GOPS_TEST_REQUIRE_OPENBLAS=1 but openblas.Describe() = %q", desc)
	}
}

// isOpenBLAS reports whether b is package openblas's BLAS.
func isOpenBLAS(b gorgonia.BLAS) bool {
	_, ok := b.(*openblas.BLAS)
	return ok
}
