package tensor

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
)

// The host's Bernoulli draw, written in place by the workers two blocks
// at a time, is the draw uniform64Of's comparison gives, value for value:
// sizes large enough to split across the workers (chunks starting at odd
// values, in a block's second half), odd lengths, several dtypes and
// probabilities (0 and 1 too).
func TestBernoulliHostMatchesTheUniforms(t *testing.T) {
	key := [2]uint32{7, 9}
	for _, n := range []int{1, 2, 3, 5, 8, 1 << 16, 1<<16 + 3, 1<<16 + 5, 3<<16 + 1} {
		for _, p := range []float64{0, 0.1, 0.5, 0.97, 1} {
			for _, dt := range []DType{Float32, Float64, BFloat16, Int32} {
				base := uint64(n % 11)
				got := RandBernoulliAt(device.Host(), key, base, dt, p, n)
				u := uniform64Of(key, base, n)
				want := make([]float64, n)
				for i, v := range u {
					if v < p {
						want[i] = 1
					}
				}
				wb := float64Bytes(dt, want)
				gb := got.HostBytes()
				if string(gb) != string(wb) {
					for i := range n {
						s := dt.Size()
						if string(gb[i*s:(i+1)*s]) != string(wb[i*s:(i+1)*s]) {
							t.Fatalf("n %d, p %v, %v: value %d is %v, the uniform %v gives %v", n, p, dt, i, gb[i*s:(i+1)*s], u[i], want[i])
						}
					}
				}
				got.Release()
			}
		}
	}
}

// BenchmarkRandBernoulliHost draws a million float32 keep values (a
// dropout mask) on the host.
func BenchmarkRandBernoulliHost(b *testing.B) {
	for b.Loop() {
		RandBernoulliAt(device.Host(), [2]uint32{7, 9}, 0, Float32, 0.9, 1<<20).Release()
	}
}
