package ad

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Reduction is a loss's reduction of its per-element losses, torch's
// reduction argument: ReductionNone keeps them, ReductionMean and
// ReductionSum give a scalar. The zero value "" means the function's own
// default, which each loss's doc comment names (torch's "mean" for
// torch.nn.functional's losses, torchvision's "none" for its box losses);
// Resolve turns it into that default.
type Reduction string

// The reductions, with torch's names, so an untyped string constant such
// as "mean" is a Reduction too.
const (
	ReductionNone Reduction = "none" // one loss per element
	ReductionMean Reduction = "mean" // their mean, a scalar
	ReductionSum  Reduction = "sum"  // their sum, a scalar
)

// Resolve returns the reduction to apply: r, or def for the zero value.
// ok is false for a value other than "", "none", "mean" and "sum" (a
// caller reports it as an error naming its function and r).
func (r Reduction) Resolve(def Reduction) (red Reduction, ok bool) {
	switch r {
	case "":
		return def, true
	case ReductionNone, ReductionMean, ReductionSum:
		return r, true
	}
	return r, false
}

// Shape is the shape of the reduced losses for per-element losses of shape
// s: s for ReductionNone, a scalar otherwise. r is a resolved reduction
// (Resolve); "" counts as a scalar one.
func (r Reduction) Shape(s tensor.Shape) tensor.Shape {
	if r == ReductionNone {
		return s.Clone()
	}
	return tensor.ScalarShape()
}

// OfNothing is torch's reduction of no losses: NaN for a mean (0/0), 0
// for a sum. (With ReductionNone there is nothing to fill.) r is a
// resolved reduction (Resolve); "" gives 0.
func (r Reduction) OfNothing() float64 {
	if r == ReductionMean {
		return math.NaN()
	}
	return 0
}

// Reduce applies r to the per-element losses l: l itself for
// ReductionNone, gorgonia.Mean or gorgonia.Sum of all of them otherwise.
// Errors: l nil, r not resolved (see Resolve) or unknown, and those of
// Gorgonia.
func (r Reduction) Reduce(l *gorgonia.Node) (*gorgonia.Node, error) {
	if l == nil {
		return nil, fmt.Errorf("ad: Reduce: the losses are a nil node")
	}
	switch r {
	case ReductionNone:
		return l, nil
	case ReductionMean:
		return gorgonia.Mean(l)
	case ReductionSum:
		return gorgonia.Sum(l)
	}
	return nil, fmt.Errorf("ad: Reduce: reduction %q, want %q, %q or %q", string(r), ReductionNone, ReductionMean, ReductionSum)
}
