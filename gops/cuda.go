//go:build cuda

package gops

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"unsafe"

	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/gorgonia/cuda"
	"gorgonia.org/tensor"
)

// cudaBuild says whether this build has the cuda tag.
const cudaBuild = true

// The kernels' PTX (gops/kernels/*.cu compiled by gops/kernels/gen).
var (
	//go:embed kernels/roialign.ptx
	roialignPTX string
	//go:embed kernels/roipool.ptx
	roipoolPTX string
	//go:embed kernels/deform.ptx
	deformPTX string
	//go:embed kernels/layout.ptx
	layoutPTX string
)

// gpuModule is the module name under which the kernels are registered.
const gpuModule = "gops"

var ptxEntry = regexp.MustCompile(`\.entry\s+([A-Za-z0-9_]+)\(`)

func init() {
	for i, ptx := range []string{roialignPTX, roipoolPTX, deformPTX, layoutPTX} {
		var fns []string
		for _, m := range ptxEntry.FindAllStringSubmatch(ptx, -1) {
			fns = append(fns, m[1])
		}
		gorgonia.AddToStdLib(fmt.Sprintf("%s%d", gpuModule, i), ptx, fns)
	}
}

// gpuFunc returns the loaded kernel name (its module is found by name).
func gpuFunc(e *cuda.Engine, name string) (cu.Function, error) {
	for i := 0; i < 4; i++ {
		if fn, ok := e.Functions()[fmt.Sprintf("%s%d.%s", gpuModule, i, name)]; ok {
			return fn, nil
		}
	}
	return cu.Function{}, fmt.Errorf("gops: CUDA kernel %s is not loaded", name)
}

var _ gorgonia.CUDADoer = (*Op)(nil)

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

// CUDADo implements gorgonia.CUDADoer: the op's CUDA twin on device dev.
// Inputs are on the device; the result is written to prealloc when the VM
// gives one, otherwise to memory from the device's allocator. An op without
// a twin (OpSpec.gpu nil: an OpSpec of the package's users, say) runs its
// Forward on the host, its inputs copied there and its result back.
func (op *Op) CUDADo(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (gorgonia.Value, error) {
	if len(inputs) != op.Arity() {
		return nil, fmt.Errorf("gops: %s: got %d inputs, want %d", op.spec.Name, len(inputs), op.Arity())
	}
	m, ok := extern.(gorgonia.CUDAMachine)
	if !ok || int(dev) < 0 || int(dev) >= len(m.Engines()) {
		return nil, fmt.Errorf("gops: %s: CUDADo without a CUDA machine for device %v", op.spec.Name, dev)
	}
	c := &gpuCall{m: m, dev: dev, e: &m.Engines()[int(dev)], ctx: m.Contexts()[int(dev)], name: op.spec.Name}
	defer c.release()
	c.e.DoWork()
	shapes := make([]tensor.Shape, len(inputs))
	for i, v := range inputs {
		shapes[i] = v.Shape()
	}
	shape, err := op.spec.Shape(shapes)
	if err != nil {
		return nil, err
	}
	dt := inputs[0].Dtype()
	if r, ok := op.spec.gpu.(gpuRoIPool); ok && r.kind == gpuArgmax {
		dt = tensor.Int
	}
	if dt == tensor.Int && op.spec.gpu == nil || dt != tensor.Int && dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("gops: %s: dtype %v on the GPU", op.spec.Name, dt)
	}
	out, err := c.output(prealloc, dt, shape)
	if err != nil {
		return nil, err
	}
	if op.spec.gpu == nil {
		return out, c.onHost(op, out, inputs)
	}
	sfx := "_f64"
	if inputs[0].Dtype() == tensor.Float32 {
		sfx = "_f32"
	}
	switch g := op.spec.gpu.(type) {
	case gpuRoIAlign:
		err = c.roiAlign(g, sfx, inputs, out)
	case gpuPSRoI:
		err = c.psRoI(g, sfx, inputs, out)
	case gpuRoIPool:
		err = c.roiPool(g, sfx, inputs, out)
	case gpuDeform:
		err = c.deform(g, sfx, inputs, out)
	case gpuOffsetLayout:
		rows := g.g.maskLen() / max(g.g.l(), 1)
		if g.embed {
			err = c.launch("offset_embed"+sfx, out.Shape().TotalSize(), ptr(inputs[0]), ptr(out), rows, g.g.l(), g.which)
		} else {
			err = c.launch("offset_split"+sfx, out.Shape().TotalSize(), ptr(inputs[0]), ptr(out), rows, g.g.l(), g.which)
		}
	case gpuReshape:
		n := out.Shape().TotalSize()
		err = c.launch("layout_copy"+sfx, n, ptr(inputs[0]), ptr(out), n)
	case gpuSwap01:
		n := out.Shape().TotalSize()
		if g.bias {
			err = c.launch("layout_swap01_bias"+sfx, n, ptr(inputs[0]), ptr(inputs[1]), ptr(out), g.a, g.b, n/max(g.a*g.b, 1))
		} else {
			err = c.launch("layout_swap01"+sfx, n, ptr(inputs[0]), ptr(out), g.a, g.b, n/max(g.a*g.b, 1))
		}
	default:
		err = fmt.Errorf("gops: %s: no CUDA twin for %T", op.spec.Name, g)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

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

// onHost runs the op's Forward on host copies of the inputs and copies the
// result into out.
func (c *gpuCall) onHost(op *Op, out gorgonia.Value, inputs []gorgonia.Value) error {
	host := make([]gorgonia.Value, len(inputs))
	for i, v := range inputs {
		var err error
		switch v.Dtype() {
		case tensor.Float32:
			var d []float32
			if d, err = download[float32](c, v); err == nil {
				host[i] = tensor.New(tensor.WithShape(v.Shape()...), tensor.WithBacking(d))
			}
		case tensor.Float64:
			var d []float64
			if d, err = download[float64](c, v); err == nil {
				host[i] = tensor.New(tensor.WithShape(v.Shape()...), tensor.WithBacking(d))
			}
		default:
			err = fmt.Errorf("gops: %s: input %d dtype %v on the GPU", op.spec.Name, i, v.Dtype())
		}
		if err != nil {
			return err
		}
	}
	r, err := op.spec.Forward(host)
	if err != nil {
		return err
	}
	rt, ok := r.(tensor.Tensor)
	if !ok || rt.Shape().TotalSize() != out.Shape().TotalSize() {
		return fmt.Errorf("gops: %s: host result %v does not fit the device result %v", op.spec.Name, r.Shape(), out.Shape())
	}
	var src unsafe.Pointer
	switch d := rt.Data().(type) {
	case []float32:
		if len(d) > 0 {
			src = unsafe.Pointer(&d[0])
		}
	case []float64:
		if len(d) > 0 {
			src = unsafe.Pointer(&d[0])
		}
	default:
		return fmt.Errorf("gops: %s: host result %T", op.spec.Name, d)
	}
	if src != nil {
		c.ctx.MemcpyHtoD(ptr(out), src, int64(rt.MemSize()))
	}
	return c.sync()
}

func unsafePtr[E any](s []E) unsafe.Pointer { return unsafe.Pointer(&s[0]) }
