package gops_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/tensor"
)

// nmsBenchData is scripts/bench_torchvision.py's NMS/5000 input: 5,000
// float32 boxes on an 800×1088 image, sides 16 to 256 pixels, from a
// 32-bit LCG shared by both sides (x ← 1664525·x + 1013904223 mod 2³², u =
// x/2³²), scores uniform; threshold 0.5.
func nmsBenchData(k int) (boxes, scores *tensor.Dense) {
	x := uint32(12345)
	u := func() float32 {
		x = 1664525*x + 1013904223
		return float32(float64(x) / 4294967296)
	}
	b, s := make([]float32, 4*k), make([]float32, k)
	for i := 0; i < k; i++ {
		cx, cy := u()*1088, u()*800
		w, h := 16+u()*240, 16+u()*240
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = cx-w/2, cy-h/2, cx+w/2, cy+h/2
		s[i] = u()
	}
	return tensor.New(tensor.WithShape(k, 4), tensor.WithBacking(b)), tensor.New(tensor.WithShape(k), tensor.WithBacking(s))
}

// BenchmarkNMS is torchvision.ops.nms on 5,000 boxes (NMS/5000 in
// scripts/bench_torchvision.py).
func BenchmarkNMS(b *testing.B) {
	b.Run("5000", func(b *testing.B) {
		boxes, scores := nmsBenchData(5000)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := gops.NMS(boxes, scores, 0.5); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestNMSAgainstQuadratic compares NMS with the plain O(K²) loop of
// torchvision's kernel on random boxes, ties and repeated boxes included.
func TestNMSAgainstQuadratic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 40; trial++ {
		k := 1 + rng.IntN(300)
		b, s := make([]float64, 4*k), make([]float64, k)
		for i := 0; i < k; i++ {
			x, y := rng.Float64()*100, rng.Float64()*100
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = x, y, x+1+rng.Float64()*30, y+1+rng.Float64()*30
			s[i] = float64(rng.IntN(20)) / 20
			if i > 0 && rng.IntN(10) == 0 {
				copy(b[4*i:4*i+4], b[4*i-4:4*i])
			}
		}
		thr := []float64{0, 0.2, 0.5, 0.8}[trial%4]
		got, err := gops.NMS(tensor.New(tensor.WithShape(k, 4), tensor.WithBacking(b)), tensor.New(tensor.WithShape(k), tensor.WithBacking(s)), thr)
		if err != nil {
			t.Fatal(err)
		}
		want := quadraticNMS(b, s, thr)
		if len(got) != len(want) {
			t.Fatalf("trial %d: kept %v, want %v", trial, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d: kept %v, want %v", trial, got, want)
			}
		}
	}
}

// quadraticNMS is torchvision's CPU nms_kernel as written (stable sort,
// suppressed flags, every pair visited).
func quadraticNMS(b, s []float64, thr float64) []int {
	k := len(s)
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	for i := 1; i < k; i++ { // insertion sort: stable, descending
		for j := i; j > 0 && s[order[j]] > s[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	area := func(i int) float64 { return (b[4*i+2] - b[4*i]) * (b[4*i+3] - b[4*i+1]) }
	sup := make([]bool, k)
	var keep []int
	for p, i := range order {
		if sup[i] {
			continue
		}
		keep = append(keep, i)
		for _, j := range order[p+1:] {
			if sup[j] {
				continue
			}
			w := max(0, min(b[4*i+2], b[4*j+2])-max(b[4*i], b[4*j]))
			h := max(0, min(b[4*i+3], b[4*j+3])-max(b[4*i+1], b[4*j+1]))
			inter := w * h
			if inter/(area(i)+area(j)-inter) > thr {
				sup[j] = true
			}
		}
	}
	return keep
}
