package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
)

// TestBatchNormKernelsOverwrite: every kernel of BatchNorm's fused ops
// declares KernelOverwrites, so under ad.ReuseResults its result arrives
// holding old values; run on finite inputs into results filled with NaN,
// each must leave no NaN behind: BatchNormTrain with and without weight
// and bias, BatchNormStats and BatchNormEvalStats, BatchNormGradX with and
// without weight and statistics, BatchNormGradW with and without
// statistics, the statistics' sums (GradB, GradW, EvalGradA) and eval's
// ChannelAffine (BatchNormFresh's copy is ad.ReshapeSpec's, tested in
// ad); over C = 1, N = 1, L = 1 and a shape large enough to spread
// channels over goroutines, float32 and float64.
func TestBatchNormKernelsOverwrite(t *testing.T) {
	t.Run("float32", func(t *testing.T) { checkBNOverwrite[float32](t) })
	t.Run("float64", func(t *testing.T) { checkBNOverwrite[float64](t) })
}

func checkBNOverwrite[T ad.Float](t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	vals := func(n int) ad.Tensor[T] {
		d := make([]T, n)
		for i := range d {
			d[i] = T(r.NormFloat64())
		}
		return ad.Tensor[T]{Data: d}
	}
	type kernel = func(ad.Tensor[T], []ad.Tensor[T]) error
	for _, s := range [][3]int{{2, 1, 5}, {1, 3, 7}, {5, 4, 1}, {8, 24, 300}} {
		g := bnGeom{s: []int{s[0], s[1], s[2]}, n: s[0], c: s[1], l: s[2], eps: 1e-5}
		size, c := s[0]*s[1]*s[2], s[1]
		x, u, w, b := vals(size), vals(size), vals(c), vals(c)
		run := func(name string, k kernel, n int, in ...ad.Tensor[T]) ad.Tensor[T] {
			t.Helper()
			out := ad.Tensor[T]{Data: make([]T, n)}
			for i := range out.Data {
				out.Data[i] = T(math.NaN())
			}
			if err := k(out, in); err != nil {
				t.Fatalf("%v %s: %v", s, name, err)
			}
			for i, v := range out.Data {
				if v != v {
					t.Fatalf("%v %s: element %d of %d not written", s, name, i, n)
				}
			}
			return out
		}
		stats := run("BatchNormStats", batchNormStatsKernel[T](g, false), statsShapeBN(g).TotalSize(), u, x)
		evalStats := run("BatchNormEvalStats", batchNormStatsKernel[T](g, true), statsShapeBN(g).TotalSize(), u, x)
		for _, wb := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			in := []ad.Tensor[T]{x}
			if wb[0] {
				in = append(in, w)
			}
			if wb[1] {
				in = append(in, b)
			}
			run(fmt.Sprintf("BatchNormTrain %v", wb), batchNormTrainKernel[T](g, nil, wb[0], wb[1]), size, in...)
			run(fmt.Sprintf("ChannelAffine %v", wb), channelAffineKernel[T](g.chans(), wb[0], wb[1]), size, in...)
		}
		run("BatchNormGradX", batchNormGradXKernel[T](g, false, false, false), size, x, u)
		run("BatchNormGradX weight", batchNormGradXKernel[T](g, true, false, false), size, x, u, w)
		run("BatchNormGradX stats", batchNormGradXKernel[T](g, false, true, false), size, x, u, stats)
		run("BatchNormGradX weight stats", batchNormGradXKernel[T](g, true, true, false), size, x, u, w, stats)
		run("BatchNormGradW", batchNormGradWKernel[T](g), c, u, x)
		run("BatchNormGradW stats", batchStatsSumKernel[T](g, 1), c, u, x, stats)
		run("BatchNormGradB", batchStatsSumKernel[T](g, 0), c, u, stats)
		run("BatchNormEvalGradA", batchStatsSumKernel[T](g, 1), c, u, x, evalStats)
		// With a mask (the first sample kept, the second not, ...; all 0
		// too): the same kernels with the mask their last input.
		gm := g
		gm.masked = true
		for _, all0 := range []bool{false, true} {
			mask := ad.Tensor[T]{Data: make([]T, s[0])}
			for i := range mask.Data {
				if !all0 && i%2 == 0 {
					mask.Data[i] = 1
				}
			}
			ms := run("masked BatchNormStats", batchNormStatsKernel[T](gm, false), statsShapeBN(g).TotalSize(), u, x, mask)
			run("masked BatchNormTrain", batchNormTrainKernel[T](gm, nil, true, true), size, x, w, b, mask)
			for _, tr := range []bool{false, true} {
				run(fmt.Sprintf("masked BatchNormGradX %v", tr), batchNormGradXKernel[T](gm, true, false, tr), size, x, u, w, mask)
			}
			run("masked BatchNormGradX stats", batchNormGradXKernel[T](gm, true, true, false), size, x, u, w, ms, mask)
			run("masked BatchNormGradW", batchNormGradWKernel[T](gm), c, u, x, mask)
			run("masked BatchNormGradW stats", batchStatsSumKernel[T](gm, 1), c, u, x, ms, mask)
		}
	}
}
