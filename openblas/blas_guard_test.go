//go:build linux && amd64 && !gops_nodl

package openblas

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// guarded returns a slice of n elements of size esz whose first element
// follows a PROT_NONE page and whose last element is followed by one, so any
// access outside it faults.
func guarded(t *testing.T, n, esz int) (unsafe.Pointer, func()) {
	t.Helper()
	ps := syscall.Getpagesize()
	body := (n*esz + ps - 1) / ps * ps
	if body == 0 {
		body = ps
	}
	mem, err := syscall.Mmap(-1, 0, body+2*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[:ps], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[ps+body:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	// Place the slice's end at the end of the body: trailing guard adjacent.
	start := ps + body - n*esz
	return unsafe.Pointer(&mem[start]), func() { syscall.Munmap(mem) }
}

// TestOpenBLASGuardPages runs the split OpenBLAS Sgemm/Dgemm on minimal-length
// operands that end exactly at a PROT_NONE page (and, in a second pass,
// start right after one): any read or write past the slices segfaults.
func TestOpenBLASGuardPages(t *testing.T) {
	o := requireOpenBLAS(t)
	r := rand.New(rand.NewPCG(7, 8))
	shapes := [][3]int{{3, 4, 5}, {37, 301, 29}, {301, 37, 29}, {1, 2000, 200}, {2000, 1, 200}, {5, 5, 20000}, {1, 1, 1}, {64, 64, 64}, {16, 16, 16}, {7, 9, 70}} // from 16³ on through OpenBLAS
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, extra := range []int{0, 5} {
					ar, ac := storedShape(tA, m, k)
					br, bc := storedShape(tB, k, n)
					lda, ldb, ldc := ac+extra, bc+extra, n+extra
					la, lb, lc := lda*(ar-1)+ac, ldb*(br-1)+bc, ldc*(m-1)+n
					pa, fa := guarded(t, la, 8)
					pb, fb := guarded(t, lb, 8)
					pc, fc := guarded(t, lc, 8)
					a := unsafe.Slice((*float64)(pa), la)
					b := unsafe.Slice((*float64)(pb), lb)
					c := unsafe.Slice((*float64)(pc), lc)
					for i := range a {
						a[i] = r.NormFloat64()
					}
					for i := range b {
						b[i] = r.NormFloat64()
					}
					for i := range c {
						c[i] = r.NormFloat64()
					}
					want := append([]float64(nil), c...)
					gonum.Implementation{}.Dgemm(tA, tB, m, n, k, 0.3, a, lda, b, ldb, 1.7, want, ldc)
					o.Dgemm(tA, tB, m, n, k, 0.3, a, lda, b, ldb, 1.7, c, ldc)
					if err := closeTo(c, want, ldc, n, 1e-12); err != nil {
						t.Fatalf("Dgemm %v %c%c extra=%d: %v", s, tA, tB, extra, err)
					}
					fa()
					fb()
					fc()

					pa, fa = guarded(t, la, 4)
					pb, fb = guarded(t, lb, 4)
					pc, fc = guarded(t, lc, 4)
					a32 := unsafe.Slice((*float32)(pa), la)
					b32 := unsafe.Slice((*float32)(pb), lb)
					c32 := unsafe.Slice((*float32)(pc), lc)
					for i := range a32 {
						a32[i] = float32(r.NormFloat64())
					}
					for i := range b32 {
						b32[i] = float32(r.NormFloat64())
					}
					for i := range c32 {
						c32[i] = float32(r.NormFloat64())
					}
					want32 := append([]float32(nil), c32...)
					gonum.Implementation{}.Sgemm(tA, tB, m, n, k, 0.3, a32, lda, b32, ldb, 1.7, want32, ldc)
					o.Sgemm(tA, tB, m, n, k, 0.3, a32, lda, b32, ldb, 1.7, c32, ldc)
					if err := closeTo(to64(c32), to64(want32), ldc, n, 1e-3); err != nil {
						t.Fatalf("Sgemm %v %c%c extra=%d: %v", s, tA, tB, extra, err)
					}
					fa()
					fb()
					fc()
				}
			}
		}
	}
}

// TestOpenBLASEmpty: zero sizes with nil/empty slices and k == 0 (C = beta·C)
// behave as gonum's.
func TestOpenBLASEmpty(t *testing.T) {
	o := requireOpenBLAS(t)
	o.Dgemm(blas.NoTrans, blas.NoTrans, 0, 0, 0, 1, nil, 1, nil, 1, 0, nil, 1)
	o.Sgemm(blas.Trans, blas.NoTrans, 0, 3, 2, 1, nil, 1, make([]float32, 6), 3, 0, nil, 3)
	c := []float64{1, 2, 3, 4}
	o.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 0, 1, make([]float64, 2), 1, nil, 2, 0.5, c, 2)
	if fmt.Sprint(c) != "[0.5 1 1.5 2]" {
		t.Fatalf("k=0: %v", c)
	}
	// Bad args panic like gonum (not reach OpenBLAS).
	defer func() {
		if recover() == nil {
			t.Fatal("short c accepted")
		}
	}()
	o.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 1, 1, make([]float64, 2), 1, make([]float64, 2), 2, 0, make([]float64, 3), 2)
}

// TestOpenBLASSelfTestCatchesABI: selfTest must reject a library called with
// a wrong ABI: alpha passed as double, alpha/beta swapped, ColMajor.
func TestOpenBLASSelfTestCatchesABI(t *testing.T) {
	requireOpenBLAS(t)
	h, err := purego.Dlopen("libopenblas.so.0", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skip(err)
	}
	ps, _ := purego.Dlsym(h, "cblas_sgemm")
	pd, _ := purego.Dlsym(h, "cblas_dgemm")
	var good BLAS
	purego.RegisterFunc(&good.sgemm, ps)
	purego.RegisterFunc(&good.dgemm, pd)
	if !good.selfTest() {
		t.Fatal("correct ABI fails the self-test")
	}
	// sgemm with alpha/beta as float64 (promoted).
	var sgemm64 func(order, tA, tB, m, n, k int32, alpha float64, a *float32, lda int32, b *float32, ldb int32, beta float64, c *float32, ldc int32)
	purego.RegisterFunc(&sgemm64, ps)
	bad := good
	bad.sgemm = func(order, tA, tB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32) {
		sgemm64(order, tA, tB, m, n, k, float64(alpha), a, lda, b, ldb, float64(beta), c, ldc)
	}
	if bad.selfTest() {
		t.Error("float32 alpha/beta promoted to double passes the self-test")
	}
	type args struct {
		order, tA, tB int32
		alpha, beta   float64
	}
	for name, wrong := range map[string]func(args) args{
		"alpha/beta swapped": func(a args) args { a.alpha, a.beta = a.beta, a.alpha; return a },
		"ColMajor":           func(a args) args { a.order = 102; return a },
		"tA/tB swapped":      func(a args) args { a.tA, a.tB = a.tB, a.tA; return a },
	} {
		bad = good
		bad.dgemm = func(order, tA, tB, m, n, k int32, alpha float64, a *float64, lda int32, b *float64, ldb int32, beta float64, c *float64, ldc int32) {
			w := wrong(args{order, tA, tB, alpha, beta})
			good.dgemm(w.order, w.tA, w.tB, m, n, k, w.alpha, a, lda, b, ldb, w.beta, c, ldc)
		}
		if bad.selfTest() {
			t.Errorf("%s passes the self-test", name)
		}
	}
}

// TestOpenBLASLoadErrors exercises Load's error paths by pointing it at
// libraries that are missing or not OpenBLAS.
func TestOpenBLASLoadErrors(t *testing.T) {
	saved := libNames
	defer func() { libNames = saved }()
	libNames = []string{"libdoesnotexist.so.0", "libdoesnotexist.so"}
	_, err := Load()
	t.Logf("missing: %v", err)
	if err == nil || !strings.Contains(err.Error(), "no OpenBLAS") {
		t.Errorf("missing: %v", err)
	}
	libNames = []string{"libc.so.6", "libm.so.6"}
	_, err = Load()
	t.Logf("not OpenBLAS: %v", err)
	if err == nil {
		t.Error("libc accepted")
	}
}
