//go:build cuda && cgo && linux && amd64

package emutest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/gops-dev/gops/internal/cuda/emu"
	"github.com/gops-dev/gops/internal/cuda/grid"
	"github.com/gops-dev/gops/internal/cuda/kernels"
	"gorgonia.org/cu"
)

// The cases on a real GPU (build tag cuda: scripts/cuda-check's bundle).
// After the emulated launches, Run launches the case's kernel from the
// committed PTX on device 0 with the same arguments (each emulated buffer
// copied to device memory, pointers at the same offsets), over the host
// code's grid and over a grid capped at 3 blocks, and runs the case's
// Check on the downloaded outputs: the GPU's results compared with the Go
// kernel's exactly as the emulator's are (bitwise, except where the test
// states a tolerance). gorgonia.org/cu's init exits where there is no GPU,
// so a cuda test binary runs only on a machine with one.

func init() { gpuRun = runGPU }

// gpuGrids are the grid caps of the GPU launches: the host code's, and 3
// blocks (every thread loops over many items).
var gpuGrids = []int{grid.GridMax, 3}

// gpuState is the test binary's own CUDA context and every kernel of the
// PTX of both kernel folders, loaded once.
type gpuState struct {
	ctx cu.CUContext
	fns map[string]cu.Function
	err error
}

var (
	gpuOnce sync.Once
	gpu     gpuState
	// gpuLaunches counts the GPU launches whose outputs passed Check.
	gpuLaunches struct {
		sync.Mutex
		n map[string]int
	}
)

// gpuInit makes the context and loads the modules on the calling
// goroutine's locked thread, then pops the context.
func gpuInit() {
	dev, err := cu.GetDevice(0)
	if err != nil {
		gpu.err = fmt.Errorf("device 0: %w", err)
		return
	}
	ctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		gpu.err = fmt.Errorf("context on device 0: %w", err)
		return
	}
	defer cu.PopCurrentCtx()
	gpu.ctx = ctx
	gpu.fns = map[string]cu.Function{}
	for _, dir := range []string{"gops", "nn"} {
		for _, ptx := range kernels.PTX(dir) {
			mod, err := cu.LoadData(ptx)
			if err != nil {
				gpu.err = fmt.Errorf("loading a PTX module of %s: %w", dir, err)
				return
			}
			for _, name := range kernels.EntryNames(ptx) {
				fn, err := mod.Function(name)
				if err != nil {
					gpu.err = fmt.Errorf("kernel %s: %w", name, err)
					return
				}
				gpu.fns[name] = fn
			}
		}
	}
}

// devBuf is an emulated buffer's copy in device memory.
type devBuf struct {
	b *emu.Buffer
	p cu.DevicePtr
}

// runGPU runs c on the GPU as the file comment says.
func runGPU(t *testing.T, c Case) {
	t.Helper()
	if c.N == 0 { // the host code launches nothing
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpuOnce.Do(gpuInit)
	if gpu.err != nil {
		t.Fatalf("GPU: %v", gpu.err)
	}
	fn, ok := gpu.fns[c.Name]
	if !ok {
		t.Fatalf("GPU: no kernel %s in the PTX", c.Name)
	}
	if err := cu.PushCurrentCtx(gpu.ctx); err != nil {
		t.Fatalf("GPU: %v", err)
	}
	defer cu.PopCurrentCtx()
	for _, gmax := range gpuGrids {
		if c.Init != nil {
			c.Init()
		} else {
			for _, o := range c.Outs {
				o.B.Fill()
			}
		}
		if err := launchGPU(fn, c, gmax); err != nil {
			t.Fatalf("%s, n=%d on the GPU (grid ≤ %d): %v", c.Name, c.N, gmax, err)
		}
		if err := c.Check(); err != nil {
			t.Fatalf("%s, n=%d on the GPU (grid ≤ %d): %v", c.Name, c.N, gmax, err)
		}
		gpuLaunches.Lock()
		if gpuLaunches.n == nil {
			gpuLaunches.n = map[string]int{}
		}
		gpuLaunches.n[c.Name]++
		gpuLaunches.Unlock()
	}
}

// launchGPU copies every buffer that c's arguments point into to the
// device, launches fn with c's arguments laid out as the emulator lays
// them out (emu.Pack: glue.Call.Launch's 8-byte slots) with the device
// addresses in the pointers' slots, waits, copies c's outputs back into
// their emulated buffers and frees the device memory.
func launchGPU(fn cu.Function, c Case, gridMax int) (err error) {
	var bufs []devBuf
	defer func() {
		for _, d := range bufs {
			if e := cu.MemFree(d.p); e != nil && err == nil {
				err = fmt.Errorf("freeing device memory: %w", e)
			}
		}
	}()
	devOf := func(b *emu.Buffer) (cu.DevicePtr, error) {
		for _, d := range bufs {
			if d.b == b {
				return d.p, nil
			}
		}
		raw := b.Bytes()
		p, err := cu.MemAlloc(int64(max(len(raw), 8)))
		if err != nil {
			return 0, fmt.Errorf("allocating %d bytes: %w", len(raw), err)
		}
		bufs = append(bufs, devBuf{b, p})
		if len(raw) > 0 {
			if err := cu.MemcpyHtoD(p, unsafe.Pointer(unsafe.SliceData(raw)), int64(len(raw))); err != nil {
				return 0, fmt.Errorf("copying %d bytes to the device: %w", len(raw), err)
			}
		}
		return p, nil
	}
	slots, err := emu.Pack(c.Name, c.Args...) // checked against the kernel's parameters
	if err != nil {
		return err
	}
	for i, a := range c.Args { // the emulated addresses become device ones
		v, ok := a.(emu.Ptr)
		if !ok || v == 0 {
			continue
		}
		b, off, ok := emu.Find(v)
		if !ok {
			return fmt.Errorf("argument %d points into no emulated buffer", i)
		}
		p, err := devOf(b)
		if err != nil {
			return err
		}
		slots[i] = uint64(p) + uint64(off)
	}
	for _, o := range c.Outs { // an output no argument points to is still copied back (and checked)
		if _, err := devOf(o.B); err != nil {
			return err
		}
	}
	params := make([]unsafe.Pointer, len(slots))
	for i := range slots {
		params[i] = unsafe.Pointer(&slots[i])
	}
	if err := fn.Launch(grid.GridWith(c.N, gridMax), 1, 1, grid.Block, 1, 1, 0, cu.NoStream, params); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("running: %w", err)
	}
	for _, o := range c.Outs {
		raw := o.B.Bytes()
		if len(raw) == 0 {
			continue
		}
		p, _ := devOf(o.B)
		if err := cu.MemcpyDtoH(unsafe.Pointer(unsafe.SliceData(raw)), p, int64(len(raw))); err != nil {
			return fmt.Errorf("copying an output back: %w", err)
		}
	}
	return nil
}

// gpuSummary is, for Ran.Check, how many GPU launches of a folder's
// entries passed, and the entries with none.
func gpuSummary(entries []string) (string, []string) {
	gpuLaunches.Lock()
	defer gpuLaunches.Unlock()
	n := 0
	var missing []string
	for _, e := range entries {
		if gpuLaunches.n[e] == 0 {
			missing = append(missing, e)
		}
		n += gpuLaunches.n[e]
	}
	return fmt.Sprintf("on the GPU: %d of %d PTX entries, %d launches compared with the Go kernels", len(entries)-len(missing), len(entries), n), missing
}

func init() { gpuReport = gpuSummary }
