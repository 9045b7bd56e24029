package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/vmath"
	"gorgonia.org/tensor"
)

// The GroupNorm kernels before their passes were fused (rowStats, then
// vmath.Axpb over the row and over each plane, per-call scratch rows):
// the fused kernels must give the same bits, and so must the gradients
// computed from GroupNormStats where the plain kernels are fused.

// refRowNormKernel is the unfused rowNormKernel.
func refRowNormKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		for i := 0; i < g.rows; i++ {
			y := out.Data[i*g.n:][:g.n]
			r := rowStats(y, in[0].Data[i*g.n:][:g.n], g.eps)
			vmath.Axpb(y, y, T(r), 0)
		}
		return nil
	}
}

// refRowInvStdKernel is the unfused rowInvStdKernel.
func refRowInvStdKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		d := make([]T, g.n)
		for i := 0; i < g.rows; i++ {
			out.Data[i] = T(rowStats(d, in[0].Data[i*g.n:][:g.n], g.eps))
		}
		return nil
	}
}

// refChannelReduceKernel is channelReduceKernel before it read sample
// by sample.
func refChannelReduceKernel[T ad.Float](g chanGeom, dot bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		u := in[0].Data
		var y []T
		if dot {
			y = in[1].Data
		}
		if g.inner > 1 {
			parallelIf(g.c, len(u), func(lo, hi int) {
				for ci := lo; ci < hi; ci++ {
					var acc float64
					for o := 0; o < g.outer; o++ {
						at := (o*g.c + ci) * g.inner
						if dot {
							acc += vmath.Dot(u[at:at+g.inner], y[at:at+g.inner])
						} else {
							acc += vmath.Sum(u[at : at+g.inner])
						}
					}
					out.Data[ci] = T(acc)
				}
			})
			return nil
		}
		parallelIf(g.c, len(u), func(lo, hi int) {
			acc := make([]float64, hi-lo)
			for o := 0; o < g.outer; o++ {
				row := u[o*g.c+lo : o*g.c+hi]
				if dot {
					yr := y[o*g.c+lo : o*g.c+hi]
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
				out.Data[lo+k] = T(v)
			}
		})
		return nil
	}
}

// refGroupNormAffineKernel is the unfused groupNormAffineKernel.
func refGroupNormAffineKernel[T ad.Float](rg rowGeom, cg chanGeom, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		w, b := affineParams(cg.c, in, hasW, hasB)
		perRow := rg.n / cg.inner // channels in a row
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y := out.Data[i*rg.n:][:rg.n]
				r := rowStats(y, in[0].Data[i*rg.n:][:rg.n], rg.eps)
				vmath.Axpb(y, y, T(r), 0)
				c0 := (i * perRow) % cg.c
				for j := 0; j < perRow; j++ {
					ci := c0 + j
					p := y[j*cg.inner:][:cg.inner]
					if cg.inner > 1 {
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
func refGroupNormGradXKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		perRow, n, w := rg.n/cg.inner, float64(rg.n), in[2].Data
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gr, u := out.Data[i*rg.n:][:rg.n], in[1].Data[i*rg.n:][:rg.n]
				r := rowStats(gr, in[0].Data[i*rg.n:][:rg.n], rg.eps)
				vmath.Axpb(gr, gr, T(r), 0) // y
				c0 := (i * perRow) % cg.c
				var su, suy float64
				for j := 0; j < perRow; j++ {
					up, yp := u[j*cg.inner:][:cg.inner], gr[j*cg.inner:][:cg.inner]
					su += float64(w[c0+j]) * vmath.Sum(up)
					suy += float64(w[c0+j]) * vmath.Dot(up, yp)
				}
				vmath.Axpb(gr, gr, T(suy/n), T(su/n)) // y·mean(uw·y) + mean uw
				for j := 0; j < perRow; j++ {
					p := gr[j*cg.inner:][:cg.inner]
					vmath.Axpb(p, p, T(-r), 0)
					vmath.SubMul(p, p, u[j*cg.inner:][:cg.inner], T(-r*float64(w[c0+j])))
				}
			}
		})
		return nil
	}
}

// refGroupNormGradWKernel is the unfused groupNormGradWKernel.
func refGroupNormGradWKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		u, x := in[0].Data, in[1].Data
		mu, r := make([]T, rg.rows), make([]float64, rg.rows)
		eachRow(rg, func(lo, hi int) {
			d := make([]T, rg.n)
			for i := lo; i < hi; i++ {
				row := x[i*rg.n:][:rg.n]
				mu[i] = T(vmath.Sum(row) / float64(rg.n)) // as rowStats
				r[i] = rowStats(d, row, rg.eps)
			}
		})
		perRow := rg.n / cg.inner
		parallelIf(cg.c, len(u), func(lo, hi int) {
			d := make([]T, cg.inner)
			for ci := lo; ci < hi; ci++ {
				var acc float64
				for o := 0; o < cg.outer; o++ {
					i := o*(cg.c/perRow) + ci/perRow // the row (sample o, group of ci)
					at := (o*cg.c + ci) * cg.inner
					vmath.Axpb(d, x[at:at+cg.inner], 1, -mu[i])
					acc += r[i] * vmath.Dot(u[at:at+cg.inner], d)
				}
				out.Data[ci] = T(acc)
			}
		})
		return nil
	}
}

// testGroupNormFused runs the fused and the reference kernels on random
// inputs of several geometries and compares their results bitwise.
func testGroupNormFused[T ad.Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name   string
		shape  tensor.Shape
		groups int
	}{
		{"NC", tensor.Shape{3, 12}, 4},
		{"tiny rows", tensor.Shape{2, 4, 1, 2}, 4},
		{"odd planes", tensor.Shape{2, 6, 7, 7}, 3},
		{"odd group size", tensor.Shape{2, 9, 5, 3}, 3},
		{"planes of 8", tensor.Shape{2, 6, 2, 4}, 2},
		{"planes of 4", tensor.Shape{3, 4, 2, 2}, 2},
		{"one group", tensor.Shape{2, 5, 4, 6}, 1},
		{"one channel per group", tensor.Shape{2, 8, 3, 8}, 8},
		{"rank 3", tensor.Shape{2, 8, 40}, 4},
		{"parallel", tensor.Shape{4, 32, 17, 24}, 8},
		{"parallel odd", tensor.Shape{3, 30, 13, 11}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.shape
			n, c := s[0], s[1]
			rows := n * tc.groups
			rg := rowGeom{s, rows, s.TotalSize() / rows, 1e-5}
			cg := chanGeom{n, c, s.TotalSize() / (n * c)}
			data := func(size int, scale float64) ad.Tensor[T] {
				d := make([]T, size)
				for i := range d {
					d[i] = T(math.Ldexp(r.NormFloat64(), r.IntN(12)-6) * scale)
				}
				return ad.Tensor[T]{Data: d}
			}
			x, u, w, b := data(s.TotalSize(), 1), data(s.TotalSize(), 1), data(c, 1), data(c, 1)
			for i := range x.Data { // a per-row offset, so that x − μ rounds
				x.Data[i] += T(i / rg.n)
			}
			run := func(k func(ad.Tensor[T], []ad.Tensor[T]) error, size int, in ...ad.Tensor[T]) []T {
				out := ad.Tensor[T]{Data: make([]T, size)}
				for i := range out.Data {
					out.Data[i] = T(math.NaN()) // overwritten
				}
				if err := k(out, in); err != nil {
					t.Fatal(err)
				}
				return out.Data
			}
			for _, p := range []struct{ hasW, hasB bool }{{true, true}, {true, false}, {false, true}} {
				var in []ad.Tensor[T]
				in = append(in, x)
				if p.hasW {
					in = append(in, w)
				}
				if p.hasB {
					in = append(in, b)
				}
				got := run(groupNormAffineKernel[T](rg, cg, p.hasW, p.hasB), len(x.Data), in...)
				want := run(refGroupNormAffineKernel[T](rg, cg, p.hasW, p.hasB), len(x.Data), in...)
				sameBits(t, fmt.Sprintf("GroupNormAffine w %v b %v", p.hasW, p.hasB), got, want)
			}
			sameBits(t, "GroupNormGradX", run(groupNormGradXKernel[T](rg, cg), len(x.Data), x, u, w),
				run(refGroupNormGradXKernel[T](rg, cg), len(x.Data), x, u, w))
			sameBits(t, "RowNorm", run(rowNormKernel[T](rg), len(x.Data), x), run(refRowNormKernel[T](rg), len(x.Data), x))
			sameBits(t, "RowInvStd", run(rowInvStdKernel[T](rg), rows, x), run(refRowInvStdKernel[T](rg), rows, x))
			sameBits(t, "ChannelDot", run(channelReduceKernel[T](cg, true), c, u, x), run(refChannelReduceKernel[T](cg, true), c, u, x))
			sameBits(t, "ChannelTotal", run(channelReduceKernel[T](cg, false), c, u), run(refChannelReduceKernel[T](cg, false), c, u))
			sameBits(t, "GroupNormGradW", run(groupNormGradWKernel[T](rg, cg), c, u, x),
				run(refGroupNormGradWKernel[T](rg, cg), c, u, x))

			// From the statistics: ∂x the bits of the reference GradX;
			// where the vector loops run and split planes as rows (not
			// with the Go loops: purego, arm64), ∂w and ∂b those
			// of ChannelDot(u, RowNorm(x)) and ChannelTotal(u), elsewhere
			// close to them (the statistics sum u·y, y rounded to T,
			// GroupNormGradW sums r·u·(x − μ)).
			stats := run(groupNormStatsKernel[T](rg, cg), statsShape(rg, cg).TotalSize(), u, x)
			sameBits(t, "GroupNormGradX from the statistics", run(groupNormGradXStatsKernel[T](rg, cg), len(x.Data), x, u, w, ad.Tensor[T]{Data: stats}),
				run(refGroupNormGradXKernel[T](rg, cg), len(x.Data), x, u, w))
			gotW := run(groupNormStatsTotal[T](rg, cg, 1), c, u, x, ad.Tensor[T]{Data: stats})
			gotB := run(groupNormStatsTotal[T](rg, cg, 0), c, u, ad.Tensor[T]{Data: stats})
			y := ad.Tensor[T]{Data: run(refRowNormKernel[T](rg), len(x.Data), x)}
			wantW, wantB := run(refChannelReduceKernel[T](cg, true), c, u, y), run(refChannelReduceKernel[T](cg, false), c, u)
			if vmath.VectorLoops() && vmath.VectorWhole[T](cg.inner) {
				sameBits(t, "GroupNormGradW from the statistics", gotW, wantW)
				sameBits(t, "GroupNormGradB from the statistics", gotB, wantB)
			} else {
				closeTo(t, "GroupNormGradW from the statistics", gotW, run(refGroupNormGradWKernel[T](rg, cg), c, u, x))
				closeTo(t, "GroupNormGradB from the statistics", gotB, wantB)
			}
		})
	}
}

// sameBits fails t where got and want differ in any bit.
func sameBits[T ad.Float](t *testing.T, what string, got, want []T) {
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
func closeTo[T ad.Float](t *testing.T, what string, got, want []T) {
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
	s := tensor.Shape{8, 256, 50, 68}
	rg := rowGeom{s, 8 * 32, s.TotalSize() / (8 * 32), 1e-5}
	cg := chanGeom{8, 256, 50 * 68}
	r := rand.New(rand.NewPCG(1, 2))
	data := func(size int) ad.Tensor[float32] {
		d := make([]float32, size)
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
		return ad.Tensor[float32]{Data: d}
	}
	x, u, w, bias := data(s.TotalSize()), data(s.TotalSize()), data(256), data(256)
	out, outW := data(s.TotalSize()), data(256)
	// The backward with ∂w and ∂b: from the statistics ("fused"), or
	// GroupNormGradX, GroupNormGradW and ChannelTotal ("ref").
	stats, outB := data(statsShape(rg, cg).TotalSize()), data(256)
	backward := func(out ad.Tensor[float32], in []ad.Tensor[float32]) error {
		_ = groupNormStatsKernel[float32](rg, cg)(stats, []ad.Tensor[float32]{u, x})
		_ = groupNormStatsTotal[float32](rg, cg, 1)(outW, []ad.Tensor[float32]{u, x, stats})
		_ = groupNormStatsTotal[float32](rg, cg, 0)(outB, []ad.Tensor[float32]{u, stats})
		return groupNormGradXStatsKernel[float32](rg, cg)(out, []ad.Tensor[float32]{x, u, w, stats})
	}
	plainBackward := func(out ad.Tensor[float32], in []ad.Tensor[float32]) error {
		_ = groupNormGradWKernel[float32](rg, cg)(outW, []ad.Tensor[float32]{u, x})
		_ = channelReduceKernel[float32](cg, false)(outB, []ad.Tensor[float32]{u})
		return groupNormGradXKernel[float32](rg, cg)(out, []ad.Tensor[float32]{x, u, w})
	}
	for _, k := range []struct {
		name  string
		fused func(ad.Tensor[float32], []ad.Tensor[float32]) error
		ref   func(ad.Tensor[float32], []ad.Tensor[float32]) error
		out   ad.Tensor[float32]
		in    []ad.Tensor[float32]
	}{
		{"forward", groupNormAffineKernel[float32](rg, cg, true, true), refGroupNormAffineKernel[float32](rg, cg, true, true), out, []ad.Tensor[float32]{x, w, bias}},
		{"gradX", groupNormGradXKernel[float32](rg, cg), refGroupNormGradXKernel[float32](rg, cg), out, []ad.Tensor[float32]{x, u, w}},
		{"gradW", groupNormGradWKernel[float32](rg, cg), refGroupNormGradWKernel[float32](rg, cg), outW, []ad.Tensor[float32]{u, x}},
		{"backward", backward, plainBackward, out, nil},
	} {
		for _, v := range []struct {
			name string
			f    func(ad.Tensor[float32], []ad.Tensor[float32]) error
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
	cg := chanGeom{8, 256, 50 * 68}
	u := make([]float32, 8*256*50*68)
	for i := range u {
		u[i] = float32(i%7) - 3
	}
	out := ad.Tensor[float32]{Data: make([]float32, 256)}
	in := []ad.Tensor[float32]{{Data: u}}
	for _, v := range []struct {
		name string
		k    func(ad.Tensor[float32], []ad.Tensor[float32]) error
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
