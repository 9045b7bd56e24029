package cpu

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/par"
)

// Winograd F(2×2, 3×3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) for 3×3, stride 1, dilation 1,
// ungrouped convolutions: each output tile of 2×2 is Aᵀ[(G g Gᵀ) ⊙
// (Bᵀ d B)]A for the 4×4 input patch d around it and the 3×3 kernel g,
//
//	Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]
//	G  = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1]
//	Aᵀ = [1 1 1 0; 0 1 −1 −1]
//
// so that, summed over the input channels, the 16 elements ξ of the 4×4
// transforms are 16 independent matrix products M_ξ = U_ξ·V_ξ (U_ξ
// [Cout, Cin] from the weight, V_ξ [Cin, tiles] from the input): 16
// multiplications a tile and channel pair instead of im2col's 36. The
// products go through Conv's Product (nn's product decision). A sample's
// tiles are taken a few tile rows at a time (winoPlan.rb), their V and M
// held in one buffer, as forwardRows does for the columns; groups of
// samples are par.Outer jobs as samples are in convGEMM. The partition
// and every element's arithmetic are fixed by the geometry alone, so the
// result is bitwise the same for any GOMAXPROCS; it is not bitwise
// im2col's (the transforms round).

// winoForce forces Conv's choice for the geometries Winograd can run:
// 0 lets winoWins decide, 1 runs Winograd, −1 im2col. Tests set it.
var winoForce int

// winoRule is where Winograd runs ConvForward: both channel counts at
// least channels, and either a sample of tiles tiles of 2×2 or more, or
// groups of winoGroupTiles tiles or more, two groups or more (side by
// side). Measured on the 2-core AVX-512 VM (BenchmarkConvWino: 3×3,
// padding 1, float32, internal/gemm's product, CPU time): im2col wins at
// 16 channels on every map, the two are even at 32 (0.8 to 1.2 times),
// Winograd wins from 64 on every map with 64 tiles a sample or more
// (16×16: 1.05 to 1.35 times; 28×28 and larger: 1.3 to 2 times), and on
// smaller maps with batches that make two groups or more (8×8 and 14×14,
// batch 8: 1.3 to 1.6 times), but not with one group (14×14, batch 2,
// 0.75 to 0.85; 8×8 and 4×4, 0.5 to 0.85: the products are too narrow to
// pay for packing U_ξ 16 times).
type winoRule struct{ channels, tiles int }

// winoForwardRule is ConvForward's winoRule.
var winoForwardRule = winoRule{64, 64}

// winoInputWins is where Winograd runs ConvInput, whose im2col product
// (Wᵀ·G, 9·C rows) is wider and faster than the forward's: cin and cout
// channels (the gradient's and the input's), tiles of 2×2 a sample, a
// batch of n. Measured again after the masked transform tails and the
// weight gradient's in-place panels (2026-12-06, BenchmarkConvWino/input,
// wall time, least of 20–30 calls; Winograd's time ÷ im2col's):
//
//   - batch 1: im2col wins everywhere (64 to 256 channels, 8×8 to 56×56:
//     1.15 to 4.2);
//   - batch 2: Winograd wins from 256 channels on 28×28 and larger (0.66
//     to 0.81), is even at 16×16 (0.83 to 1.04) and at 128 channels, and
//     loses at 64 channels (1.3 to 1.7). On the AVX2 Zen 3 VM (2026-12-07,
//     least of 60 calls) it wins from 128 channels on 16×16 and larger
//     (128: 0.54 at 16×16, 0.58 at 32×32; 256: 0.59 at 16×16, 0.44 at
//     28×28; 512 at 16×16: 0.60) but not on 14×14 (49 tiles a sample:
//     1.14 at 128 channels, 0.89 at 256) or 8×8 (1.18 to 1.72), so batch 2
//     takes it from 128 channels and 64 tiles, where it is even or ahead on
//     both machines (a detector's FPN levels at 16×16 and 32×32);
//   - batch 4 and 8: Winograd wins from 64 channels on 16×16 and larger
//     (0.59 to 0.77; float64 likewise), and at batch 8 on 14×14 (0.64 to
//     0.79), but not on 8×8 at 64 channels (1.10).
func winoInputWins(cin, cout, tiles, n int) bool {
	c := min(cin, cout)
	switch {
	case c < 64 || n < 2:
		return false
	case n < 4:
		return c >= 128 && tiles >= 64
	}
	return tiles >= 64 || n >= 8 && tiles >= 49
}

// winoGeom reports whether Winograd can run g's ConvForward and
// ConvInput: a 3×3 kernel, stride 1, dilation 1, one group, padding 0 to
// 2.
func winoGeom(g *ConvGeom) bool {
	return g.KH == 3 && g.KW == 3 && g.SH == 1 && g.SW == 1 && g.DH == 1 && g.DW == 1 && g.Groups == 1 &&
		g.PH >= 0 && g.PH <= 2 && g.PW >= 0 && g.PW <= 2 && g.HO > 0 && g.WO > 0
}

// winoWins reports whether Conv runs g's ConvForward or ConvInput (mode)
// by Winograd (winoForce aside): winoGeom and winoForwardRule or
// winoInputWins.
func winoWins(g *ConvGeom, mode ConvMode) bool {
	if !winoGeom(g) || winoForce < 0 || mode == ConvWeight {
		return false
	}
	if winoForce > 0 {
		return true
	}
	p, r := newWinoPlan(g, mode), winoForwardRule
	tiles := p.th * p.tw
	if mode == ConvInput {
		return winoInputWins(p.cin, p.cout, tiles, g.N)
	}
	return p.cin >= r.channels && p.cout >= r.channels &&
		(tiles >= r.tiles || p.group*tiles >= winoGroupTiles && g.N >= 2*p.group)
}

// winoSlab is about the number of elements of V and M that a block of
// tiles holds (2 MiB of float32: the products stream them), and
// winoBlockTiles the fewest tiles a block takes however many the channels.
// On another BLAS each block packs every U_ξ again, so a block must be
// wide (at 256 channels, 128 tiles a block spent ~10 % of a detector's CPU
// repacking U; 512 ran FCOS ResNet-18-FPN 3–6 % faster); on gops' own
// product U_ξ is packed once a call (packedProducts), and 256 tiles, half the
// V and M, ran it ~3 % faster than 512 (CPU time, alternating binaries).
const (
	winoSlab       = 1 << 19
	winoBlockTiles = 256
)

// winoGroupTiles is the fewest tiles of a group of samples: samples with
// fewer go together into one block, fewer blocks that run their loops and
// products in parallel inside; those with more each make their own,
// blocks of different samples side by side as par.Outer jobs (on the
// 2-core VM, 256 channels at 16×16, batch 2: 64 tiles a block, two
// blocks side by side, 15 % faster than one of 128 tiles).
const winoGroupTiles = 64

// winoPlan is one Winograd convolution: planes [cin, h, w] to
// [cout, ho, wo], padding (ph, pw), th×tw tiles of 2×2 output. The
// samples go in groups of group; a block is rb consecutive tile rows of
// a group's samples (those of sample n0 + q/th at row q%th for q in the
// block), its tiles the columns of the products. The partition depends
// on the geometry alone (OpenBLAS rounds an element by the width of the
// product it is in).
type winoPlan struct {
	cin, cout, h, w, ho, wo, ph, pw int
	th, tw, group, rb               int
	flip                            bool // the weight is [cin, cout, 3, 3], turned by 180° (ConvInput)
}

// newWinoPlan is the plan of g's ConvForward or, for ConvInput, the
// 3×3 stride-1 convolution of the output gradient with the weight turned
// by 180° and transposed, padding 2 − p, that is the input's gradient.
// A group is the fewest samples, a power of two, of winoGroupTiles tiles
// or more (at most N).
func newWinoPlan(g *ConvGeom, mode ConvMode) *winoPlan {
	p := &winoPlan{cin: g.C, cout: g.Cout, h: g.H, w: g.W, ho: g.HO, wo: g.WO, ph: g.PH, pw: g.PW}
	if mode == ConvInput {
		p = &winoPlan{cin: g.Cout, cout: g.C, h: g.HO, w: g.WO, ho: g.H, wo: g.W, ph: 2 - g.PH, pw: 2 - g.PW, flip: true}
	}
	p.th, p.tw = (p.ho+1)/2, (p.wo+1)/2
	tiles := max(winoBlockTiles, winoSlab/(16*(p.cin+p.cout)))
	p.group = 1
	for p.group < g.N && p.group*p.th*p.tw < winoGroupTiles {
		p.group *= 2
	}
	p.group = max(1, min(p.group, g.N))
	p.rb = max(1, (tiles+p.tw-1)/p.tw)
	if rows := p.group * p.th; 2*p.rb > rows {
		p.rb = rows
	}
	return p
}

// winoStride is the distance between the ξ planes of V or M, for n
// elements a plane: n rounded up to 1024 and 16 more, so that the 16
// streams the transforms read or write at a time fall in different cache
// sets (not 4 KiB apart).
func winoStride(n int) int { return (n+1023)/1024*1024 + 16 }

// convWino is Conv's ConvForward or ConvInput by Winograd F(2×2, 3×3)
// (winoWins(g)): out [N, cout, ho, wo] from a [N, cin, h, w] and the
// weight w, plus bias (ConvForward) when it is not nil. Groups of samples
// run as par.Outer jobs, a buffer each (convGEMM's way). It returns
// false, having written nothing, when the weight is not finite
// (winoWeights).
func convWino[T Float](g *ConvGeom, mode ConvMode, mul Product[T], out, a, w, bias []T) (bool, error) {
	return convWinoWith(g, mode, mul, out, a, w, bias, nil)
}

// convWinoWith is convWino with ConvForward's epilogue ep (nil: none)
// after the bias, on each block of output rows (ConvEpilogue's).
func convWinoWith[T Float](g *ConvGeom, mode ConvMode, mul Product[T], out, a, w, bias []T, ep *Epilogue[T]) (bool, error) {
	p := newWinoPlan(g, mode)
	su := winoStride(p.cout * p.cin)
	u := floatScratch[T]().Get(16 * su)
	defer floatScratch[T]().Put(u)
	if !winoWeights(p, w, u, su) {
		return false, nil
	}
	prod, err := newPackedProducts(16, p.cout, p.cin, mul, u, su, false)
	if err != nil {
		return true, err
	}
	defer prod.release()
	t := p.rb * p.tw
	size := 16 * (winoStride(p.cin*t) + winoStride(p.cout*t))
	groups := (g.N + p.group - 1) / p.group
	errs := make([]error, groups)
	run := func(lo, hi int) {
		buf := colsScratch[T]().Get(size)
		defer colsScratch[T]().Put(buf)
		for gi := lo; gi < hi; gi++ {
			n0 := gi * p.group
			errs[gi] = winoGroup(p, prod, out, a, bias, ep, buf, n0, min(g.N, n0+p.group))
		}
	}
	if groups < 2 {
		run(0, groups)
	} else {
		par.ForWork(groups, g.N*p.cout*p.cin*p.ho*p.wo, func(lo, hi int) {
			defer par.Outer(1)()
			run(lo, hi)
		})
	}
	return true, firstErr(errs)
}

// packedProducts is count products C_i = A_i·B_i of left operands A_i
// [m, k] (planes sa apart in a) with right operands that change from
// call to call: on mul, or, with gops' own product (a nil Product), on
// each A_i packed once (gemm.PackA) for all of them, bitwise the same
// (gemm.GemmPackedA is gemm.Gemm's product). Winograd's 16 products
// M_ξ = U_ξ·V_ξ, U_ξ the same for every block of tiles (packing every U_ξ
// for every block and goroutine took ~9 % of a detector's CPU), and a
// pointwise convolution's forward and input gradient, a group's weight
// (or its transpose) the same for every sample (convGEMMWith).
type packedProducts[T Float] struct {
	m, k  int
	mul   Product[T]
	a     []T
	sa    int
	trans bool                     // A_i is the transpose of a [k, m] block of a
	p32   []*gemm.PackedA[float32] // the packed A_i (T of 4 bytes), or nil
	p64   []*gemm.PackedA[float64] // (T of 8 bytes), or nil
}

// newPackedProducts is the count products of the A_i on mul (nil: gops'
// own, every A_i packed now, in parallel); with trans, A_i is the
// transpose of a [k, m] block (a convolution's weight for its input
// gradient).
func newPackedProducts[T Float](count, m, k int, mul Product[T], a []T, sa int, trans bool) (*packedProducts[T], error) {
	w := &packedProducts[T]{m: m, k: k, mul: mul, a: a, sa: sa, trans: trans}
	if mul != nil {
		return w, nil
	}
	errs := make([]error, count)
	if unsafe.Sizeof(T(0)) == 4 {
		w.p32 = make([]*gemm.PackedA[float32], count)
	} else {
		w.p64 = make([]*gemm.PackedA[float64], count)
	}
	par.ForWork(count, count*m*k, func(lo, hi int) {
		if count > 1 {
			// Each worker packs its own A_i on its goroutine (gemm.PackA
			// splits one A_i's rows over the workers: a group's weight).
			defer par.Outer(1)()
		}
		for i := lo; i < hi; i++ {
			ai := a[i*sa:][:m*k]
			switch {
			case trans && w.p32 != nil:
				w.p32[i], errs[i] = gemm.PackAT(m, k, asF32(ai), m)
			case trans:
				w.p64[i], errs[i] = gemm.PackAT(m, k, asF64(ai), m)
			case w.p32 != nil:
				w.p32[i], errs[i] = gemm.PackA(m, k, asF32(ai), k)
			default:
				w.p64[i], errs[i] = gemm.PackA(m, k, asF64(ai), k)
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		w.release()
		return nil, err
	}
	return w, nil
}

// run computes C_i [m, n] (ldc) into c from B_i [k, n] (ldb) in b, beta 0.
func (w *packedProducts[T]) run(i, n int, b []T, ldb int, c []T, ldc int) error {
	switch {
	case w.p32 != nil:
		return gemm.GemmPackedA(w.p32[i], n, asF32(b), ldb, asF32(c), ldc, nil)
	case w.p64 != nil:
		return gemm.GemmPackedA(w.p64[i], n, asF64(b), ldb, asF64(c), ldc, nil)
	case w.trans:
		return w.mul(true, false, w.m, n, w.k, w.a[w.sa*i:], w.m, b, ldb, 0, c, ldc)
	}
	return w.mul(false, false, w.m, n, w.k, w.a[w.sa*i:], w.k, b, ldb, 0, c, ldc)
}

// runSegments computes columns [j0, j1) of C_i [m, n] from B_i [k, n],
// their columns in segments (gemm.GemmPackedASegments: a batch's samples
// side by side along n), beta 0, with bias [m] (nil: none) as run adds
// it. It needs the packed A_i (gops' own product).
func (w *packedProducts[T]) runSegments(i, n int, b []T, ldb int, bseg gemm.Segments, c []T, ldc int, cseg gemm.Segments, bias []T, j0, j1 int) error {
	switch {
	case w.p32 != nil:
		return gemm.GemmPackedASegments(w.p32[i], n, asF32(b), ldb, bseg, asF32(c), ldc, cseg, asF32(bias), j0, j1)
	case w.p64 != nil:
		return gemm.GemmPackedASegments(w.p64[i], n, asF64(b), ldb, bseg, asF64(c), ldc, cseg, asF64(bias), j0, j1)
	}
	return fmt.Errorf("packed products: segments need gops' own product")
}

// release gives the packed A_i back.
func (w *packedProducts[T]) release() {
	for _, pa := range w.p32 {
		pa.Release()
	}
	for _, pa := range w.p64 {
		pa.Release()
	}
}

// winoGroup convolves the samples [n0, n1) of x [N, cin, h, w] into y
// [N, cout, ho, wo] a block of rb tile rows at a time: V = Bᵀ d B into
// buf, the 16 products M_ξ = U_ξ·V_ξ (prod) after it in buf, then
// Y = Aᵀ M A and the epilogue.
func winoGroup[T Float](p *winoPlan, prod *packedProducts[T], y, x, bias []T, ep *Epilogue[T], buf []T, n0, n1 int) error {
	rows := (n1 - n0) * p.th
	for q0 := 0; q0 < rows; q0 += p.rb {
		q1 := min(rows, q0+p.rb)
		t := (q1 - q0) * p.tw
		sv, sm := winoStride(p.cin*t), winoStride(p.cout*t)
		v, m := buf[:16*sv], buf[16*sv:][:16*sm]
		winoInput(p, x, v, sv, n0, q0, q1)
		for xi := 0; xi < 16; xi++ {
			if err := prod.run(xi, t, v[xi*sv:], t, m[xi*sm:], t); err != nil {
				return err
			}
		}
		winoOutput(p, m, y, bias, ep, sm, n0, q0, q1)
	}
	return nil
}

// winoWeights writes U [16, cout, cin] (ξ planes su apart),
// U_ξ[o, i] = (G g Gᵀ)_ξ for the kernel g that maps input channel i to
// output channel o: w[o, i] as it is, or w[i, o] turned by 180° when
// p.flip. It reports whether every U_ξ[o, i] with ξ = 5, the sum of g's
// nine taps over 4, is finite: false when w holds ±Inf or NaN (a sum with
// one is not finite, whatever the order) or the sum overflows.
func winoWeights[T Float](p *winoPlan, w, u []T, su int) (finite bool) {
	sums := make([]T, p.cout) // Σ (u5 − u5) over a channel's kernels
	par.ForWork(p.cout, 16*p.cout*p.cin, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			var z T
			var us [16][]T
			for xi := range us {
				us[xi] = u[xi*su+o*p.cin:][:p.cin]
			}
			u0, u1, u2, u3, u4, u5, u6, u7 := us[0], us[1], us[2], us[3], us[4], us[5], us[6], us[7]
			u8, u9, u10, u11, u12, u13, u14, u15 := us[8], us[9], us[10], us[11], us[12], us[13], us[14], us[15]
			done := winoWtAsm(p, w, u, su, o) // the first kernels, in assembly
			if !finiteRun(u5[:done]) {
				z = T(math.NaN()) // not finite, as the loop's sum would be
			}
			for i := done; i < len(u0); i++ {
				var k *[9]T
				if p.flip {
					s := (*[9]T)(w[(i*p.cout+o)*9:][:9])
					k = &[9]T{s[8], s[7], s[6], s[5], s[4], s[3], s[2], s[1], s[0]}
				} else {
					k = (*[9]T)(w[(o*p.cin+i)*9:][:9])
				}
				// G g, column by column: rows g0, (g0+g1+g2)/2,
				// (g0−g1+g2)/2, g2 (a, b, c, d); then (G g) Gᵀ, the same
				// on each of these rows.
				a0, a1, a2 := k[0], k[1], k[2]
				b0, b1, b2 := (k[0]+k[3]+k[6])/2, (k[1]+k[4]+k[7])/2, (k[2]+k[5]+k[8])/2
				c0, c1, c2 := (k[0]-k[3]+k[6])/2, (k[1]-k[4]+k[7])/2, (k[2]-k[5]+k[8])/2
				d0, d1, d2 := k[6], k[7], k[8]
				u0[i], u1[i], u2[i], u3[i] = a0, (a0+a1+a2)/2, (a0-a1+a2)/2, a2
				u4[i], u5[i], u6[i], u7[i] = b0, (b0+b1+b2)/2, (b0-b1+b2)/2, b2
				u8[i], u9[i], u10[i], u11[i] = c0, (c0+c1+c2)/2, (c0-c1+c2)/2, c2
				u12[i], u13[i], u14[i], u15[i] = d0, (d0+d1+d2)/2, (d0-d1+d2)/2, d2
				z += u5[i] - u5[i]
			}
			sums[o] = z
		}
	})
	return allFinite(sums)
}

// winoInput writes V [16, cin, t] (ξ planes sv apart) of the tile rows
// [q0, q1) of the group from sample n0 of x [N, cin, h, w],
// t = (q1−q0)·tw: V_ξ[c, (q−q0)·tw + tc] is element ξ of Bᵀ d B, d the
// 4×4 patch of sample n0 + q/th, plane c, at rows 2·(q%th) − ph, columns
// 2tc − pw on, 0 outside the image. Channels in parallel.
func winoInput[T Float](p *winoPlan, x, v []T, sv, n0, q0, q1 int) {
	t, hw := (q1-q0)*p.tw, p.h*p.w
	width := 2*p.tw + 2 // a padded row: the image at [pw, pw+w)
	par.ForWork(p.cin, 16*p.cin*t, func(lo, hi int) {
		rows := make([]T, 4*width)
		for c := lo; c < hi; c++ {
			var vs [16][]T
			for xi := range vs {
				vs[xi] = v[xi*sv+c*t:][:t]
			}
			for q := q0; q < q1; q++ {
				plane, r := x[((n0+q/p.th)*p.cin+c)*hw:][:hw], q%p.th
				for i := 0; i < 4; i++ {
					dst := rows[i*width+p.pw:][:p.w]
					if y := 2*r - p.ph + i; y >= 0 && y < p.h {
						copy(dst, plane[y*p.w:][:p.w])
					} else {
						clear(dst)
					}
				}
				winoInputRow(rows, width, &vs, (q-q0)*p.tw, p.tw)
			}
		}
	})
}

// winoInputRow transforms the tw patches of one tile row: rows holds the
// four padded input rows (width elements each), tile tc reads their
// columns 2tc to 2tc+3; element ξ goes to vs[ξ][o+tc].
func winoInputRow[T Float](rows []T, width int, vs *[16][]T, o, tw int) {
	done := winoInAsm(rows, width, vs, o, tw) // the first tiles, in assembly
	if done == tw {
		return
	}
	rows, o, tw = rows[2*done:], o+done, tw-done
	d0 := rows[:2*tw+2]
	d1, d2, d3 := rows[width:][:len(d0)], rows[2*width:][:len(d0)], rows[3*width:][:len(d0)]
	v0 := vs[0][o : o+tw]
	n := len(v0)
	v1, v2, v3 := vs[1][o:][:n], vs[2][o:][:n], vs[3][o:][:n]
	v4, v5, v6, v7 := vs[4][o:][:n], vs[5][o:][:n], vs[6][o:][:n], vs[7][o:][:n]
	v8, v9, v10, v11 := vs[8][o:][:n], vs[9][o:][:n], vs[10][o:][:n], vs[11][o:][:n]
	v12, v13, v14, v15 := vs[12][o:][:n], vs[13][o:][:n], vs[14][o:][:n], vs[15][o:][:n]
	for tc := range v0 {
		j := 2 * tc
		a, b, c, d := d0[j:j+4:j+4], d1[j:j+4:j+4], d2[j:j+4:j+4], d3[j:j+4:j+4]
		// Bᵀ d: rows d0 − d2, d1 + d2, d2 − d1, d1 − d3.
		t00, t01, t02, t03 := a[0]-c[0], a[1]-c[1], a[2]-c[2], a[3]-c[3]
		t10, t11, t12, t13 := b[0]+c[0], b[1]+c[1], b[2]+c[2], b[3]+c[3]
		t20, t21, t22, t23 := c[0]-b[0], c[1]-b[1], c[2]-b[2], c[3]-b[3]
		t30, t31, t32, t33 := b[0]-d[0], b[1]-d[1], b[2]-d[2], b[3]-d[3]
		// (Bᵀ d) B: columns the same.
		v0[tc], v1[tc], v2[tc], v3[tc] = t00-t02, t01+t02, t02-t01, t01-t03
		v4[tc], v5[tc], v6[tc], v7[tc] = t10-t12, t11+t12, t12-t11, t11-t13
		v8[tc], v9[tc], v10[tc], v11[tc] = t20-t22, t21+t22, t22-t21, t21-t23
		v12[tc], v13[tc], v14[tc], v15[tc] = t30-t32, t31+t32, t32-t31, t31-t33
	}
}

// winoOutput writes the output of the tile rows [q0, q1) of the group
// from sample n0 into y [N, cout, ho, wo] from M [16, cout, t] (ξ planes
// sm apart): tile (q, tc) of channel o is Aᵀ M A,
// M_ξ = m[ξ·sm + o·t + (q−q0)·tw + tc], clipped to the image; then
// the bias and epilogue (Epilogue.channel) on each sample's block of
// rows of the channel. Channels in
// parallel.
func winoOutput[T Float](p *winoPlan, m, y, bias []T, ep *Epilogue[T], sm, n0, q0, q1 int) {
	t, plane := (q1-q0)*p.tw, p.ho*p.wo
	par.ForWork(p.cout, 16*p.cout*t, func(lo, hi int) {
		spare := make([]T, p.wo) // the output row past the image, when ho is odd
		for o := lo; o < hi; o++ {
			var ms [16][]T
			for xi := range ms {
				ms[xi] = m[xi*sm+o*t:][:t]
			}
			// The block's runs of rows of one sample: [qa, qb).
			for qa := q0; qa < q1; {
				n := n0 + qa/p.th
				qb := min(q1, (qa/p.th+1)*p.th)
				at := (n*p.cout + o) * plane
				dst := y[at:][:plane]
				for q := qa; q < qb; q++ {
					r := q % p.th
					top := dst[2*r*p.wo:][:p.wo]
					bottom := spare
					if 2*r+1 < p.ho {
						bottom = dst[(2*r+1)*p.wo:][:p.wo]
					}
					winoOutputRow(&ms, (q-q0)*p.tw, p.tw, sm, top, bottom)
				}
				ra, rb := qa%p.th, (qb-1)%p.th+1
				ep.channel(y, bias, at, o, 2*ra*p.wo, min(p.ho, 2*rb)*p.wo, plane)
				qa = qb
			}
		}
	})
}

// winoOutputRow writes the tw tiles of one tile row, starting at
// element o of the ms (slices of one M, its ξ planes stride elements
// apart), into the output rows top and bottom (wo elements each; bottom
// the spare row when it is past the image): tile tc's columns 2tc and
// 2tc + 1, those inside the row.
func winoOutputRow[T Float](ms *[16][]T, o, tw, stride int, top, bottom []T) {
	done := winoOutAsm(ms, o, tw, stride, top, bottom) // the tiles inside the image, in assembly
	if done == tw {
		return
	}
	o, tw = o+done, tw-done
	top, bottom = top[2*done:], bottom[2*done:]
	m0 := ms[0][o : o+tw]
	n := len(m0)
	m1, m2, m3 := ms[1][o:][:n], ms[2][o:][:n], ms[3][o:][:n]
	m4, m5, m6, m7 := ms[4][o:][:n], ms[5][o:][:n], ms[6][o:][:n], ms[7][o:][:n]
	m8, m9, m10, m11 := ms[8][o:][:n], ms[9][o:][:n], ms[10][o:][:n], ms[11][o:][:n]
	m12, m13, m14, m15 := ms[12][o:][:n], ms[13][o:][:n], ms[14][o:][:n], ms[15][o:][:n]
	wo := len(top)
	bottom = bottom[:wo]
	for tc := range m0 {
		// Aᵀ M: rows m0 + m1 + m2 and m1 − m2 − m3 of M's rows; then
		// (Aᵀ M) A, the same on the columns.
		s0, s1, s2, s3 := m0[tc]+m4[tc]+m8[tc], m1[tc]+m5[tc]+m9[tc], m2[tc]+m6[tc]+m10[tc], m3[tc]+m7[tc]+m11[tc]
		e0, e1, e2, e3 := m4[tc]-m8[tc]-m12[tc], m5[tc]-m9[tc]-m13[tc], m6[tc]-m10[tc]-m14[tc], m7[tc]-m11[tc]-m15[tc]
		j := 2 * tc
		if j+2 <= wo {
			t, b := top[j:j+2:j+2], bottom[j:j+2:j+2]
			t[0], t[1], b[0], b[1] = s0+s1+s2, s1-s2-s3, e0+e1+e2, e1-e2-e3
			continue
		}
		top[j], bottom[j] = s0+s1+s2, e0+e1+e2 // odd wo: the last tile's first column alone
	}
}
