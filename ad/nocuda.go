//go:build !cuda

package ad

import "gorgonia.org/gorgonia"

// gorgoniaOp is the op as Gorgonia sees it: without the cuda build tag,
// spec.CUDA is ignored.
func gorgoniaOp(o *op) gorgonia.Op { return o }
