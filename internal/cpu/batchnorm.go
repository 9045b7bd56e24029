package cpu

// ChannelMean sets mean[ci] to the mean of channel ci of x [n, c, l]
// (BatchNorm's batch mean), summed in float64 sample by sample. With
// stats not nil it also computes the channel's unbiased variance
// Σ (x − mean)²/(n·l − 1) in float64 and calls stats(ci, mean,
// variance), channel by channel in order (BatchNorm's running
// statistics).
func ChannelMean[T Float](n, c, l int, mean, x []T, stats func(ci int, mean, unbiased float64)) {
	cnt := float64(n * l)
	for ci := 0; ci < c; ci++ {
		var sum float64
		for ni := 0; ni < n; ni++ {
			for _, v := range x[(ni*c+ci)*l:][:l] {
				sum += float64(v)
			}
		}
		m := sum / cnt
		mean[ci] = T(m)
		if stats == nil {
			continue
		}
		var ss float64
		for ni := 0; ni < n; ni++ {
			for _, v := range x[(ni*c+ci)*l:][:l] {
				d := float64(v) - m
				ss += d * d
			}
		}
		stats(ci, m, ss/(cnt-1))
	}
}
