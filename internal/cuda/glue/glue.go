//go:build cuda

package glue

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gops-dev/gops/internal/cuda/grid"
	"github.com/gops-dev/gops/internal/cuda/kernels"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/gorgonia/cuda"
	"gorgonia.org/tensor"
)

// Module is a package's kernels: its PTX modules, registered with Gorgonia
// as Name0, Name1, ... (gops0, ...; gopsnn0, ...).
type Module struct {
	// Pkg prefixes every error ("gops", "nn").
	Pkg string
	// Name is the prefix of the registered module names.
	Name string
	// PTX holds the modules' PTX, in registration order. The kernels
	// index with 64 bits: every integer argument is a long long, and an
	// int result needs Go's int to be 64-bit.
	PTX []string
}

// Register registers the PTX modules of internal/cuda/kernels/<pkg> (every
// one the folder holds, embedded by pattern), with their entry points, in
// Gorgonia's CUDA standard library as name0, name1, ..., and returns them as
// a Module whose errors begin with pkg. Call it once per package, from a
// package-level variable of its cuda build, before any TapeMachine is made.
func Register(pkg, name string) *Module {
	m := &Module{Pkg: pkg, Name: name, PTX: kernels.PTX(pkg)}
	for i, ptx := range m.PTX {
		gorgonia.AddToStdLib(fmt.Sprintf("%s%d", m.Name, i), ptx, kernels.EntryNames(ptx))
	}
	return m
}

// Func returns the loaded kernel name (its module is found by name).
func (m *Module) Func(e *cuda.Engine, name string) (cu.Function, error) {
	for i := range m.PTX {
		if fn, ok := e.Functions()[fmt.Sprintf("%s%d.%s", m.Name, i, name)]; ok {
			return fn, nil
		}
	}
	return cu.Function{}, fmt.Errorf("%s: CUDA kernel %s is not loaded", m.Pkg, name)
}

// Launcher is a CUDA twin's launch code: it runs the kernels that compute
// out from in on the device; sfx is "_f32" or "_f64", the kernels' dtype
// suffix. The result is not zeroed: the kernels write every element of it.
type Launcher func(c *Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error

// Kernel is an op's CUDA descriptor, declared beside the op in package
// gops or nn: its Launch, in the family's *_cuda.go file, is the Launcher
// that runs its kernels.
type Kernel interface {
	Launch(c *Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error
}

// TwinFunc is an op's CUDA twin, the type of ad.OpSpec.CUDA: it computes the
// op's result on device dev (Gorgonia's CUDADoer).
type TwinFunc = func(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (gorgonia.Value, error)

// Twin returns the CUDA twin of op name (an ad.OpSpec's Name, Shape and
// OutputDtype; this package imports no public package): it allocates the
// result (or uses the VM's preallocated one), with the shape from shapeOf
// and the dtype outDt or, when outDt is the zero Dtype, the first input's,
// and has launch run m's kernels. The first input's dtype, Float32 or
// Float64 (else an error), is the Call's Dt and picks the suffix.
func (m *Module) Twin(name string, shapeOf func([]tensor.Shape) (tensor.Shape, error), outDt tensor.Dtype, launch Launcher) TwinFunc {
	return func(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (gorgonia.Value, error) {
		cm, ok := extern.(gorgonia.CUDAMachine)
		if !ok || int(dev) < 0 || int(dev) >= len(cm.Engines()) {
			return nil, fmt.Errorf("%s: %s: CUDADo without a CUDA machine for device %v", m.Pkg, name, dev)
		}
		c := &Call{M: cm, Dev: dev, E: &cm.Engines()[int(dev)], Ctx: cm.Contexts()[int(dev)], Name: name, mod: m}
		defer c.release()
		c.E.DoWork()
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
			return nil, fmt.Errorf("%s: %s: dtype %v on the GPU", m.Pkg, name, dt)
		}
		c.Dt = dt
		sfx := "_f64"
		if dt == tensor.Float32 {
			sfx = "_f32"
		}
		if outDt.Type != nil {
			if outDt == tensor.Int && tensor.Int.Size() != 8 {
				return nil, fmt.Errorf("%s: %s: the GPU kernels need a 64-bit int", m.Pkg, name)
			}
			dt = outDt
		}
		out, err := c.output(prealloc, dt, shape)
		if err != nil {
			return nil, err
		}
		if err := launch(c, sfx, inputs, out); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// Call is one CUDADo: the device's engine and context, the op's float
// dtype, and temporary device buffers, given back when it returns.
type Call struct {
	M    gorgonia.CUDAMachine
	Dev  gorgonia.Device
	E    *cuda.Engine
	Ctx  *cu.BatchedContext
	Dt   tensor.Dtype // the first input's: Float32 or Float64
	Name string       // the op's, for errors

	mod   *Module
	temps []tempBuf
}

type tempBuf struct {
	mem  tensor.Memory
	size int64
}

func (c *Call) release() {
	for _, t := range c.temps {
		c.E.Put(t.mem, t.size)
	}
}

// Temp allocates size bytes on the device (at least 8), given back when
// the CUDADo returns.
func (c *Call) Temp(size int64) (cu.DevicePtr, error) {
	size = max(size, 8)
	mem, err := c.E.Get(size)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: allocating %d bytes on %v: %w", c.mod.Pkg, c.Name, size, c.Dev, err)
	}
	c.temps = append(c.temps, tempBuf{mem, size})
	return cu.DevicePtr(mem.Uintptr()), nil
}

// TempTensor is a temporary device tensor of n elements of the op's float
// dtype, for cuBLAS, which takes device memory as Go slices.
func (c *Call) TempTensor(n int) (*tensor.Dense, error) {
	size := int64(max(n, 1)) * int64(c.Dt.Size())
	p, err := c.Temp(size)
	if err != nil {
		return nil, err
	}
	t := tensor.New(tensor.WithShape(max(n, 1)), tensor.Of(c.Dt), tensor.FromMemory(uintptr(p), uintptr(size)))
	tensor.WithEngine(c.E)(t)
	return t, nil
}

// Upload copies a host slice into a new temporary device buffer.
func Upload[E any](c *Call, host []E) (cu.DevicePtr, error) {
	var z E
	size := int64(len(host)) * int64(unsafe.Sizeof(z))
	p, err := c.Temp(size)
	if err != nil || len(host) == 0 {
		return p, err
	}
	c.Ctx.MemcpyHtoD(p, unsafe.Pointer(&host[0]), size)
	return p, c.Sync()
}

// Download copies n elements at device address p to the host.
func Download[E any](c *Call, p cu.DevicePtr, n int) ([]E, error) {
	var z E
	host := make([]E, n)
	if n == 0 {
		return host, nil
	}
	c.Ctx.MemcpyDtoH(unsafe.Pointer(&host[0]), p, int64(n)*int64(unsafe.Sizeof(z)))
	return host, c.Sync()
}

// Sync runs the context's queued work and returns its error, if any.
func (c *Call) Sync() error {
	c.Ctx.DoWork()
	if err := c.Ctx.Errors(); err != nil {
		return fmt.Errorf("%s: %s: CUDA: %w", c.mod.Pkg, c.Name, err)
	}
	return nil
}

// Float is v as the kernels' T: a float32 for the _f32 kernels (rounded
// as the Go kernels' T(v)), a float64 for the _f64 ones.
func (c *Call) Float(v float64) any {
	if c.Dt == tensor.Float32 {
		return float32(v)
	}
	return v
}

// Launch runs kernel name over n work items (grid-stride loops in the
// kernels). gorgonia.org/cu copies exactly 8 bytes from each parameter's
// address, so every argument is held in an 8-byte variable: an int, int64
// or bool as the kernels' long long, a float32 as its bits in the low 4
// bytes, a float64 and device pointers as they are.
func (c *Call) Launch(name string, n int, args ...any) error {
	if n == 0 {
		return nil
	}
	fn, err := c.mod.Func(c.E, name)
	if err != nil {
		return err
	}
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		var x uint64 // the 8 bytes cu copies; on little-endian hosts a float is the low 4
		switch v := a.(type) {
		case int:
			x = uint64(int64(v))
		case int64:
			x = uint64(v)
		case bool:
			if v {
				x = 1
			}
		case cu.DevicePtr:
			x = uint64(v)
		case float32:
			x = uint64(math.Float32bits(v))
		case float64:
			x = math.Float64bits(v)
		default:
			return fmt.Errorf("%s: %s: argument %d of %s has type %T", c.mod.Pkg, c.Name, i, name, a)
		}
		params[i] = unsafe.Pointer(&x)
	}
	c.Ctx.LaunchAndSync(fn, grid.Grid(n), 1, 1, grid.Block, 1, 1, 0, cu.NoStream, params)
	return c.Sync()
}

// Ptr is a value's device pointer.
func Ptr(v gorgonia.Value) cu.DevicePtr { return cu.DevicePtr(v.Uintptr()) }

// Size is a value's number of elements (1 for a scalar).
func Size(v gorgonia.Value) int {
	if v.Shape().IsScalar() {
		return 1
	}
	return v.Shape().TotalSize()
}

// output is prealloc when it fits, or a new device tensor.
func (c *Call) output(prealloc gorgonia.Value, dt tensor.Dtype, shape tensor.Shape) (gorgonia.Value, error) {
	if p, ok := prealloc.(tensor.Tensor); ok && p.Dtype() == dt && p.Shape().Eq(shape) {
		return p, nil
	}
	size := int64(shape.TotalSize()) * int64(dt.Size())
	mem, err := c.M.Get(c.Dev, max(size, 8))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: allocating the result (%d bytes) on %v: %w", c.mod.Pkg, c.Name, size, c.Dev, err)
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.Of(dt), tensor.FromMemory(mem.Uintptr(), uintptr(max(size, 8))))
	tensor.WithEngine(c.E)(t)
	return t, nil
}
