package cpu

import "math/rand/v2"

// DropoutMask sets the elements of mask that run number run of a Dropout
// of probability p and seed keeps to 1/(1 − p) (0 for p = 1), leaving the
// dropped ones as they are (the caller zeroes mask). Element i is kept
// when the i-th draw of PCG(seed, run) (math/rand/v2's Float64) is at
// least p: the same stream for the same seed and run in every process,
// and the same as DropoutKept's, which the CUDA twin uploads.
func DropoutMask[T Float](p float64, seed int64, run uint64, mask []T) {
	keep := T(0)
	if p < 1 {
		keep = T(1 / (1 - p))
	}
	dropoutDraw(p, seed, run, mask, keep)
}

// DropoutKept sets kept[i] to 1 where DropoutMask keeps element i,
// leaving the others as they are.
func DropoutKept(p float64, seed int64, run uint64, kept []uint8) {
	dropoutDraw(p, seed, run, kept, 1)
}

// dropoutDraw sets dst[i] to keep where the i-th draw of PCG(seed, run)
// is at least p.
func dropoutDraw[E any](p float64, seed int64, run uint64, dst []E, keep E) {
	r := rand.New(rand.NewPCG(uint64(seed), run))
	for i := range dst {
		if r.Float64() >= p {
			dst[i] = keep
		}
	}
}
