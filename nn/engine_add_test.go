package nn_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/tensor"
)

// addOperands are Add's test operands of n elements, dtype dt: ordinary
// values, ±0, ±Inf and NaNs with different payloads in a and b (both NaN
// at some elements: the sum keeps one operand's payload, which must be
// StdEng's), and a dest tensor for reuse and incr.
func addOperands(dt tensor.Dtype, n int) (a, b, dest *tensor.Dense) {
	mk := func(seed int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Sin(float64(i*13+seed)) * float64(1+i%7)
		}
		return v
	}
	va, vb, vd := mk(1), mk(2), mk(3)
	for i := 0; i < n; i += 97 {
		va[i] = math.Float64frombits(0x7ff8000000000001 + uint64(i)) // NaN, payload i
		if i%2 == 0 {
			vb[i] = math.Float64frombits(0x7ff8000000100000 + uint64(i))
		}
	}
	for i := 5; i < n; i += 101 {
		va[i], vb[i] = math.Inf(1), math.Inf(-1)
	}
	for i := 7; i < n; i += 103 {
		va[i], vb[i] = math.Copysign(0, -1), math.Copysign(0, -1)
	}
	to := func(v []float64) *tensor.Dense {
		if dt == tensor.Float32 {
			f := make([]float32, n)
			for i, x := range v {
				if math.IsNaN(x) { // keep a payload in float32's mantissa
					f[i] = math.Float32frombits(0x7fc00000 | uint32(math.Float64bits(x)>>29)&0x3fffff | uint32(math.Float64bits(x))&0xff)
					continue
				}
				f[i] = float32(x)
			}
			return tensor.New(tensor.WithShape(n), tensor.WithBacking(f))
		}
		return tensor.New(tensor.WithShape(n), tensor.WithBacking(v))
	}
	return to(va), to(vb), to(vd)
}

// rawBits is a tensor's elements as bits (float32 widened bit for bit).
func rawBits(t tensor.Tensor) []uint64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]uint64, len(d))
		for i, v := range d {
			out[i] = uint64(math.Float32bits(v))
		}
		return out
	case []float64:
		out := make([]uint64, len(d))
		for i, v := range d {
			out[i] = math.Float64bits(v)
		}
		return out
	}
	return nil
}

// TestEngineAdd: Engine's and BitwiseEngine's Add give StdEng's bits (NaN
// payloads where one operand is NaN, a NaN where both are, ±Inf sums, −0
// included) and StdEng's result tensor (a new one, the reuse
// tensor, the incr tensor, a itself when unsafe), float32 and float64,
// lengths around the vector width, the copy-and-add chunk and the
// parallel split, at GOMAXPROCS 1 to 3; the reuse tensor may be a or b.
func TestEngineAdd(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, n := range []int{1, 7, 8, 9, 33, 2047, 2048, 2049, 100003} {
			for _, mode := range []string{"new", "reuse", "incr", "unsafe", "reuse-a", "reuse-b"} {
				for _, procs := range []int{1, 2, 3} {
					name := fmt.Sprintf("%v/%d/%s/procs%d", dt, n, mode, procs)
					run := func(e tensor.Engine) (tensor.Tensor, *tensor.Dense, *tensor.Dense, *tensor.Dense, error) {
						a, b, d := addOperands(dt, n)
						var opts []tensor.FuncOpt
						switch mode {
						case "reuse":
							opts = append(opts, tensor.WithReuse(d))
						case "incr":
							opts = append(opts, tensor.WithIncr(d))
						case "unsafe":
							opts = append(opts, tensor.UseUnsafe())
						case "reuse-a":
							opts = append(opts, tensor.WithReuse(a))
						case "reuse-b":
							opts = append(opts, tensor.WithReuse(b))
						}
						old := runtime.GOMAXPROCS(procs)
						defer runtime.GOMAXPROCS(old)
						out, err := e.(tensor.Adder).Add(a, b, opts...)
						return out, a, b, d, err
					}
					// Where both operands are NaN the sum is NaN, its payload
					// either one's (StdEng's compiled loop decides; -race
					// builds swap them).
					fa, fb, _ := addOperands(dt, n)
					both := make([]bool, n)
					va, vb := graphtest.Floats(fa), graphtest.Floats(fb)
					for i, v := range va {
						both[i] = math.IsNaN(v) && math.IsNaN(vb[i])
					}
					want, wa, wb, wd, errStd := run(tensor.StdEng{})
					for _, e := range []tensor.Engine{nn.Engine{}, nn.BitwiseEngine{}} {
						name := fmt.Sprintf("%s/%T", name, e)
						got, ga, gb, gd, err := run(e)
						if err != nil || errStd != nil {
							t.Fatalf("%s: Add error %v, StdEng's %v", name, err, errStd)
						}
						if i := firstDiff(got, want, both); i >= 0 {
							t.Fatalf("%s: Add differs from StdEng's at %d: %v against %v", name, i, graphtest.Floats(got)[i], graphtest.Floats(want)[i])
						}
						// The same tensor comes back (which of a, b, dest or a new one).
						which := func(out tensor.Tensor, a, b, d *tensor.Dense) string {
							switch out {
							case a:
								return "a"
							case b:
								return "b"
							case d:
								return "dest"
							}
							return "new"
						}
						if g, w := which(got, ga, gb, gd), which(want, wa, wb, wd); g != w {
							t.Errorf("%s: Add returned %s, StdEng %s", name, g, w)
						}
					}
				}
			}
		}
	}
}

// TestBitwiseEngineSum: BitwiseEngine's Sum is StdEng's, bit for bit, on
// the long float32 tensor whose blocked sum (Engine's) differs.
func TestBitwiseEngineSum(t *testing.T) {
	n := 1<<20 + 5
	f := make([]float32, n)
	for i := range f {
		f[i] = float32(0.1 + 0.01*float64(i%7))
	}
	x := tensor.New(tensor.WithShape(n), tensor.WithBacking(f))
	want, err := tensor.StdEng{}.Sum(x)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nn.BitwiseEngine{}.Sum(x)
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := nn.Engine{}.Sum(x)
	if err != nil {
		t.Fatal(err)
	}
	if got.Data() != want.Data() {
		t.Errorf("BitwiseEngine Sum = %v, StdEng's %v", got.Data(), want.Data())
	}
	if blocked.Data() == want.Data() {
		t.Errorf("Engine's blocked Sum %v equals StdEng's: the test no longer tells the two apart", blocked.Data())
	}
}

// firstDiff is the first element where got's bits differ from want's, at
// an element where both[i] only if one of the two is not NaN; −1 if none.
func firstDiff(got, want tensor.Tensor, both []bool) int {
	g, w := rawBits(got), rawBits(want)
	gf, wf := graphtest.Floats(got), graphtest.Floats(want)
	if len(g) != len(w) {
		return 0
	}
	for i := range g {
		if both[i] {
			if !math.IsNaN(gf[i]) || !math.IsNaN(wf[i]) {
				return i
			}
			continue
		}
		if g[i] != w[i] {
			return i
		}
	}
	return -1
}
