package openblas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	gemmk "github.com/gops-dev/gops/internal/gemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/gorgonia"
)

// TestGoroutinesGemm compares the loaded OpenBLAS's split Sgemm/Dgemm with
// gonum's pure-Go BLAS for every transpose combination, shapes above and
// below gemmSplitMin (partial last blocks, split by rows and by columns),
// leading dimensions above the minimum, operand slices of exactly the
// minimal length, alpha/beta not 0 or 1, and several GOMAXPROCS values.
// It also checks that the result is bitwise independent of GOMAXPROCS.
func TestGoroutinesGemm(t *testing.T) {
	o := requireOpenBLAS(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shapes := [][3]int{ // m, n, k
		{3, 4, 5},      // below the split
		{37, 301, 29},  // by columns, partial last block
		{301, 37, 29},  // by rows, partial last block
		{64, 64, 64},   // exactly 1<<18, square: by columns
		{17, 1000, 17}, // narrow m
		{1000, 17, 17}, // narrow n
		{129, 130, 33}, // n >= m by one
		{2000, 1, 200}, // one column: by rows
		{1, 2000, 200}, // one row: by columns
		{5, 5, 20000},  // large k, small m, n
		{40, 40, 200},  // chunks of 16 rounding past size
	}
	trans := []blas.Transpose{blas.NoTrans, blas.Trans}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range trans {
			for _, tB := range trans {
				// Stored shapes (row-major).
				ar, ac := storedShape(tA, m, k)
				br, bc := storedShape(tB, k, n)
				lda, ldb, ldc := ac+3, bc+1, n+2
				a64 := randSlice(r, lda*(ar-1)+ac)
				b64 := randSlice(r, ldb*(br-1)+bc)
				c64 := randSlice(r, ldc*(m-1)+n)
				want := append([]float64(nil), c64...)
				gonum.Implementation{}.Dgemm(tA, tB, m, n, k, 0.7, a64, lda, b64, ldb, -1.3, want, ldc)
				a32, b32, c32 := to32(a64), to32(b64), to32(c64)
				want32 := append([]float32(nil), c32...)
				gonum.Implementation{}.Sgemm(tA, tB, m, n, k, 0.7, a32, lda, b32, ldb, -1.3, want32, ldc)
				var ref64 []float64
				var ref32 []float32
				for _, procs := range []int{1, 2, 3, 7} {
					runtime.GOMAXPROCS(procs)
					name := fmt.Sprintf("m=%d n=%d k=%d tA=%c tB=%c procs=%d", m, n, k, tA, tB, procs)
					got := append([]float64(nil), c64...)
					o.Dgemm(tA, tB, m, n, k, 0.7, a64, lda, b64, ldb, -1.3, got, ldc)
					if err := closeTo(got, want, ldc, n, 1e-12); err != nil {
						t.Fatalf("Dgemm %s: %v", name, err)
					}
					got32 := append([]float32(nil), c32...)
					o.Sgemm(tA, tB, m, n, k, 0.7, a32, lda, b32, ldb, -1.3, got32, ldc)
					if err := closeTo(to64(got32), to64(want32), ldc, n, 2e-4); err != nil {
						t.Fatalf("Sgemm %s: %v", name, err)
					}
					if ref64 == nil {
						ref64, ref32 = got, got32
						continue
					}
					for i := range got {
						if math.Float64bits(got[i]) != math.Float64bits(ref64[i]) {
							t.Errorf("Dgemm %s: c[%d] = %v, %v with GOMAXPROCS=1", name, i, got[i], ref64[i])
							break
						}
					}
					for i := range got32 {
						if math.Float32bits(got32[i]) != math.Float32bits(ref32[i]) {
							t.Errorf("Sgemm %s: c[%d] = %v, %v with GOMAXPROCS=1", name, i, got32[i], ref32[i])
							break
						}
					}
				}
			}
		}
	}
}

// requireOpenBLAS returns an OpenBLAS from Load, or skips the test when
// there is none; with GOPS_TEST_REQUIRE_OPENBLAS=1 (CI, where it is
// installed) it fails instead. Load does not read GOPS_BLAS, so these tests
// run on OpenBLAS whatever it says.
func requireOpenBLAS(t *testing.T) *BLAS {
	t.Helper()
	testBLASOnce.Do(func() { testBLAS, testBLASErr = Load() })
	if testBLASErr != nil {
		if os.Getenv("GOPS_TEST_REQUIRE_OPENBLAS") == "1" {
			t.Fatalf("GOPS_TEST_REQUIRE_OPENBLAS=1 but Load: %v", testBLASErr)
		}
		t.Skipf("no OpenBLAS: %v", testBLASErr)
	}
	return testBLAS
}

var (
	testBLASOnce sync.Once
	testBLAS     *BLAS
	testBLASErr  error
)

// resetUse forgets what Use chose and gives Gorgonia its default BLAS back,
// as in a fresh process; the test's end does the same.
func resetUse(t *testing.T) {
	t.Helper()
	forget := func() {
		useMu.Lock()
		used, usedDesc, usedBLAS, usedErr = false, "", nil, nil
		useMu.Unlock()
		gorgonia.Use(gonum.Implementation{})
	}
	forget()
	t.Cleanup(forget)
}

// TestLoadLeavesGorgonia: Load installs nothing.
func TestLoadLeavesGorgonia(t *testing.T) {
	resetUse(t)
	o, err := Load()
	if _, ok := gorgonia.WhichBLAS().(gonum.Implementation); !ok {
		t.Fatalf("after Load, gorgonia.WhichBLAS() is %T", gorgonia.WhichBLAS())
	}
	if err != nil {
		t.Logf("Load: %v", err)
		return
	}
	if !strings.HasPrefix(o.Name(), "libopenblas") && !strings.Contains(o.Name(), "/libopenblas") {
		t.Errorf("Name() = %q", o.Name())
	}
	// The core OpenBLAS chose: the one OPENBLAS_CORETYPE names, when set
	// (OpenBLAS reads it as the library loads, case-insensitively).
	t.Logf("core %s", o.Core())
	if o.Core() == "" || o.Core() == "unknown" {
		t.Errorf("Core() = %q: libopenblas has openblas_get_corename", o.Core())
	}
	if want := os.Getenv("OPENBLAS_CORETYPE"); want != "" && !strings.EqualFold(o.Core(), want) {
		t.Errorf("Core() = %q with OPENBLAS_CORETYPE=%s", o.Core(), want)
	}
	if !strings.Contains(o.describe(), "core "+o.Core()) {
		t.Errorf("describe() = %q lacks the core", o.describe())
	}
}

// TestBLAS logs which BLAS UseFromEnv picks in this environment and checks
// it and Describe against it: GOPS_BLAS=gonum is obeyed, OpenBLAS is
// installed in Gorgonia when it loads, a second Use is harmless, and
// Describe notices a gorgonia.Use by the program.
func TestBLAS(t *testing.T) {
	resetUse(t)
	if d := Describe(); d != "gonum (pure Go): openblas.Use was not called" {
		t.Errorf("Describe() before Use = %q", d)
	}
	desc, err := UseFromEnv()
	t.Logf("BLAS: %s (error: %v)", desc, err)
	if d := Describe(); d != desc {
		t.Errorf("Describe() = %q, Use() = %q", d, desc)
	}
	cur := gorgonia.WhichBLAS()
	o, isOpenBLAS := cur.(*BLAS)
	switch {
	case strings.EqualFold(os.Getenv("GOPS_BLAS"), "gonum"):
		if err != nil || isOpenBLAS || desc != "gonum (pure Go): GOPS_BLAS="+os.Getenv("GOPS_BLAS") {
			t.Fatalf("GOPS_BLAS=gonum: Use() = %q, %v; gorgonia.WhichBLAS() is %T", desc, err, cur)
		}
	case err != nil:
		if isOpenBLAS || desc != "gonum (pure Go): "+err.Error() {
			t.Fatalf("Use() = %q, %v; gorgonia.WhichBLAS() is %T", desc, err, cur)
		}
		if os.Getenv("GOPS_TEST_REQUIRE_OPENBLAS") == "1" && !errors.Is(err, errGenericCore) {
			t.Fatalf("GOPS_TEST_REQUIRE_OPENBLAS=1 but Use: %v", err)
		}
	default:
		if !isOpenBLAS || desc != o.describe() {
			t.Fatalf("Use() = %q, nil; gorgonia.WhichBLAS() is %T", desc, cur)
		}
	}
	desc2, err2 := Use()
	if desc2 != desc || err2 != err || gorgonia.WhichBLAS() != cur {
		t.Fatalf("second Use() = %q, %v (first %q, %v); gorgonia.WhichBLAS() %T (first %T)", desc2, err2, desc, err, gorgonia.WhichBLAS(), cur)
	}
	if !isOpenBLAS {
		return
	}
	gorgonia.Use(gonum.Implementation{})
	if d := Describe(); d != "replaced by the program's gorgonia.Use (openblas.Use chose "+desc+")" {
		t.Errorf("after gorgonia.Use(gonum): Describe() = %q", d)
	}
	if d, _ := Use(); d != desc || gorgonia.WhichBLAS() != cur || Describe() != desc {
		t.Errorf("Use after gorgonia.Use(gonum): %q, %T, Describe() %q", d, gorgonia.WhichBLAS(), Describe())
	}
}

// TestUseEnv checks UseFromEnv's reading of GOPS_BLAS, Use's ignoring it,
// and Describe without Use.
func TestUseEnv(t *testing.T) {
	loaded, loadErr := Load()
	for _, env := range []string{"gonum", "GoNum", "atlas", "openblas", "OpenBLAS", "", "Use:gonum"} {
		t.Run("GOPS_BLAS="+env, func(t *testing.T) {
			resetUse(t)
			use := UseFromEnv
			if e, ok := strings.CutPrefix(env, "Use:"); ok {
				use, env = Use, e
			}
			t.Setenv("GOPS_BLAS", env)
			desc, err := use()
			_, isOpenBLAS := gorgonia.WhichBLAS().(*BLAS)
			_, isGonum := gorgonia.WhichBLAS().(gonum.Implementation)
			var want string
			var wantErr bool
			switch strings.ToLower(env) {
			case "gonum":
				if t.Name() != "TestUseEnv/GOPS_BLAS=Use:gonum" {
					want = "gonum (pure Go): GOPS_BLAS=" + env
					break
				}
				fallthrough // Use does not read GOPS_BLAS
			default:
				if loadErr != nil {
					want, wantErr = "gonum (pure Go): "+loadErr.Error(), true
				} else if err := genericCore(loaded, gemmk.Kernel()); err != nil {
					want, wantErr = "gonum (pure Go): "+err.Error(), true
				} else {
					want = loaded.describe()
				}
			case "atlas":
				want, wantErr = "gonum (pure Go): GOPS_BLAS=atlas is neither gonum nor openblas", true
			}
			if desc != want || (err != nil) != wantErr || (err != nil && !strings.HasSuffix(desc, err.Error())) {
				t.Errorf("Use() = %q, %v; want %q, error %t", desc, err, want, wantErr)
			}
			if isOpenBLAS != strings.HasPrefix(want, "openblas (") || isOpenBLAS == isGonum {
				t.Errorf("gorgonia.WhichBLAS() is %T for %q", gorgonia.WhichBLAS(), desc)
			}
			if d := Describe(); d != desc {
				t.Errorf("Describe() = %q, Use() %q", d, desc)
			}
			if !isOpenBLAS {
				gorgonia.Use(otherBLAS{})
				if d := Describe(); d != "replaced by the program's gorgonia.Use (openblas.Use chose "+desc+")" {
					t.Errorf("after gorgonia.Use(other): Describe() = %q", d)
				}
			}
		})
	}
	t.Run("no Use", func(t *testing.T) {
		resetUse(t)
		gorgonia.Use(otherBLAS{})
		if d, want := Describe(), "openblas.otherBLAS (the program's gorgonia.Use; openblas.Use was not called)"; d != want {
			t.Errorf("Describe() = %q, want %q", d, want)
		}
		if loadErr != nil {
			return
		}
		gorgonia.Use(loaded)
		if d := Describe(); d != loaded.describe() {
			t.Errorf("Describe() after gorgonia.Use(Load()) = %q", d)
		}
	})
}

// otherBLAS is a BLAS that is neither gonum's nor this package's.
type otherBLAS struct{ gonum.Implementation }

// TestGemmArgsOK checks the argument checks that keep OpenBLAS inside the
// slices: each bad argument falls back to gonum (which panics).
func TestGemmArgsOK(t *testing.T) {
	N, T := blas.NoTrans, blas.Trans
	ok := func(tA, tB blas.Transpose, m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
		return gemmArgsOK(tA, tB, m, n, k, la, lda, lb, ldb, lc, ldc)
	}
	// A 2×3, B 3×4, C 2×4, minimal lengths.
	if !ok(N, N, 2, 4, 3, 6, 3, 12, 4, 8, 4) || !ok(T, T, 2, 4, 3, 6, 2, 12, 3, 8, 4) {
		t.Fatal("valid arguments rejected")
	}
	for name, good := range map[string]bool{
		"short a":        ok(N, N, 2, 4, 3, 5, 3, 12, 4, 8, 4),
		"short b":        ok(N, N, 2, 4, 3, 6, 3, 11, 4, 8, 4),
		"short c":        ok(N, N, 2, 4, 3, 6, 3, 12, 4, 7, 4),
		"lda < cols":     ok(N, N, 2, 4, 3, 6, 2, 12, 4, 8, 4),
		"ldb < cols (T)": ok(N, T, 2, 4, 3, 6, 3, 12, 2, 8, 4),
		"ldc < n":        ok(N, N, 2, 4, 3, 6, 3, 12, 4, 8, 3),
		"negative m":     ok(N, N, -1, 4, 3, 6, 3, 12, 4, 8, 4),
		"bad transpose":  ok('x', N, 2, 4, 3, 6, 3, 12, 4, 8, 4),
	} {
		if good {
			t.Errorf("%s: accepted", name)
		}
	}
	if math.MaxInt > math.MaxInt32 { // sizes past int32 exist only with 64-bit int
		big := int64(1) << 31
		for name, good := range map[string]bool{
			"ld past int32":   ok(N, N, 2, 4, 3, int(big<<9), int(big<<1), 12, 4, 8, 4),
			"size past int32": ok(N, N, int(big), 1, 1, int(big), 1, 1, 1, int(big), 1),
		} {
			if good {
				t.Errorf("%s: accepted", name)
			}
		}
	}
}

// TestSplitGemmBlocks checks that splitGemm's blocks partition C exactly
// once and that each block's operand offsets are where its rows/columns
// start.
func TestSplitGemmBlocks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 3, 5, 64} {
		runtime.GOMAXPROCS(procs)
		for _, s := range [][3]int{{37, 301, 29}, {301, 37, 29}, {64, 64, 64}, {1, 1 << 18, 1}, {1 << 18, 1, 1}} {
			m, n, k := s[0], s[1], s[2]
			for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
					lda, ldb, ldc := 1000003, 1000033, 1000037
					seen := make([]int32, m*n)
					done := make(chan [7]int, 1<<10)
					splitGemm(m, n, k, tA, tB, lda, ldb, ldc, func(i0, mm, j0, nn, ao, bo, co int) {
						done <- [7]int{i0, mm, j0, nn, ao, bo, co}
					})
					close(done)
					for b := range done {
						i0, mm, j0, nn, ao, bo, co := b[0], b[1], b[2], b[3], b[4], b[5], b[6]
						wantA := i0 * lda
						if tA != blas.NoTrans {
							wantA = i0
						}
						wantB := j0
						if tB != blas.NoTrans {
							wantB = j0 * ldb
						}
						if ao != wantA || bo != wantB || co != i0*ldc+j0 {
							t.Fatalf("%v tA=%c tB=%c block %v: offsets want %d %d %d", s, tA, tB, b, wantA, wantB, i0*ldc+j0)
						}
						for i := i0; i < i0+mm; i++ {
							for j := j0; j < j0+nn; j++ {
								seen[i*n+j]++
							}
						}
					}
					for i, v := range seen {
						if v != 1 {
							t.Fatalf("%v procs=%d: element %d covered %d times", s, procs, i, v)
						}
					}
				}
			}
		}
	}
}

func randSlice(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

func to32(s []float64) []float32 {
	o := make([]float32, len(s))
	for i, v := range s {
		o[i] = float32(v)
	}
	return o
}

func to64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}

// closeTo compares got and want (m×n row-major with stride ldc, the gaps
// between rows included: they must be untouched and equal).
func closeTo(got, want []float64, ldc, n int, tol float64) error {
	for i := range got {
		if d := math.Abs(got[i] - want[i]); d > tol*(1+math.Abs(want[i])) {
			return fmt.Errorf("c[%d] (row %d, col %d) = %v, want %v", i, i/ldc, i%ldc, got[i], want[i])
		}
	}
	return nil
}

// storedShape is the rows and columns, as stored (row-major), of an
// operand that is rows×cols after the transpose t.
func storedShape(t blas.Transpose, rows, cols int) (int, int) {
	if t == blas.NoTrans {
		return rows, cols
	}
	return cols, rows
}

// TestGenericCore: Use refuses OpenBLAS's generic kernels where gops' own
// product has AVX2/FMA or AVX-512 ones, and only there.
func TestGenericCore(t *testing.T) {
	for _, c := range []struct {
		core, kernel string
		refused      bool
	}{
		{"Prescott", "avx512", true}, {"prescott", "avx2", true}, {"Nehalem", "avx512", true}, {"Sandybridge", "avx2", true},
		{"Prescott", "go", false}, {"Prescott", "neon", false}, {"SkylakeX", "avx512", false}, {"Haswell", "avx512", false},
		{"Zen", "avx2", false}, {"COOPERLAKE", "avx512", false}, {"unknown", "avx512", false},
	} {
		err := genericCore(&BLAS{name: "libopenblas.so.0", core: c.core}, c.kernel)
		if (err != nil) != c.refused || err != nil && (!errors.Is(err, errGenericCore) || !strings.Contains(err.Error(), "core "+c.core) ||
			!strings.Contains(err.Error(), "OPENBLAS_CORETYPE") || !strings.Contains(err.Error(), c.kernel+" kernels")) {
			t.Errorf("core %s, kernel %s: %v", c.core, c.kernel, err)
		}
	}
}

// TestUseRefusesPrescott runs Use in a child process whose OpenBLAS is
// told OPENBLAS_CORETYPE=Prescott (read when the library loads): refused
// where gops' product has AVX2/FMA or AVX-512 kernels, in use elsewhere.
func TestUseRefusesPrescott(t *testing.T) {
	if os.Getenv("GOPS_TEST_CHILD") == "prescott" {
		desc, err := Use()
		fmt.Printf("child: %s\n", desc)
		_, onOpenBLAS := gorgonia.WhichBLAS().(*BLAS)
		if k := gemmk.Kernel(); (k == "avx512" || k == "avx2") && (!errors.Is(err, errGenericCore) || onOpenBLAS) {
			t.Fatalf("kernel %s: Use() = %q, %v; gorgonia.WhichBLAS() %T", k, desc, err, gorgonia.WhichBLAS())
		}
		return
	}
	requireOpenBLAS(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestUseRefusesPrescott$", "-test.v")
	cmd.Env = append(os.Environ(), "GOPS_TEST_CHILD=prescott", "OPENBLAS_CORETYPE=Prescott")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "child: ") {
		t.Fatalf("child: %v", err)
	}
	if k := gemmk.Kernel(); (k == "avx512" || k == "avx2") && !strings.Contains(string(out), "refused: its generic kernels (core Prescott)") {
		t.Fatalf("kernel %s: the child's Use did not refuse Prescott", k)
	}
}
