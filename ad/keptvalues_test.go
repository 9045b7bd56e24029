package ad_test

import (
	"runtime"
	"testing"
	"time"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestDefaultKeepsValues: without ReuseResults, a Value() kept from any
// earlier run of a TapeMachine is never overwritten by a later run, even
// with collections in between that hand unreferenced results back for
// reuse (results of 64 KiB to 4 MiB are recycled, recycle.go): six runs of
// y = x², z = y² on 16384 float64s (128 KiB results) with new x, each
// run's y and z kept, all checked after the last run.
func TestDefaultKeepsValues(t *testing.T) {
	const n = 1 << 14
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(n), gorgonia.WithName("x"))
	y, z := squares(t, x)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	type kept struct {
		x0   float64
		y, z gorgonia.Value
	}
	var runs []kept
	for run := range 6 {
		x0 := float64(run + 2)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = x0
		}
		if err := gorgonia.Let(x, tensor.New(tensor.WithShape(n), tensor.WithBacking(xs))); err != nil {
			t.Fatal(err)
		}
		m.Reset()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, kept{x0, y.Value(), z.Value()})
		runtime.GC()
		time.Sleep(time.Millisecond) // finalizers run on their own goroutine
	}
	for run, k := range runs {
		for name, c := range map[string]struct {
			v    gorgonia.Value
			want float64
		}{"y": {k.y, k.x0 * k.x0}, "z": {k.z, k.x0 * k.x0 * k.x0 * k.x0}} {
			d := c.v.Data().([]float64)
			for i, v := range d {
				if v != c.want {
					t.Fatalf("run %d's %s[%d] = %v after later runs, want %v", run, name, i, v, c.want)
				}
			}
		}
	}
}
