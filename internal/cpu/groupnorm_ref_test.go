package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/internal/vmath"
)

// The GroupNorm kernels before their passes were fused (rowStats, then
// vmath.Axpb over the row and over each plane, per-call scratch rows):
// the fused kernels must give the same bits, and so must the gradients
// computed from GroupNormStats where the plain kernels are fused.

// kernel is a kernel under test: it writes out from the inputs in.
type kernel[T Float] func(out []T, in [][]T) error

// elems is the number of elements of a tensor of shape s.
func elems(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// affineParams are the weight and bias among in (after x, each present
// or not), 1 and 0 where absent.
func affineParams[T Float](c int, in [][]T, hasW, hasB bool) (w, b []T) {
	w, b = make([]T, c), make([]T, c)
	for i := range w {
		w[i] = 1
	}
	next := 1
	if hasW {
		copy(w, in[next])
		next++
	}
	if hasB {
		copy(b, in[next])
	}
	return w, b
}

// The kernels under test, with the inputs of nn's ops.

func groupNormAffineKernel[T Float](rg RowGeom, cg ChanGeom, hasW, hasB bool) kernel[T] {
	return func(out []T, in [][]T) error {
		w, b := affineParams(cg.C, in, hasW, hasB)
		GroupNormAffine(rg, cg, out, in[0], w, b)
		return nil
	}
}

func groupNormGradXKernel[T Float](rg RowGeom, cg ChanGeom) kernel[T] {
	return func(out []T, in [][]T) error { GroupNormGradX(rg, cg, out, in[0], in[1], in[2]); return nil }
}

func groupNormGradXStatsKernel[T Float](rg RowGeom, cg ChanGeom) kernel[T] {
	return func(out []T, in [][]T) error {
		GroupNormGradXStats(rg, cg, out, in[0], in[1], in[2], in[3])
		return nil
	}
}

func groupNormGradWKernel[T Float](rg RowGeom, cg ChanGeom) kernel[T] {
	return func(out []T, in [][]T) error { GroupNormGradW(rg, cg, out, in[0], in[1]); return nil }
}

func groupNormStatsKernel[T Float](rg RowGeom, cg ChanGeom) kernel[T] {
	return func(out []T, in [][]T) error { GroupNormStats(rg, cg, out, in[0], in[1]); return nil }
}

func groupNormStatsTotal[T Float](rg RowGeom, cg ChanGeom, which int) kernel[T] {
	return func(out []T, in [][]T) error { GroupNormStatsTotal(rg, cg, which, out, in[len(in)-1]); return nil }
}

func rowNormKernel[T Float](g RowGeom) kernel[T] {
	return func(out []T, in [][]T) error { RowNorm(g, out, in[0]); return nil }
}

func rowInvStdKernel[T Float](g RowGeom) kernel[T] {
	return func(out []T, in [][]T) error { RowInvStd(g, out, in[0]); return nil }
}

func channelReduceKernel[T Float](g ChanGeom, dot bool) kernel[T] {
	return func(out []T, in [][]T) error {
		if dot {
			ChannelDot(g, out, in[0], in[1])
		} else {
			ChannelTotal(g, out, in[0])
		}
		return nil
	}
}

// refRowNormKernel is the unfused rowNormKernel.
func refRowNormKernel[T Float](g RowGeom) kernel[T] {
	return func(out []T, in [][]T) error {
		for i := 0; i < g.Rows; i++ {
			y := out[i*g.N:][:g.N]
			r := rowStats(y, in[0][i*g.N:][:g.N], g.Eps)
			vmath.Axpb(y, y, T(r), 0)
		}
		return nil
	}
}

// refRowInvStdKernel is the unfused rowInvStdKernel.
func refRowInvStdKernel[T Float](g RowGeom) kernel[T] {
	return func(out []T, in [][]T) error {
		d := make([]T, g.N)
		for i := 0; i < g.Rows; i++ {
			out[i] = T(rowStats(d, in[0][i*g.N:][:g.N], g.Eps))
		}
		return nil
	}
}

// refChannelReduceKernel is channelReduceKernel before it read sample
// by sample.
func refChannelReduceKernel[T Float](g ChanGeom, dot bool) kernel[T] {
	return func(out []T, in [][]T) error {
		u := in[0]
		var y []T
		if dot {
			y = in[1]
		}
		if g.Inner > 1 {
			parallelIf(g.C, len(u), func(lo, hi int) {
				for ci := lo; ci < hi; ci++ {
					var acc float64
					for o := 0; o < g.Outer; o++ {
						at := (o*g.C + ci) * g.Inner
						if dot {
							acc += vmath.Dot(u[at:at+g.Inner], y[at:at+g.Inner])
						} else {
							acc += vmath.Sum(u[at : at+g.Inner])
						}
					}
					out[ci] = T(acc)
				}
			})
			return nil
		}
		parallelIf(g.C, len(u), func(lo, hi int) {
			acc := make([]float64, hi-lo)
			for o := 0; o < g.Outer; o++ {
				row := u[o*g.C+lo : o*g.C+hi]
				if dot {
					yr := y[o*g.C+lo : o*g.C+hi]
					for k, v := range row {
						acc[k] += float64(v) * float64(yr[k])
					}
					continue
				}
				for k, v := range row {
					acc[k] += float64(v)
				}
			}
			for k, v := range acc {
				out[lo+k] = T(v)
			}
		})
		return nil
	}
}

// refGroupNormAffineKernel is the unfused groupNormAffineKernel.
func refGroupNormAffineKernel[T Float](rg RowGeom, cg ChanGeom, hasW, hasB bool) kernel[T] {
	return func(out []T, in [][]T) error {
		w, b := affineParams(cg.C, in, hasW, hasB)
		perRow := rg.N / cg.Inner // channels in a row
		eachRow(rg.Rows, rg.N, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y := out[i*rg.N:][:rg.N]
				r := rowStats(y, in[0][i*rg.N:][:rg.N], rg.Eps)
				vmath.Axpb(y, y, T(r), 0)
				c0 := (i * perRow) % cg.C
				for j := 0; j < perRow; j++ {
					ci := c0 + j
					p := y[j*cg.Inner:][:cg.Inner]
					if cg.Inner > 1 {
						vmath.Axpb(p, p, w[ci], b[ci]) // as channelAffineKernel's planes
						continue
					}
					p[0] = p[0]*w[ci] + b[ci] // as its rows of C
				}
			}
		})
		return nil
	}
}

// refGroupNormGradXKernel is the unfused groupNormGradXKernel.
func refGroupNormGradXKernel[T Float](rg RowGeom, cg ChanGeom) kernel[T] {
	return func(out []T, in [][]T) error {
		perRow, n, w := rg.N/cg.Inner, float64(rg.N), in[2]
		eachRow(rg.Rows, rg.N, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gr, u := out[i*rg.N:][:rg.N], in[1][i*rg.N:][:rg.N]
				r := rowStats(gr, in[0][i*rg.N:][:rg.N], rg.Eps)
				vmath.Axpb(gr, gr, T(r), 0) // y
				c0 := (i * perRow) % cg.C
				var su, suy float64
				for j := 0; j < perRow; j++ {
					up, yp := u[j*cg.Inner:][:cg.Inner], gr[j*cg.Inner:][:cg.Inner]
					su += float64(w[c0+j]) * vmath.Sum(up)
					suy += float64(w[c0+j]) * vmath.Dot(up, yp)
				}
				vmath.Axpb(gr, gr, T(suy/n), T(su/n)) // y·mean(uw·y) + mean uw
				for j := 0; j < perRow; j++ {
					p := gr[j*cg.Inner:][:cg.Inner]
					vmath.Axpb(p, p, T(-r), 0)
					vmath.SubMul(p, p, u[j*cg.Inner:][:cg.Inner], T(-r*float64(w[c0+j])))
				}
			}
		})
		return nil
	}
}

// refGroupNormGradWKernel is the unfused groupNormGradWKernel.
func refGroupNormGradWKernel[T Float](rg RowGeom, cg ChanGeom) kernel[T] {
	return func(out []T, in [][]T) error {
		u, x := in[0], in[1]
		mu, r := make([]T, rg.Rows), make([]float64, rg.Rows)
		eachRow(rg.Rows, rg.N, func(lo, hi int) {
			d := make([]T, rg.N)
			for i := lo; i < hi; i++ {
				row := x[i*rg.N:][:rg.N]
				mu[i] = T(vmath.Sum(row) / float64(rg.N)) // as rowStats
				r[i] = rowStats(d, row, rg.Eps)
			}
		})
		perRow := rg.N / cg.Inner
		parallelIf(cg.C, len(u), func(lo, hi int) {
			d := make([]T, cg.Inner)
			for ci := lo; ci < hi; ci++ {
				var acc float64
				for o := 0; o < cg.Outer; o++ {
					i := o*(cg.C/perRow) + ci/perRow // the row (sample o, group of ci)
					at := (o*cg.C + ci) * cg.Inner
					vmath.Axpb(d, x[at:at+cg.Inner], 1, -mu[i])
					acc += r[i] * vmath.Dot(u[at:at+cg.Inner], d)
				}
				out[ci] = T(acc)
			}
		})
		return nil
	}
}

// testGroupNormFused runs the fused and the reference kernels on random
// inputs of several geometries and compares their results bitwise.
func testGroupNormFused[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name   string
		shape  []int
		groups int
	}{
		{"NC", []int{3, 12}, 4},
		{"tiny rows", []int{2, 4, 1, 2}, 4},
		{"odd planes", []int{2, 6, 7, 7}, 3},
		{"odd group size", []int{2, 9, 5, 3}, 3},
		{"planes of 8", []int{2, 6, 2, 4}, 2},
		{"planes of 4", []int{3, 4, 2, 2}, 2},
		{"one group", []int{2, 5, 4, 6}, 1},
		{"one channel per group", []int{2, 8, 3, 8}, 8},
		{"rank 3", []int{2, 8, 40}, 4},
		{"parallel", []int{4, 32, 17, 24}, 8},
		{"parallel odd", []int{3, 30, 13, 11}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.shape
			n, c := s[0], s[1]
			rows := n * tc.groups
			rg := RowGeom{rows, elems(s) / rows, 1e-5}
			cg := ChanGeom{n, c, elems(s) / (n * c)}
			data := func(size int, scale float64) []T {
				d := make([]T, size)
				for i := range d {
					d[i] = T(math.Ldexp(r.NormFloat64(), r.IntN(12)-6) * scale)
				}
				return d
			}
			x, u, w, b := data(elems(s), 1), data(elems(s), 1), data(c, 1), data(c, 1)
			for i := range x { // a per-row offset, so that x − μ rounds
				x[i] += T(i / rg.N)
			}
			run := func(k kernel[T], size int, in ...[]T) []T {
				out := make([]T, size)
				for i := range out {
					out[i] = T(math.NaN()) // overwritten
				}
				if err := k(out, in); err != nil {
					t.Fatal(err)
				}
				return out
			}
			for _, p := range []struct{ hasW, hasB bool }{{true, true}, {true, false}, {false, true}} {
				var in [][]T
				in = append(in, x)
				if p.hasW {
					in = append(in, w)
				}
				if p.hasB {
					in = append(in, b)
				}
				got := run(groupNormAffineKernel[T](rg, cg, p.hasW, p.hasB), len(x), in...)
				want := run(refGroupNormAffineKernel[T](rg, cg, p.hasW, p.hasB), len(x), in...)
				sameBitsStrict(t, fmt.Sprintf("GroupNormAffine w %v b %v", p.hasW, p.hasB), got, want)
			}
			sameBitsStrict(t, "GroupNormGradX", run(groupNormGradXKernel[T](rg, cg), len(x), x, u, w),
				run(refGroupNormGradXKernel[T](rg, cg), len(x), x, u, w))
			sameBitsStrict(t, "RowNorm", run(rowNormKernel[T](rg), len(x), x), run(refRowNormKernel[T](rg), len(x), x))
			sameBitsStrict(t, "RowInvStd", run(rowInvStdKernel[T](rg), rows, x), run(refRowInvStdKernel[T](rg), rows, x))
			sameBitsStrict(t, "ChannelDot", run(channelReduceKernel[T](cg, true), c, u, x), run(refChannelReduceKernel[T](cg, true), c, u, x))
			sameBitsStrict(t, "ChannelTotal", run(channelReduceKernel[T](cg, false), c, u), run(refChannelReduceKernel[T](cg, false), c, u))
			sameBitsStrict(t, "GroupNormGradW", run(groupNormGradWKernel[T](rg, cg), c, u, x),
				run(refGroupNormGradWKernel[T](rg, cg), c, u, x))

			// From the statistics: ∂x the bits of the reference GradX;
			// where the vector loops run and split planes as rows (not
			// with the Go loops: purego, arm64), ∂w and ∂b those
			// of ChannelDot(u, RowNorm(x)) and ChannelTotal(u), elsewhere
			// close to them (the statistics sum u·y, y rounded to T,
			// GroupNormGradW sums r·u·(x − μ)).
			stats := run(groupNormStatsKernel[T](rg, cg), GroupNormStatsSize(rg, cg), u, x)
			sameBitsStrict(t, "GroupNormGradX from the statistics", run(groupNormGradXStatsKernel[T](rg, cg), len(x), x, u, w, stats),
				run(refGroupNormGradXKernel[T](rg, cg), len(x), x, u, w))
			gotW := run(groupNormStatsTotal[T](rg, cg, 1), c, u, x, stats)
			gotB := run(groupNormStatsTotal[T](rg, cg, 0), c, u, stats)
			y := run(refRowNormKernel[T](rg), len(x), x)
			wantW, wantB := run(refChannelReduceKernel[T](cg, true), c, u, y), run(refChannelReduceKernel[T](cg, false), c, u)
			if vmath.VectorLoops() && vmath.VectorWhole[T](cg.Inner) {
				sameBitsStrict(t, "GroupNormGradW from the statistics", gotW, wantW)
				sameBitsStrict(t, "GroupNormGradB from the statistics", gotB, wantB)
			} else {
				closeTo(t, "GroupNormGradW from the statistics", gotW, run(refGroupNormGradWKernel[T](rg, cg), c, u, x))
				closeTo(t, "GroupNormGradB from the statistics", gotB, wantB)
			}
		})
	}
}

// sameBitsStrict fails t where got and want differ in any bit, NaN
// payloads included (poolavg_test.go's sameBits lets NaNs pass).
func sameBitsStrict[T Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
			t.Errorf("%s: [%d] = %v, reference %v", what, i, got[i], want[i])
			return
		}
	}
}

// closeTo fails t where got and want differ by more than a few roundings
// of T, relative to the larger of |want| and the mean |want|.
func closeTo[T Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	eps := 1e-14
	if _, ok := any(got[0]).(float32); ok {
		eps = 1e-5
	}
	var scale float64
	for _, v := range want {
		scale += math.Abs(float64(v)) / float64(len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= eps*max(math.Abs(float64(want[i])), scale)) {
			t.Errorf("%s: [%d] = %v, reference %v", what, i, got[i], want[i])
			return
		}
	}
}

func TestGroupNormFusedKernels(t *testing.T) {
	t.Run("float32", testGroupNormFused[float32])
	t.Run("float64", testGroupNormFused[float64])
}

// BenchmarkGroupNormKernels times the fused and the reference kernels
// alone (backward: all three gradients from the statistics, or the plain
// GroupNormGradX, GroupNormGradW and ChannelTotal) on BenchmarkGroupNorm's
// [8, 256, 50, 68] in 32 groups, float32, results written into the same
// memory every run (as under reuse).
func BenchmarkGroupNormKernels(b *testing.B) {
	s := []int{8, 256, 50, 68}
	rg := RowGeom{8 * 32, elems(s) / (8 * 32), 1e-5}
	cg := ChanGeom{8, 256, 50 * 68}
	r := rand.New(rand.NewPCG(1, 2))
	data := func(size int) []float32 {
		d := make([]float32, size)
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
		return d
	}
	x, u, w, bias := data(elems(s)), data(elems(s)), data(256), data(256)
	out, outW := data(elems(s)), data(256)
	// The backward with ∂w and ∂b: from the statistics ("fused"), or
	// GroupNormGradX, GroupNormGradW and ChannelTotal ("ref").
	stats, outB := data(GroupNormStatsSize(rg, cg)), data(256)
	backward := func(out []float32, in [][]float32) error {
		_ = groupNormStatsKernel[float32](rg, cg)(stats, [][]float32{u, x})
		_ = groupNormStatsTotal[float32](rg, cg, 1)(outW, [][]float32{u, x, stats})
		_ = groupNormStatsTotal[float32](rg, cg, 0)(outB, [][]float32{u, stats})
		return groupNormGradXStatsKernel[float32](rg, cg)(out, [][]float32{x, u, w, stats})
	}
	plainBackward := func(out []float32, in [][]float32) error {
		_ = groupNormGradWKernel[float32](rg, cg)(outW, [][]float32{u, x})
		_ = channelReduceKernel[float32](cg, false)(outB, [][]float32{u})
		return groupNormGradXKernel[float32](rg, cg)(out, [][]float32{x, u, w})
	}
	for _, k := range []struct {
		name  string
		fused kernel[float32]
		ref   kernel[float32]
		out   []float32
		in    [][]float32
	}{
		{"forward", groupNormAffineKernel[float32](rg, cg, true, true), refGroupNormAffineKernel[float32](rg, cg, true, true), out, [][]float32{x, w, bias}},
		{"gradX", groupNormGradXKernel[float32](rg, cg), refGroupNormGradXKernel[float32](rg, cg), out, [][]float32{x, u, w}},
		{"gradW", groupNormGradWKernel[float32](rg, cg), refGroupNormGradWKernel[float32](rg, cg), outW, [][]float32{u, x}},
		{"backward", backward, plainBackward, out, nil},
	} {
		for _, v := range []struct {
			name string
			f    kernel[float32]
		}{{"fused", k.fused}, {"ref", k.ref}} {
			b.Run(k.name+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := v.f(k.out, k.in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkChannelTotal times ChannelTotal's kernel on [8, 256, 50, 68],
// float32, sample by sample and channel by channel (the reference).
func BenchmarkChannelTotal(b *testing.B) {
	cg := ChanGeom{8, 256, 50 * 68}
	u := make([]float32, 8*256*50*68)
	for i := range u {
		u[i] = float32(i%7) - 3
	}
	out := make([]float32, 256)
	in := [][]float32{u}
	for _, v := range []struct {
		name string
		k    kernel[float32]
	}{{"samples", channelReduceKernel[float32](cg, false)}, {"ref", refChannelReduceKernel[float32](cg, false)}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if err := v.k(out, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
