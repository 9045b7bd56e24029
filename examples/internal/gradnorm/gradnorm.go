// Package gradnorm builds the input-gradient penalty that the gradpenalty
// and stn examples train with: a second-order objective whose gradients
// differentiate ∂L/∂x again.
package gradnorm

import (
	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
)

// Penalty returns P = Σ (∂L/∂x)², the squared norm of the gradient of
// the scalar loss l with respect to the input x, and obj = L + λP. The
// gradients of P and obj with respect to the parameters run back through
// ∂L/∂x: derivatives of second order of every op on the path. Errors are
// ad.Grad's and the builder's.
func Penalty(l, x *gorgonia.Node, lambda float64) (p, obj *gorgonia.Node, err error) {
	gx, err := ad.Grad(l, x)
	if err != nil {
		return nil, nil, err
	}
	f := ad.NewBuilder(l)
	p = f.Sum(f.Square(gx[0]))
	obj = f.Add(l, f.Scale(p, lambda))
	if err := f.Err(); err != nil {
		return nil, nil, err
	}
	return p, obj, nil
}
