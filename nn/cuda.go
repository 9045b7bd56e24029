//go:build cuda

package nn

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

// The CUDA twins' shared plumbing, as gops/cuda.go's: the kernels' PTX,
// device buffers, the launch, and withCUDA, which gives an op spec its
// twin. Each family's launch code is in its own *_cuda.go file, its
// kernels in kernels/*.cu, its descriptor in gpu.go. Unlike gops' kernels,
// nn's index with 64 bits: every integer kernel argument is a long long.

// The kernels' PTX (nn/kernels/*.cu compiled by gops/kernels/gen).
var (
	//go:embed kernels/activation.ptx
	activationPTX string
	//go:embed kernels/conv.ptx
	convPTX string
	//go:embed kernels/dropout.ptx
	dropoutPTX string
	//go:embed kernels/interp.ptx
	interpPTX string
	//go:embed kernels/layout.ptx
	layoutPTX string
	//go:embed kernels/loss.ptx
	lossPTX string
	//go:embed kernels/norm.ptx
	normPTX string
	//go:embed kernels/pool.ptx
	poolPTX string
	//go:embed kernels/softmax.ptx
	softmaxPTX string
)

// gpuModules are the PTX modules, registered as gopsnn0, gopsnn1, ...
var gpuModules = []string{activationPTX, convPTX, dropoutPTX, interpPTX, layoutPTX, lossPTX, normPTX, poolPTX, softmaxPTX}

// gpuModule is the prefix of the module names under which the kernels are
// registered (gops' are "gops0", ...).
const gpuModule = "gopsnn"

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
	return cu.Function{}, fmt.Errorf("nn: CUDA kernel %s is not loaded", name)
}

// gpuKernel is what a family's CUDA twin implements (in its *_cuda.go
// file): launch the kernels that compute out from in on the device; sfx is
// "_f32" or "_f64", the kernels' dtype suffix. The result is not zeroed:
// the kernels write every element of it.
type gpuKernel interface {
	launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error
}

// withCUDA gives spec its CUDA twin k: CUDADo allocates the result (or uses
// the VM's preallocated one), with the shape from spec.Shape and the dtype
// spec.OutputDtype or the first input's, and has k launch the kernels.
func withCUDA(spec ad.OpSpec, k gpuKernel) ad.OpSpec {
	name, shapeOf, outDt := spec.Name, spec.Shape, spec.OutputDtype
	spec.CUDA = func(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (gorgonia.Value, error) {
		m, ok := extern.(gorgonia.CUDAMachine)
		if !ok || int(dev) < 0 || int(dev) >= len(m.Engines()) {
			return nil, fmt.Errorf("nn: %s: CUDADo without a CUDA machine for device %v", name, dev)
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
			return nil, fmt.Errorf("nn: %s: dtype %v on the GPU", name, dt)
		}
		c.dt = dt
		sfx := "_f64"
		if dt == tensor.Float32 {
			sfx = "_f32"
		}
		if outDt.Type != nil {
			if outDt == tensor.Int && tensor.Int.Size() != 8 {
				return nil, fmt.Errorf("nn: %s: the GPU kernels need a 64-bit int", name)
			}
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

// gpuCall is one CUDADo: the device's engine and context, the op's float
// dtype, and temporary device buffers to give back.
type gpuCall struct {
	m     gorgonia.CUDAMachine
	dev   gorgonia.Device
	e     *cuda.Engine
	ctx   *cu.BatchedContext
	dt    tensor.Dtype
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
		return 0, fmt.Errorf("nn: %s: allocating %d bytes on %v: %w", c.name, size, c.dev, err)
	}
	c.temps = append(c.temps, tempBuf{mem, size})
	return cu.DevicePtr(mem.Uintptr()), nil
}

// tempTensor is a temporary device tensor of n elements of the op's float
// dtype, for cuBLAS, which takes device memory as Go slices.
func (c *gpuCall) tempTensor(n int) (*tensor.Dense, error) {
	size := int64(max(n, 1)) * int64(c.dt.Size())
	p, err := c.temp(size)
	if err != nil {
		return nil, err
	}
	t := tensor.New(tensor.WithShape(max(n, 1)), tensor.Of(c.dt), tensor.FromMemory(uintptr(p), uintptr(size)))
	tensor.WithEngine(c.e)(t)
	return t, nil
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

// download copies n elements at device address p to the host.
func download[E any](c *gpuCall, p cu.DevicePtr, n int) ([]E, error) {
	var z E
	host := make([]E, n)
	if n == 0 {
		return host, nil
	}
	c.ctx.MemcpyDtoH(unsafe.Pointer(&host[0]), p, int64(n)*int64(unsafe.Sizeof(z)))
	return host, c.sync()
}

func (c *gpuCall) sync() error {
	c.ctx.DoWork()
	if err := c.ctx.Errors(); err != nil {
		return fmt.Errorf("nn: %s: CUDA: %w", c.name, err)
	}
	return nil
}

// float is v as the kernels' T: a float32 for the _f32 kernels (rounded
// as the Go kernels' T(v)), a float64 for the _f64 ones.
func (c *gpuCall) float(v float64) any {
	if c.dt == tensor.Float32 {
		return float32(v)
	}
	return v
}

// launch runs kernel name over n work items (grid-stride loops in the
// kernels, 64-bit indices). gorgonia.org/cu copies exactly 8 bytes from
// each parameter's address, so every argument is held in an 8-byte
// variable: an int or int64 as the kernels' long long, a float32 as its
// bits in the low 4 bytes, a float64 and device pointers as they are.
func (c *gpuCall) launch(name string, n int, args ...any) error {
	if n == 0 {
		return nil
	}
	fn, err := gpuFunc(c.e, name)
	if err != nil {
		return err
	}
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			x := int64(v)
			params[i] = unsafe.Pointer(&x)
		case int64:
			x := v
			params[i] = unsafe.Pointer(&x)
		case bool:
			x := int64(0)
			if v {
				x = 1
			}
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
			return fmt.Errorf("nn: %s: argument %d of %s has type %T", c.name, i, name, a)
		}
	}
	const block, gridMax = 256, 1 << 16
	grid := min((n+block-1)/block, gridMax)
	c.ctx.LaunchAndSync(fn, grid, 1, 1, block, 1, 1, 0, cu.NoStream, params)
	return c.sync()
}

// fill writes v into the n elements of the op's float dtype at p.
func (c *gpuCall) fill(sfx string, p cu.DevicePtr, v float64, n int) error {
	return c.launch("layout_fill"+sfx, n, p, c.float(v), n)
}

// ptr is a value's device pointer.
func ptr(v gorgonia.Value) cu.DevicePtr { return cu.DevicePtr(v.Uintptr()) }

// size is a value's number of elements (1 for a scalar).
func size(v gorgonia.Value) int {
	if v.Shape().IsScalar() {
		return 1
	}
	return v.Shape().TotalSize()
}

// output is prealloc when it fits, or a new device tensor.
func (c *gpuCall) output(prealloc gorgonia.Value, dt tensor.Dtype, shape tensor.Shape) (gorgonia.Value, error) {
	if p, ok := prealloc.(tensor.Tensor); ok && p.Dtype() == dt && p.Shape().Eq(shape) {
		return p, nil
	}
	size := int64(shape.TotalSize()) * int64(dt.Size())
	mem, err := c.m.Get(c.dev, max(size, 8))
	if err != nil {
		return nil, fmt.Errorf("nn: %s: allocating the result (%d bytes) on %v: %w", c.name, size, c.dev, err)
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.Of(dt), tensor.FromMemory(mem.Uintptr(), uintptr(max(size, 8))))
	tensor.WithEngine(c.e)(t)
	return t, nil
}
