//go:build linux

package cpu

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

var maxPoolIters = flag.Int("maxpool.iters", 6000, "random geometries of TestMaxPoolArgmaxGuarded")

// TestMaxPoolArgmaxGuarded: MaxPoolArgmax (fast path, AVX2 on and
// off, GOMAXPROCS 1, 2, 3, 8) equals torch's scan over random max_pool2d
// and adaptive geometries (strides up to 17, tiny planes), with the input
// placed against guard pages (a read past the slice faults).
func TestMaxPoolArgmaxGuarded(t *testing.T) {
	avx2 := maxPoolAVX2
	procs := runtime.GOMAXPROCS(0)
	defer func() { maxPoolAVX2 = avx2; runtime.GOMAXPROCS(procs) }()
	r := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < *maxPoolIters; iter++ {
		var g *Pool2dGeom
		var c maxPoolCase
		if r.IntN(5) == 0 {
			h, w := 1+r.IntN(12), 1+r.IntN(70)
			g = &Pool2dGeom{Planes: 1 + r.IntN(5), H: h, W: w, Rows: NewAdaptiveAxis(h, 1+r.IntN(2*h)), Cols: NewAdaptiveAxis(w, 1+r.IntN(2*w))}
		} else {
			c = maxPoolCase{planes: 1 + r.IntN(5), h: 1 + r.IntN(10), w: 1 + r.IntN([]int{9, 40, 300}[r.IntN(3)]),
				kh: 1 + r.IntN(4), kw: 1 + r.IntN([]int{3, 6, 20}[r.IntN(3)]), sh: 1 + r.IntN(4), sw: []int{1, 2, 1 + r.IntN(18), 16, 17}[r.IntN(5)],
				dh: 1 + r.IntN(3), dw: 1 + r.IntN(3), ceil: r.IntN(2) == 0}
			c.ph, c.pw = r.IntN(c.kh/2+1), r.IntN(c.kw/2+1)
			if iter%3 == 0 {
				c.ph, c.pw = r.IntN(c.kh*c.dh+1), r.IntN(c.kw*c.dw+1) // windows wholly in the padding
			}
			if PoolOutSize(c.h, c.kh, c.sh, c.ph, c.dh, c.ceil) <= 0 || PoolOutSize(c.w, c.kw, c.sw, c.pw, c.dw, c.ceil) <= 0 {
				continue
			}
			g = c.geom()
		}
		n := g.Planes * g.H * g.W
		tail := iter%2 == 0
		x, free := guarded[float32](t, n, tail)
		nan := r.IntN(4) == 0
		maxPoolData(r, x, nan)
		want := maxPoolScan(g, x)
		for _, on := range []bool{true, false} {
			if on && !avx2 {
				continue
			}
			maxPoolAVX2 = on
			for _, p := range []int{1, 2, 3, 8} {
				runtime.GOMAXPROCS(p)
				got := make([]int, len(want))
				for i := range got {
					got[i] = 12345
				}
				MaxPoolArgmax(g, x, got)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%+v adaptive=%v avx2=%v procs=%d tail=%v: output %d = %d, want %d", c, c.h == 0, on, p, tail, i, got[i], want[i])
					}
				}
			}
		}
		x64, free64 := guarded[float64](t, n, tail)
		for i, v := range x {
			x64[i] = float64(v)
		}
		got := make([]int, len(want))
		MaxPoolArgmax(g, x64, got)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("float64 %+v: output %d = %d, want %d", c, i, got[i], want[i])
			}
		}
		free()
		free64()
	}
}

// TestMaxPoolArgmaxEmptyRows: a geometry with no input rows (H = 0; the
// windows of every output row empty) must give -1 everywhere, as the scan
// does. maxPoolFast takes it (the column axis is regular) and, with two
// planes or more in a worker's range, prefetches &x[(p+1)*hw] on an empty
// x: an index-out-of-range panic (maxpool.go:228).
func TestMaxPoolArgmaxEmptyRows(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, planes := range []int{1, 2, 4} {
		g := &Pool2dGeom{Planes: planes, H: 0, W: 8, Rows: NewAdaptiveAxis(0, 2), Cols: NewPoolAxis(8, 4, 2, 2, 0, 1)}
		t.Run(fmt.Sprint("planes=", planes), func(t *testing.T) {
			for _, dt := range []string{"float32", "float64"} {
				got := make([]int, planes*2*4)
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s: panic: %v", dt, r)
						}
					}()
					if dt == "float32" {
						MaxPoolArgmax(g, []float32{}, got)
					} else {
						MaxPoolArgmax(g, []float64{}, got)
					}
					for i, v := range got {
						if v != -1 {
							t.Errorf("%s: output %d = %d, want -1", dt, i, v)
						}
					}
				}()
			}
		})
	}
	_ = math.Inf
}
