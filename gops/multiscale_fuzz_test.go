package gops_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FuzzMultiScaleRoIAlign: 1 to 4 levels of 1 or 2 images (strides 1, 2, 4,
// 8 of the largest image, sometimes a map of the wrong size: refused, or
// oblong: refused unless Scales are given), 0 to 3 boxes per image from
// the wild coordinate table, output size, sampling ratio, canonical scale
// and level, Scales given (sometimes wrong) or inferred; gradients w.r.t.
// every feature map. The invariant of fuzz_test.go: a named error, or
// finite values and gradients, never a panic.
func FuzzMultiScaleRoIAlign(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add([]byte{3, 1, 2, 7, 9, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21})
	f.Add([]byte{1, 0, 1, 5, 5, 0, 0, 2, 1, 20, 2, 3, 11, 0, 4, 6, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		levels, n, c := 1+fb.intn(4), 1+fb.intn(2), 1+fb.intn(3)
		imgH, imgW := 8+fb.intn(9), 8+fb.intn(9)
		var in []*tensor.Dense
		for l := 0; l < levels; l++ {
			h, w := max(imgH>>l, 1), max(imgW>>l, 1)
			switch fb.intn(16) {
			case 0:
				w = max(w>>2, 1) // oblong: width and height disagree
			case 1:
				h = 0 // no pixels
			}
			in = append(in, fuzzInput(n, c, h, w))
		}
		empty := make([]bool, n)
		for i := 0; i < n; i++ {
			k := fb.intn(4)
			if k == 0 {
				empty[i] = true
				continue
			}
			d := make([]float64, 4*k)
			for j := range d {
				d[j] = 4 * fb.coordinate()
			}
			in = append(in, tensor.New(tensor.WithShape(k, 4), tensor.Of(tensor.Float64), tensor.WithBacking(d)))
		}
		sizes := make([][2]int, n)
		for i := range sizes {
			sizes[i] = [2]int{imgH - fb.intn(3), imgW - fb.intn(3)}
		}
		if fb.intn(16) == 0 {
			sizes[0][1] = -1
		}
		opts := gops.MultiScaleRoIAlignOpts{
			OutputSize: fb.outputSize(), SamplingRatio: fb.samplingRatio(),
			CanonicalScale: []int{0, 8, 1, -3}[fb.intn(4)], CanonicalLevel: []int{0, 2, 1, -1}[fb.intn(4)],
		}
		if fb.intn(3) == 0 {
			for l := 0; l < levels; l++ {
				opts.Scales = append(opts.Scales, math.Ldexp(1, -l))
			}
			if fb.intn(4) == 0 {
				opts.Scales[0] = fb.scale()
			}
		}
		checkFuzzCase(t, fb, in, wrtFirst(levels), func(nodes gorgonia.Nodes) (*gorgonia.Node, error) {
			feats, next := nodes[:levels], levels
			var boxes gorgonia.Nodes
			for i := 0; i < n; i++ {
				if empty[i] {
					boxes = append(boxes, emptyBoxNode(nodes[0]))
					continue
				}
				boxes = append(boxes, nodes[next])
				next++
			}
			return gops.MultiScaleRoIAlign(feats, boxes, sizes, opts)
		})
	})
}
