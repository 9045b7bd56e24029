package ad

// Grad's own derivative rules for Gorgonia's reductions and element-wise
// arithmetic: Sum (all axes or some), HadamardProd (also by a scalar: Mul
// with a scalar), Add, Sub, division by a scalar and Square. Gorgonia's
// rules build every input's gradient, wanted or not, and its Sum's rule
// Repeats the upstream gradient into a new tensor once per summed axis, so
// that the gradient of a loss written the ordinary way, Sum(y ⊙ R), cost
// several passes over y's size before y's own backward even starts. Here a
// gradient may stay a scalar spread over its node's shape (a gradTerm with
// spread set): Sum of all axes hands its scalar gradient down that way,
// Add, Sub, HadamardProd by a scalar and division by a scalar keep it a
// scalar, and HadamardProd(y, R) turns it into R times the scalar, or R
// itself when the scalar is Grad's seed 1: Grad(Sum(y ⊙ R), x) then costs
// what VJP(y, R, x) does, plus the forward of the sum. Any other op gets
// the scalar spread into a tensor first (spread.go). The gradients are
// built from Gorgonia's ops and spread.go's, whose derivatives are these
// rules again or Gorgonia's, so they hold at every order.

import (
	"reflect"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"
)

// gradTerm is one term of a node's gradient: the node n, or, with spread
// set, the scalar n in every element of the gradient's node.
type gradTerm struct {
	n      *gorgonia.Node
	spread bool
}

// dense is t as a node of shape like: the spread scalar filled in.
func (t gradTerm) dense(like *gorgonia.Node) (*gorgonia.Node, error) {
	if !t.spread || like.IsScalar() {
		return t.n, nil
	}
	return spread(t.n, like.Shape(), allAxes(like.Dims()))
}

func allAxes(d int) []int {
	axes := make([]int, d)
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// sumTerms adds up the gradient terms of n: a spread scalar if they all
// are, otherwise a tensor (the spread scalars added to it as a scalar).
func sumTerms(n *gorgonia.Node, terms []gradTerm) (gradTerm, error) {
	var dense, spreads gorgonia.Nodes
	for _, t := range terms {
		if t.spread && !n.IsScalar() {
			spreads = append(spreads, t.n)
		} else {
			dense = append(dense, t.n)
		}
	}
	var s *gorgonia.Node
	if len(spreads) > 0 {
		var err error
		if s, err = sumGrads(n, spreads); err != nil {
			return gradTerm{}, err
		}
		if len(dense) == 0 {
			return gradTerm{n: s, spread: true}, nil
		}
	}
	d, err := sumGrads(n, dense)
	if err != nil || s == nil {
		return gradTerm{n: d}, err
	}
	if d, err = elementwise(gorgonia.Add, d, s); err != nil {
		return gradTerm{}, wrapDiff(n, err)
	}
	return gradTerm{n: d}, nil
}

// ownRule differentiates n by the rules of this file. ok says whether one
// applies; if not, the caller uses the op's own.
func ownRule(n *gorgonia.Node, kids gorgonia.Nodes, g gradTerm, want []bool) (out []gradTerm, ok bool, err error) {
	op := n.Op()
	if axes, isSum := sumAxes(op, kids); isSum {
		return sumRule(n, kids[0], axes, g)
	}
	name := ""
	if op != nil {
		name = op.String()
	}
	switch {
	case isOp(op, "elemUnaryOp") && name == "square" && len(kids) == 1:
		out, err = squareRule(kids[0], g)
		return out, err == nil, err
	case !isOp(op, "elemBinOp") || len(kids) != 2 || !shapesFit(n, kids):
		return nil, false, nil
	}
	r := &binRule{n: n, a: kids[0], b: kids[1], g: g}
	switch {
	case strings.HasPrefix(name, "+ "):
		return r.add(want, false)
	case strings.HasPrefix(name, "- "):
		return r.add(want, true)
	case strings.HasPrefix(name, "⊙ "):
		return r.mul(want)
	case strings.HasPrefix(name, "÷ ") && kids[1].IsScalar() && !want[1]:
		return r.divByScalar()
	}
	return nil, false, nil
}

// shapesFit says whether each of n's arguments is a scalar or has n's
// shape: the element-wise ops these rules know (a broadcast op comes
// first for others).
func shapesFit(n *gorgonia.Node, kids gorgonia.Nodes) bool {
	for _, k := range kids {
		if !k.IsScalar() && (n.IsScalar() || !slices.Equal(k.Shape(), n.Shape())) {
			return false
		}
	}
	return true
}

// sumAxes reads the axes of Gorgonia's Sum op (its unexported field
// along); ok is false for other ops or axes that do not fit x.
func sumAxes(op gorgonia.Op, kids gorgonia.Nodes) (axes []int, ok bool) {
	if !isOp(op, "sumOp") || len(kids) != 1 {
		return nil, false
	}
	f := reflect.ValueOf(op).FieldByName("along")
	if !f.IsValid() || f.Kind() != reflect.Slice {
		return nil, false
	}
	d := kids[0].Dims()
	for i := 0; i < f.Len(); i++ {
		a := int(f.Index(i).Int())
		if a < 0 || a >= d || slices.Contains(axes, a) {
			return nil, false
		}
		axes = append(axes, a)
	}
	slices.Sort(axes)
	return axes, len(axes) > 0
}

// sumRule: the gradient of Sum(x) along axes is the upstream gradient
// spread along them; of all of them, a spread scalar.
func sumRule(n, x *gorgonia.Node, axes []int, g gradTerm) ([]gradTerm, bool, error) {
	if g.spread || len(axes) == x.Dims() {
		if !g.n.IsScalar() {
			return nil, false, nil
		}
		return []gradTerm{{n: g.n, spread: true}}, true, nil
	}
	if g.n.Dims() != x.Dims()-len(axes) || g.n.Shape().TotalSize() != n.Shape().TotalSize() {
		return nil, false, nil
	}
	d, err := spread(g.n, x.Shape(), axes)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	return []gradTerm{{n: d}}, true, nil
}

// squareRule: the gradient of x² is 2x·G.
func squareRule(x *gorgonia.Node, g gradTerm) ([]gradTerm, error) {
	two, err := scalarConst(x, 2)
	if err != nil {
		return nil, err
	}
	if g.spread {
		if two, err = times(g.n, two); err != nil {
			return nil, err
		}
		d, err := elementwise(gorgonia.HadamardProd, x, two)
		return []gradTerm{{n: d}}, err
	}
	p, err := elementwise(gorgonia.HadamardProd, g.n, x)
	if err != nil {
		return nil, err
	}
	d, err := elementwise(gorgonia.HadamardProd, p, two)
	return []gradTerm{{n: d}}, err
}

// binRule differentiates n = a op b, a and b scalars or of n's shape, for
// the upstream gradient g.
type binRule struct {
	n, a, b *gorgonia.Node
	g       gradTerm
}

// add: a + b (or a − b, sub): G for a, ±G for b, summed for a scalar
// argument of a tensor result.
func (r *binRule) add(want []bool, sub bool) ([]gradTerm, bool, error) {
	out := make([]gradTerm, 2)
	for i, x := range []*gorgonia.Node{r.a, r.b} {
		if !want[i] {
			continue
		}
		t := r.g
		var err error
		if x.IsScalar() && !r.n.IsScalar() {
			if t, err = r.total(nil); err != nil {
				return nil, true, wrapDiff(r.n, err)
			}
		}
		if i == 1 && sub {
			if t.n, err = gorgonia.Neg(t.n); err != nil {
				return nil, true, wrapDiff(r.n, err)
			}
		}
		out[i] = t
	}
	return out, true, nil
}

// mul: a ⊙ b: G ⊙ b for a, G ⊙ a for b, summed for a scalar argument of
// a tensor result.
func (r *binRule) mul(want []bool) ([]gradTerm, bool, error) {
	out := make([]gradTerm, 2)
	for i, pair := range [][2]*gorgonia.Node{{r.a, r.b}, {r.b, r.a}} {
		if !want[i] {
			continue
		}
		x, other := pair[0], pair[1]
		var t gradTerm
		var err error
		if x.IsScalar() && !r.n.IsScalar() {
			t, err = r.total(other)
		} else {
			// A spread scalar times a scalar stays a spread scalar.
			t.spread = r.g.spread && other.IsScalar()
			t.n, err = times(r.g.n, other)
		}
		if err != nil {
			return nil, true, wrapDiff(r.n, err)
		}
		out[i] = t
	}
	return out, true, nil
}

// divByScalar: a ÷ b, b a scalar whose gradient nobody wants: G ÷ b for a.
func (r *binRule) divByScalar() ([]gradTerm, bool, error) {
	d, err := elementwise(gorgonia.HadamardDiv, r.g.n, r.b)
	if err != nil {
		return nil, true, wrapDiff(r.n, err)
	}
	return []gradTerm{{n: d, spread: r.g.spread}, {}}, true, nil
}

// total is Σ G ⊙ f over n's elements, a scalar (Σ G with f nil).
func (r *binRule) total(f *gorgonia.Node) (gradTerm, error) {
	if !r.g.spread {
		p := r.g.n
		var err error
		if f != nil {
			if p, err = elementwise(gorgonia.HadamardProd, p, f); err != nil {
				return gradTerm{}, err
			}
		}
		s, err := gorgonia.Sum(p)
		return gradTerm{n: s}, err
	}
	// Σ s·f = s·Σ f, and Σ s = s·size.
	var s *gorgonia.Node
	var err error
	switch {
	case f == nil:
		s, err = scalarConst(r.n, float64(r.n.Shape().TotalSize()))
	default:
		s, err = gorgonia.Sum(f)
	}
	if err != nil {
		return gradTerm{}, err
	}
	s, err = times(r.g.n, s)
	return gradTerm{n: s}, err
}

// times is g ⊙ x, or x itself when g is the constant 1.
func times(g, x *gorgonia.Node) (*gorgonia.Node, error) {
	if isOne(g) {
		return x, nil
	}
	return elementwise(gorgonia.HadamardProd, g, x)
}

// isOne says whether n is a scalar Constant 1 (Grad's seed).
func isOne(n *gorgonia.Node) bool {
	c, ok := n.Op().(constantOp)
	if !ok {
		return false
	}
	switch v := c.v.(type) {
	case *gorgonia.F64:
		return *v == 1
	case *gorgonia.F32:
		return *v == 1
	}
	return false
}

// scalarConst is a scalar Constant v of like's dtype.
func scalarConst(like *gorgonia.Node, v float64) (*gorgonia.Node, error) {
	return scalarConstant(like.Graph(), like.Dtype(), v)
}
