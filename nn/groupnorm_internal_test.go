package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGroupNormAffineBitwise: GroupNorm's fused op gives the bits of
// RowNorm followed by ChannelAffine, with planes (L > 1) and without
// (L = 1), with a weight, a bias or both, in float32 and float64.
func TestGroupNormAffineBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, shape := range []tensor.Shape{{3, 8, 5, 7}, {4, 6}, {2, 12, 300}} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, wb := range [][2]bool{{true, true}, {true, false}, {false, true}} {
				t.Run(fmt.Sprintf("%v/%v/w=%v,b=%v", shape, dt, wb[0], wb[1]), func(t *testing.T) {
					n, c, groups := shape[0], shape[1], 2
					l := shape.TotalSize() / (n * c)
					g := gorgonia.NewGraph()
					mk := func(name string, s tensor.Shape) *gorgonia.Node { return normInput(g, r, dt, name, s) }
					x := mk("x", shape)
					var w, b *gorgonia.Node
					if wb[0] {
						w = mk("w", tensor.Shape{c})
					}
					if wb[1] {
						b = mk("b", tensor.Shape{c})
					}
					fused, err := GroupNorm(x, groups, w, b, 1e-5)
					if err != nil {
						t.Fatal(err)
					}
					y, err := normalizeRows(x, n*groups, 1e-5)
					if err != nil {
						t.Fatal(err)
					}
					plain, err := channelAffine(shape, chanGeom{n, c, l}, y, w, b)
					if err != nil {
						t.Fatal(err)
					}
					m := gorgonia.NewTapeMachine(g)
					defer m.Close()
					if err := m.RunAll(); err != nil {
						t.Fatal(err)
					}
					a, e := fused.Value().Data(), plain.Value().Data()
					switch a := a.(type) {
					case []float32:
						for i, v := range a {
							if math.Float32bits(v) != math.Float32bits(e.([]float32)[i]) {
								t.Fatalf("[%d] fused %v, RowNorm+ChannelAffine %v", i, v, e.([]float32)[i])
							}
						}
					case []float64:
						for i, v := range a {
							if math.Float64bits(v) != math.Float64bits(e.([]float64)[i]) {
								t.Fatalf("[%d] fused %v, RowNorm+ChannelAffine %v", i, v, e.([]float64)[i])
							}
						}
					}
				})
			}
		}
	}
}
