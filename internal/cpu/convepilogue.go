package cpu

import (
	"fmt"

	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// Epilogue is what ConvEpilogue does to a convolution's output
// [N, Cout, HO, WO] after its bias, per output channel c, in this order,
// each step optional:
//
//	y = y·Scale[c] + Shift[c]   (ChannelAffine's arithmetic)
//	y = y + Residual[n, c, h, w] (an elementwise sum, y first)
//	y = relu(y)                  (vmath.ReLU: NaN kept, −0 made +0)
//
// the inference epilogue of a convolution followed by a frozen batch norm
// (torchvision's FrozenBatchNorm2d: Scale and Shift from its buffers), a
// residual sum and a ReLU. Scale and Shift are both nil or both [Cout];
// Residual nil or [N, Cout, HO, WO].
type Epilogue[T Float] struct {
	Scale, Shift []T
	Residual     []T
	ReLU         bool
}

// empty reports whether e does nothing.
func (e *Epilogue[T]) empty() bool {
	return e == nil || e.Scale == nil && e.Residual == nil && !e.ReLU
}

// check is an error unless e's slices fit g.
func (e *Epilogue[T]) check(g *ConvGeom) error {
	if (e.Scale == nil) != (e.Shift == nil) || e.Scale != nil && (len(e.Scale) != g.Cout || len(e.Shift) != g.Cout) {
		return fmt.Errorf("epilogue: scale and shift of %d and %d elements, want both %d or neither", len(e.Scale), len(e.Shift), g.Cout)
	}
	if e.Residual != nil && len(e.Residual) != g.N*g.Cout*g.L() {
		return fmt.Errorf("epilogue: residual of %d elements, want %d", len(e.Residual), g.N*g.Cout*g.L())
	}
	return nil
}

// ConvEpilogue is Conv's ConvForward (x [N, C, H, W], weight w, bias nil
// or [Cout], out [N, Cout, HO, WO]) followed by ep, applied to each block
// of output rows right after its products, while it is in cache. The
// result is bitwise that of Conv, then ChannelAffine with Scale and Shift
// (on [N, Cout, HO·WO]), then the sum with Residual, then ReLU, each a
// whole pass: every step is elementwise, and the affine step rounds each
// element as ChannelAffine's pass over the whole plane does
// (vmath.AxpbAt). The direct kernels (narrow groups) apply ep after the
// whole convolution; Winograd's output transform (Conv's rule) each
// block of output rows. Errors: ep's slices of the wrong length; mul's.
func ConvEpilogue[T Float](g *ConvGeom, mul Product[T], out, x, w, bias []T, ep *Epilogue[T]) error {
	if ep.empty() {
		return Conv(g, ConvForward, mul, out, x, w, bias)
	}
	if err := ep.check(g); err != nil {
		return err
	}
	if !directConv(g) {
		if winoWins(g, ConvForward) && allFinite(x) {
			if ran, err := convWinoWith(g, ConvForward, mul, out, x, w, bias, ep); ran {
				return err
			}
		}
		return convProduct(g, ConvForward, mul, out, x, w, bias, ep)
	}
	directForward(g, out, x, w, bias)
	for n := 0; n < g.N; n++ {
		ep.apply(g, out, nil, n, 0, g.L())
	}
	return nil
}

// apply does the bias (if not nil, as AddChannelBias) and e (nil: nothing more)
// on sample n's output positions [p0, p1) of every output channel of out
// [N, Cout, L], channels in parallel (on the caller's goroutine inside an
// outer job, as ConvForward's samples are).
func (e *Epilogue[T]) apply(g *ConvGeom, out, bias []T, n, p0, p1 int) {
	if len(bias) == 0 && e.empty() {
		return
	}
	l := g.L()
	base := n * g.Cout * l
	par.ForWork(g.Cout, g.Cout*(p1-p0), func(lo, hi int) {
		for co := lo; co < hi; co++ {
			e.channel(out, bias, base+co*l, co, p0, p1, l)
		}
	})
}

// channel does the bias (if not nil) and e (nil: nothing more) on the
// positions [p0, p1) of the output plane of channel co that starts at
// out[at] (l positions a plane; e.Residual at the same offsets).
func (e *Epilogue[T]) channel(out, bias []T, at, co, p0, p1, l int) {
	y := out[at+p0 : at+p1]
	if len(bias) > 0 { // an empty bias is none, as nil
		vmath.AxpbAt(y, y, 1, bias[co], p0, l) // 1·x + b: x + b exactly
	}
	if e.empty() {
		return
	}
	if e.Scale != nil {
		if l > 1 {
			vmath.AxpbAt(y, y, e.Scale[co], e.Shift[co], p0, l) // ChannelAffine's planes
		} else {
			y[0] = affineElem(y[0], e.Scale[co], e.Shift[co]) // its rows of C
		}
	}
	if e.Residual != nil {
		r := e.Residual[at+p0 : at+p1]
		for i := range y {
			y[i] += r[i]
		}
	}
	if e.ReLU {
		vmath.ReLU(y, y)
	}
}
