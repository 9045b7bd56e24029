package scenes

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/gops-dev/gops/datasets/mnist"
	"gorgonia.org/tensor"
)

var (
	digitsOnce        sync.Once
	trainSet, testSet *Digits
	digitsErr         error
)

// loadMNIST reads the MNIST files once for all tests, through the module
// system (FindMNIST), as the programs do.
func loadMNIST(t *testing.T) (*Digits, *Digits) {
	t.Helper()
	digitsOnce.Do(func() {
		dir, _, err := FindMNIST("")
		if err != nil {
			digitsErr = err
			return
		}
		trainSet, testSet, digitsErr = LoadDigits(dir)
	})
	if digitsErr != nil {
		t.Fatal(digitsErr)
	}
	return trainSet, testSet
}

// TestScenes checks the pasted scenes of SampleTask: shapes, boxes inside
// their canvas and disjoint, the ink inside the boxes, labels and
// class-index targets.
func TestScenes(t *testing.T) {
	train, _ := loadMNIST(t)
	so := Opts{Canvas: 48, PerCanvas: 4, MinSize: 16, MaxSize: 24}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		task, err := SampleTask(rng, train, []int{0, 1, 2, 3, 4, 5}, 3, 2, 3, so)
		if err != nil {
			t.Fatal(err)
		}
		checkScene(t, task.Support, task.Classes, so)
		checkScene(t, task.Query, task.Classes, so)
	}
}

// TestSampleScene: SampleScene's scenes pass the same checks, draw every
// class of the list, and bad requests are errors.
func TestSampleScene(t *testing.T) {
	train, _ := loadMNIST(t)
	so := Opts{Canvas: 64, PerCanvas: 3, MinSize: 16, MaxSize: 24}
	rng := rand.New(rand.NewPCG(3, 4))
	classes := []int{6, 7, 8, 9}
	seen := map[int]int{}
	for trial := 0; trial < 10; trial++ {
		sc, err := SampleScene(rng, train, classes, 7, so)
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Labels) != 7 || sc.Canvas.Shape()[0] != 3 {
			t.Fatalf("%d digits on %d canvases, want 7 on 3", len(sc.Labels), sc.Canvas.Shape()[0])
		}
		checkScene(t, sc, classes, so)
		for _, d := range sc.Digits {
			seen[d]++
		}
	}
	if len(seen) != 4 {
		t.Errorf("digits drawn %v, want all of %v", seen, classes)
	}
	for _, bad := range []struct {
		classes []int
		n       int
	}{{classes, 0}, {nil, 3}, {[]int{10}, 1}, {[]int{-1}, 1}} {
		if _, err := SampleScene(rng, train, bad.classes, bad.n, so); err == nil {
			t.Errorf("SampleScene(%v, %d) gives no error", bad.classes, bad.n)
		}
	}
}

// checkScene checks sc's shapes, that its boxes lie inside their canvas
// and are disjoint, that the ink lies inside the boxes, and that
// classes[label] is each box's digit.
func checkScene(t *testing.T, sc *Scene, classes []int, so Opts) {
	t.Helper()
	s, per := so.Canvas, so.PerCanvas
	k := len(sc.Labels)
	b := (k + per - 1) / per
	if !sc.Canvas.Shape().Eq(tensor.Shape{b, 1, s, s}) || !sc.Boxes.Shape().Eq(tensor.Shape{k, 5}) || !sc.Target.Shape().Eq(tensor.Shape{k}) || sc.Target.Dtype() != tensor.Int {
		t.Fatalf("shapes %v %v, target %v %v for %d digits", sc.Canvas.Shape(), sc.Boxes.Shape(), sc.Target.Dtype(), sc.Target.Shape(), k)
	}
	bx := sc.Boxes.Data().([]float64)
	tg := sc.Target.Data().([]int)
	cv := sc.Canvas.Data().([]float64)
	inside := make([]bool, len(cv))
	for i := 0; i < k; i++ {
		r := bx[5*i : 5*i+5]
		if r[0] != float64(i/per) || r[1] < 0 || r[2] < 0 || r[3] > float64(s) || r[4] > float64(s) || r[3]-r[1] < 8 || r[4]-r[2] < 8 {
			t.Errorf("box %d = %v", i, r)
		}
		if classes[sc.Labels[i]] != sc.Digits[i] || tg[i] != sc.Labels[i] {
			t.Errorf("box %d: label %d, digit %d, classes %v, target %d", i, sc.Labels[i], sc.Digits[i], classes, tg[i])
		}
		for j := 0; j < i; j++ {
			q := bx[5*j : 5*j+5]
			if q[0] == r[0] && r[1] < q[3] && q[1] < r[3] && r[2] < q[4] && q[2] < r[4] {
				t.Errorf("boxes %d and %d overlap: %v %v", j, i, q, r)
			}
		}
		for y := int(r[2]); y < int(math.Ceil(r[4])); y++ {
			for x := int(r[1]); x < int(math.Ceil(r[3])); x++ {
				inside[int(r[0])*s*s+y*s+x] = true
			}
		}
	}
	var in, all float64
	for i, v := range cv {
		all += v
		if inside[i] {
			in += v
		}
	}
	if in < 0.97*all {
		t.Errorf("only %.1f%% of the ink lies inside the boxes", 100*in/all)
	}
}

// TestFindMNIST: the module lookup finds the four files; -data is checked.
func TestFindMNIST(t *testing.T) {
	dir, how, err := FindMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	if err := mnist.Check(dir); err != nil {
		t.Errorf("found %s (%s): %v", dir, how, err)
	}
	if d, how, err := FindMNIST(dir); err != nil || d != dir || how != "-data flag" {
		t.Errorf("FindMNIST(%q) = %q, %q, %v", dir, d, how, err)
	}
	if _, _, err := FindMNIST(t.TempDir()); err == nil || !strings.Contains(err.Error(), "-data") {
		t.Errorf("an empty -data folder gives %v", err)
	}
}
