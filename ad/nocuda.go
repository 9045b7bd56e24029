//go:build !cuda

package ad

import "gorgonia.org/gorgonia"

// gorgoniaOp is the op as Gorgonia sees it: without the cuda build tag,
// spec.CUDA is ignored.
func gorgoniaOp(o *op) gorgonia.Op { return o }

// ours reports whether o was made by Apply.
func ours(o gorgonia.Op) bool { _, ok := o.(*op); return ok }

// unwrap is the op of o if Apply made it, else nil.
func unwrap(o gorgonia.Op) *op { p, _ := o.(*op); return p }
