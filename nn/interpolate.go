package nn

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// InterpolateOpts are Interpolate's parameters, named as in
// torch.nn.functional.interpolate; pairs are (height, width). Set exactly
// one of Size and ScaleFactor.
type InterpolateOpts struct {
	// Size is the output size.
	Size [2]int
	// ScaleFactor multiplies the input size (the output is ⌊H·s⌋ × ⌊W·s⌋);
	// the sampling then uses 1/ScaleFactor, as torch with
	// recompute_scale_factor unset.
	ScaleFactor [2]float64
	// Mode is "nearest" (or "", torch's default) or "bilinear".
	Mode string
	// AlignCorners (bilinear only): the corner pixels' centres of input
	// and output coincide.
	AlignCorners bool
}

// Interpolate is torch.nn.functional.interpolate for 4-D input
// [N, C, H, W] → [N, C, Hout, Wout], modes "nearest" (FPN's top-down ×2)
// and "bilinear". An unchanged size copies (bilinear: both axes; nearest:
// per axis), as torch; nearest's source index is computed in float32, as
// torch's. It is linear in the input, with its transpose (a
// scatter of the same weights) as its gradient: differentiable to every
// order.
//
// Errors when the node is built: input not a float rank-4 node with H, W
// at least 1; both or neither of Size and ScaleFactor; a size below 1 or
// a scale factor that is not positive and finite; an unknown Mode;
// AlignCorners with "nearest" (torch refuses it too); sizes above 2^24 or
// a result above 2^30 elements.
func Interpolate(input *gorgonia.Node, opts InterpolateOpts) (*gorgonia.Node, error) {
	const name = "Interpolate"
	if err := checkNodes(name, []namedNode{{input, "input", 4, false}}); err != nil {
		return nil, err
	}
	s := input.Shape()
	if s[2] < 1 || s[3] < 1 || s[2] > maxAxis || s[3] > maxAxis {
		return nil, fmt.Errorf("nn: %s: input %v must have a height and width in [1, %d]", name, s, maxAxis)
	}
	nearest := false
	switch opts.Mode {
	case "", "nearest":
		nearest = true
		if opts.AlignCorners {
			return nil, fmt.Errorf("nn: %s: AlignCorners is only for Mode \"bilinear\"", name)
		}
	case "bilinear":
	default:
		return nil, fmt.Errorf("nn: %s: Mode %q, want \"nearest\" or \"bilinear\"", name, opts.Mode)
	}
	hasSize, hasScale := opts.Size != [2]int{}, opts.ScaleFactor != [2]float64{}
	if hasSize == hasScale {
		return nil, fmt.Errorf("nn: %s: set exactly one of Size %v and ScaleFactor %v", name, opts.Size, opts.ScaleFactor)
	}
	out := opts.Size
	var sf [2]float64
	for i := 0; i < 2; i++ {
		if hasScale {
			f := opts.ScaleFactor[i]
			if !(f > 0) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("nn: %s: ScaleFactor %v must be positive and finite", name, opts.ScaleFactor)
			}
			o := math.Floor(float64(s[2+i]) * f)
			if o > maxAxis {
				return nil, fmt.Errorf("nn: %s: output size %v above %d", name, o, maxAxis)
			}
			out[i], sf[i] = int(o), f
		}
	}
	if out[0] < 1 || out[1] < 1 || out[0] > maxAxis || out[1] > maxAxis {
		return nil, fmt.Errorf("nn: %s: output size %v must be in [1, %d]", name, out, maxAxis)
	}
	if err := checkElems(name, "the result", s[0], s[1], out[0], out[1]); err != nil {
		return nil, err
	}
	g := cpu.InterpGeom{Planes: s[0] * s[1], H: s[2], W: s[3], Nearest: nearest}
	if nearest {
		g.Rows, g.Cols = cpu.NearestAxis(s[2], out[0], sf[0]), cpu.NearestAxis(s[3], out[1], sf[1])
	} else if out[0] == s[2] && out[1] == s[3] {
		// torch copies when the size does not change, whatever the scale
		// factor that led there.
		g.Rows, g.Cols = cpu.IdentityAxis(s[2]), cpu.IdentityAxis(s[3])
	} else {
		g.Rows, g.Cols = cpu.LinearAxis(s[2], out[0], sf[0], opts.AlignCorners), cpu.LinearAxis(s[3], out[1], sf[1], opts.AlignCorners)
	}
	in, os := s.Clone(), tensor.Shape{s[0], s[1], out[0], out[1]}
	params := fmt.Sprintf("%+v %v", opts, in)
	spec := func(opName string, from, to tensor.Shape, forward bool) ad.OpSpec {
		return ad.OpSpec{
			Name: opName, Params: params, InputDims: []int{4}, OutputDims: 4,
			Shape:  ad.FixedShape("nn: "+opName, from, to),
			Kernel: ad.Floats(interpKernel[float32](&g, forward), interpKernel[float64](&g, forward)),
			// Interp and InterpTSet write every element.
			KernelOverwrites: true,
		}
	}
	fwd, _ := ad.LinearPair(withCUDA(spec(name, in, os, true), interpGPU{&g, true}), withCUDA(spec(name+"Transpose", os, in, false), interpGPU{&g, false}))
	return ad.Apply(fwd, input)
}

// interpKernel is Interp (forward) or its transpose, into a result it
// overwrites.
func interpKernel[T ad.Float](g *cpu.InterpGeom, forward bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return linearKernel(forward, func(in, out []T) { cpu.Interp(g, in, out) }, func(in, out []T) { cpu.InterpTSet(g, in, out) })
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// interpGPU is Interpolate on geometry g, or with !forward its transpose
// (interpolate_cuda.go).
type interpGPU struct {
	g       *cpu.InterpGeom
	forward bool
}
