package cpu

import "math"

// The kernels of gops' box primitives (gops/boxprims.go): the pointwise
// functions of the box formulas with torch's NaN and kink rules, column
// selects and stacks of [P, C] boxes, and row gathers with their
// scatter-adds.

// PointFn names a pointwise function of gops' box primitives. The CUDA
// twin (boxops_point in internal/cuda/kernels/gops/boxops.cu, whose switch
// mirrors PointOp.Eval case by case) reads the same codes: their values
// must not change.
type PointFn int

// The functions, of a and b (b unused by the unary ones) and the
// parameters p1, p2 of a PointOp.
const (
	PointMaximum      PointFn = iota // torch.maximum(a, b): NaN if either is
	PointMinimum                     // torch.minimum(a, b)
	PointMaxShare                    // maxShare(a, b), maximum's gradient share
	PointClamp                       // torch.clamp(a, p1, p2)
	PointClampMask                   // 1 where p1 <= a <= p2, else 0
	PointAtan                        // math.Atan(a)
	PointSigmoid                     // sigmoid(a)
	PointSoftplus                    // softplus(a)
	PointPow                         // math.Pow(a, p1)
	PointDiv                         // a / b
	PointCopy                        // a
	PointMasked                      // a where b != 0, else 0
	PointBothPositive                // 1 where a > 0 and b > 0, else 0
)

// PointOp is a PointFn with its parameters (clamp's lo and hi, pow's
// exponent; 0 when unused).
type PointOp struct {
	Fn     PointFn
	P1, P2 float64
}

// Eval is the function at a and b (b is 0 for a unary one), in float64;
// the kernels round it to their element type. A code that is not a
// PointFn gives NaN.
func (o PointOp) Eval(a, b float64) float64 {
	switch o.Fn {
	case PointMaximum:
		return maximum(a, b)
	case PointMinimum:
		return minimum(a, b)
	case PointMaxShare:
		return maxShare(a, b)
	case PointClamp:
		return clamp(a, o.P1, o.P2)
	case PointClampMask:
		if a >= o.P1 && a <= o.P2 {
			return 1
		}
		return 0
	case PointAtan:
		return math.Atan(a)
	case PointSigmoid:
		return sigmoid(a)
	case PointSoftplus:
		return softplus(a)
	case PointPow:
		return math.Pow(a, o.P1)
	case PointDiv:
		return a / b
	case PointCopy:
		return a
	case PointMasked:
		if b != 0 {
			return a
		}
		return 0
	case PointBothPositive:
		if a > 0 && b > 0 {
			return 1
		}
		return 0
	}
	return math.NaN() // not a PointFn: no caller builds one
}

// Point sets out[i] to f at (a[i], b[i]), evaluated in float64 and
// rounded to T; b nil makes f unary (b = 0).
func Point[T Float](f PointOp, out, a, b []T) {
	if b == nil {
		for i, v := range a {
			out[i] = T(f.Eval(float64(v), 0))
		}
		return
	}
	b = b[:len(a)]
	for i, v := range a {
		out[i] = T(f.Eval(float64(v), float64(b[i])))
	}
}

// Div sets out to a / b, divided in T (Go's / on floats is IEEE
// division): PointDiv's values without a call per element.
func Div[T Float](out, a, b []T) {
	b = b[:len(a)]
	for i, v := range a {
		out[i] = v / b[i]
	}
}

// torch.maximum and torch.minimum: NaN if either is NaN.
func maximum(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	if a > b {
		return a
	}
	return b
}

func minimum(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	if a < b {
		return a
	}
	return b
}

// maxShare is the share of maximum(a, b)'s gradient that a gets (torch's
// rule): 0 where a < b, ½ where a == b, 1 otherwise (NaN included).
// minimum(a, b)'s share for a is maxShare(b, a).
func maxShare(a, b float64) float64 {
	switch {
	case a < b:
		return 0
	case a == b:
		return 0.5
	}
	return 1
}

// clamp is torch.clamp(x, lo, hi) (NaN stays NaN); ±Inf bounds are none.
func clamp(x, lo, hi float64) float64 {
	if x != x {
		return x
	}
	return math.Min(math.Max(x, lo), hi)
}

// sigmoid and softplus without overflow (log(1 + exp(x))).
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// ColumnSelect sets out [P] to column j of x [P, c].
func ColumnSelect[T Float](c, j int, out, x []T) {
	for i := range out {
		out[i] = x[i*c+j]
	}
}

// ColumnEmbed writes x [P] into column j of out [P, c] (ColumnSelect's
// transpose), leaving the other columns as they are.
func ColumnEmbed[T Float](c, j int, out, x []T) {
	for i, v := range x {
		out[i*c+j] = v
	}
}

// StackColumns sets out [P, C] to the C columns cols, each [P]
// (torch.stack(cols, dim=1)).
func StackColumns[T Float](out []T, cols [][]T) {
	c := len(cols)
	for j, col := range cols {
		for i, v := range col {
			out[i*c+j] = v
		}
	}
}

// GatherRows sets dst's row r to src's row idx[r] (rows of n elements).
func GatherRows[T Float](dst, src []T, idx []int, n int) {
	for r, i := range idx {
		copy(dst[r*n:(r+1)*n], src[i*n:(i+1)*n])
	}
}

// ScatterAddRows adds src's row r into dst's row idx[r] (GatherRows'
// transpose), in order of r: deterministic.
func ScatterAddRows[T Float](dst, src []T, idx []int, n int) {
	for r, i := range idx {
		d, s := dst[i*n:(i+1)*n], src[r*n:(r+1)*n]
		for e, v := range s {
			d[e] += v
		}
	}
}
