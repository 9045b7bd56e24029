//go:build cuda

package gops

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"unsafe"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/gorgonia/cuda"
	"gorgonia.org/tensor"
)

// The CUDA twins' shared plumbing: the kernels' PTX, device buffers, the
// launch, and withCUDA, which gives an op spec its twin. Each family's
// launch code is in its own *_cuda.go file, its kernels in kernels/*.cu.

// The kernels' PTX (gops/kernels/*.cu compiled by gops/kernels/gen).
var (
	//go:embed kernels/roialign.ptx
	roialignPTX string
	//go:embed kernels/psroialign.ptx
	psroialignPTX string
	//go:embed kernels/roipool.ptx
	roipoolPTX string
	//go:embed kernels/psroipool.ptx
	psroipoolPTX string
	//go:embed kernels/deformconv.ptx
	deformconvPTX string
	//go:embed kernels/layout.ptx
	layoutPTX string
)

// gpuModules are the PTX modules, registered as gops0, gops1, ...
var gpuModules = []string{roialignPTX, psroialignPTX, roipoolPTX, psroipoolPTX, deformconvPTX, layoutPTX}

// gpuModule is the prefix of the module names under which the kernels are
// registered.
const gpuModule = "gops"

var ptxEntry = regexp.MustCompile(`\.entry\s+([A-Za-z0-9_]+)\(`)

func init() {
	for i, ptx := range gpuModules {
		var fns []string
		for _, m := range ptxEntry.FindAllStringSubmatch(ptx, -1) {
			fns = append(fns, m[1])
		}
		gorgonia.AddToStdLib(fmt.Sprintf("%s%d", gpuModule, i), ptx, fns)
	}
}

// gpuFunc returns the loaded kernel name (its module is found by name).
func gpuFunc(e *cuda.Engine, name string) (cu.Function, error) {
	for i := range gpuModules {
		if fn, ok := e.Functions()[fmt.Sprintf("%s%d.%s", gpuModule, i, name)]; ok {
			return fn, nil
		}
	}
	return cu.Function{}, fmt.Errorf("gops: CUDA kernel %s is not loaded", name)
}

// gpuKernel is what a family's CUDA twin implements (in its *_cuda.go
// file): launch the kernels that compute out from in on the device; sfx is
// "_f32" or "_f64", the kernels' dtype suffix.
type gpuKernel interface {
	launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error
}

// withCUDA gives spec its CUDA twin k: CUDADo allocates the result (or uses
// the VM's preallocated one), with the shape from spec.Shape and the dtype
// spec.OutputDtype or the inputs', and has k launch the kernels.
func withCUDA(spec ad.OpSpec, k gpuKernel) ad.OpSpec {
	name, shapeOf, outDt := spec.Name, spec.Shape, spec.OutputDtype
	spec.CUDA = func(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (gorgonia.Value, error) {
		m, ok := extern.(gorgonia.CUDAMachine)
		if !ok || int(dev) < 0 || int(dev) >= len(m.Engines()) {
			return nil, fmt.Errorf("gops: %s: CUDADo without a CUDA machine for device %v", name, dev)
		}
		c := &gpuCall{m: m, dev: dev, e: &m.Engines()[int(dev)], ctx: m.Contexts()[int(dev)], name: name}
		defer c.release()
		c.e.DoWork()
		shapes := make([]tensor.Shape, len(inputs))
		for i, v := range inputs {
			shapes[i] = v.Shape()
		}
		shape, err := shapeOf(shapes)
		if err != nil {
			return nil, err
		}
		dt := inputs[0].Dtype()
		if dt != tensor.Float32 && dt != tensor.Float64 {
			return nil, fmt.Errorf("gops: %s: dtype %v on the GPU", name, dt)
		}
		sfx := "_f64"
		if dt == tensor.Float32 {
			sfx = "_f32"
		}
		if outDt.Type != nil {
			dt = outDt
		}
		out, err := c.output(prealloc, dt, shape)
		if err != nil {
			return nil, err
		}
		if err := k.launch(c, sfx, inputs, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	return spec
}

// gpuCall is one CUDADo: the device's engine and context, and temporary
// device buffers to give back.
type gpuCall struct {
	m     gorgonia.CUDAMachine
	dev   gorgonia.Device
	e     *cuda.Engine
	ctx   *cu.BatchedContext
	temps []tempBuf
	name  string
}

type tempBuf struct {
	mem  tensor.Memory
	size int64
}

func (c *gpuCall) release() {
	for _, t := range c.temps {
		c.e.Put(t.mem, t.size)
	}
}

// temp allocates size bytes on the device (at least 8).
func (c *gpuCall) temp(size int64) (cu.DevicePtr, error) {
	size = max(size, 8)
	mem, err := c.e.Get(size)
	if err != nil {
		return 0, fmt.Errorf("gops: %s: allocating %d bytes on %v: %w", c.name, size, c.dev, err)
	}
	c.temps = append(c.temps, tempBuf{mem, size})
	return cu.DevicePtr(mem.Uintptr()), nil
}

// upload copies a host slice into a new temporary device buffer.
func upload[E any](c *gpuCall, host []E) (cu.DevicePtr, error) {
	var z E
	size := int64(len(host)) * int64(unsafe.Sizeof(z))
	p, err := c.temp(size)
	if err != nil || len(host) == 0 {
		return p, err
	}
	c.ctx.MemcpyHtoD(p, unsafe.Pointer(&host[0]), size)
	return p, c.sync()
}

// download copies a device value's elements to the host.
func download[E any](c *gpuCall, v gorgonia.Value) ([]E, error) {
	var z E
	n := v.Shape().TotalSize()
	if v.Shape().IsScalar() {
		n = 1
	}
	host := make([]E, n)
	if n == 0 {
		return host, nil
	}
	c.ctx.MemcpyDtoH(unsafe.Pointer(&host[0]), cu.DevicePtr(v.Uintptr()), int64(n)*int64(unsafe.Sizeof(z)))
	return host, c.sync()
}

func (c *gpuCall) sync() error {
	c.ctx.DoWork()
	if err := c.ctx.Errors(); err != nil {
		return fmt.Errorf("gops: %s: CUDA: %w", c.name, err)
	}
	return nil
}

// launch runs kernel name over n work items (grid-stride loops in the
// kernels). gorgonia.org/cu copies exactly 8 bytes from each parameter's
// address, so every argument is held in an 8-byte variable: an int (an error
// beyond int32's range, the kernels' C int) as an int64 whose low 4 bytes are
// the C int, a float32 as its bits in the low 4 bytes, int64, float64 and
// device pointers as they are.
func (c *gpuCall) launch(name string, n int, args ...any) error {
	if n == 0 {
		return nil
	}
	// The kernels' grid-stride loops step an int index by up to
	// block·gridMax: past MaxInt32 - block·gridMax the last step overflows.
	const block, gridMax = 256, 1 << 16
	if n > math.MaxInt32-block*gridMax {
		return fmt.Errorf("gops: %s: %d work items exceed the CUDA kernels' int32 grid-stride range (at most %d)", c.name, n, math.MaxInt32-block*gridMax)
	}
	fn, err := gpuFunc(c.e, name)
	if err != nil {
		return err
	}
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			if v > math.MaxInt32 || v < math.MinInt32 {
				return fmt.Errorf("gops: %s: argument %d of %s (%d) exceeds int32", c.name, i, name, v)
			}
			x := int64(v) // 8 bytes (cu copies 8 per parameter); the low 4 are the C int
			params[i] = unsafe.Pointer(&x)
		case int64:
			x := v
			params[i] = unsafe.Pointer(&x)
		case cu.DevicePtr:
			x := v
			params[i] = unsafe.Pointer(&x)
		case float32:
			x := uint64(math.Float32bits(v)) // the float's bits in the low 4 of 8 bytes
			params[i] = unsafe.Pointer(&x)
		case float64:
			x := v
			params[i] = unsafe.Pointer(&x)
		default:
			return fmt.Errorf("gops: %s: argument %d of %s has type %T", c.name, i, name, a)
		}
	}
	grid := min((n+block-1)/block, gridMax)
	c.ctx.LaunchAndSync(fn, grid, 1, 1, block, 1, 1, 0, cu.NoStream, params)
	return c.sync()
}

// ptr is a value's device pointer.
func ptr(v gorgonia.Value) cu.DevicePtr { return cu.DevicePtr(v.Uintptr()) }

// output is prealloc when it fits, or a new device tensor.
func (c *gpuCall) output(prealloc gorgonia.Value, dt tensor.Dtype, shape tensor.Shape) (gorgonia.Value, error) {
	if p, ok := prealloc.(tensor.Tensor); ok && p.Dtype() == dt && p.Shape().Eq(shape) {
		return p, nil
	}
	size := int64(shape.TotalSize()) * int64(dt.Size())
	mem, err := c.m.Get(c.dev, max(size, 8))
	if err != nil {
		return nil, fmt.Errorf("gops: %s: allocating the result (%d bytes) on %v: %w", c.name, size, c.dev, err)
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.Of(dt), tensor.FromMemory(mem.Uintptr(), uintptr(max(size, 8))))
	tensor.WithEngine(c.e)(t)
	return t, nil
}

// intSize is a size the kernels index with a C int.
type intSize struct {
	what string
	v    int
}

// fitInt32 checks that the inputs, the output and the given sizes fit the
// kernels' int (int32): H·W planes, packed box grids and bins, index arrays.
func (c *gpuCall) fitInt32(in []gorgonia.Value, out gorgonia.Value, sizes ...intSize) error {
	for i, v := range in {
		sizes = append(sizes, intSize{fmt.Sprintf("input %d (%v)", i, v.Shape()), v.Shape().TotalSize()})
	}
	sizes = append(sizes, intSize{fmt.Sprintf("the result (%v)", out.Shape()), out.Shape().TotalSize()})
	for _, s := range sizes {
		if s.v < 0 || s.v > math.MaxInt32 {
			return fmt.Errorf("gops: %s: %s: %d elements exceed the CUDA kernels' int range", c.name, s.what, s.v)
		}
	}
	return nil
}

func unsafePtr[E any](s []E) unsafe.Pointer { return unsafe.Pointer(&s[0]) }
