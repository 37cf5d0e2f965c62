package kernels

import (
	mbits "math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// divide is what the narrow path computes for n / d.
func divide(n, d uint32) uint32 {
	magic, shift := DivMagic(d)
	hi, _ := mbits.Mul32(n, magic)
	return (hi + n) >> shift
}

// The multiply-high division is exact for every n < 2^31 and divisor in
// [1, 2^31): edges (powers of two and their neighbours, the largest
// values) and random draws.
func TestDivMagicIsExact(t *testing.T) {
	var ds []uint32
	for s := range 31 {
		p := uint32(1) << s
		ds = append(ds, p, p+1, p-1, p*3/2+1)
	}
	ds = append(ds, 3, 5, 7, 28, 784, 1<<31-1)
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ds = append(ds, 1+r.Uint32N(1<<31-1), 1+r.Uint32N(1<<12))
	}
	for _, d := range ds {
		if d == 0 {
			continue
		}
		ns := []uint32{0, 1, d - 1, d, d + 1, 2*d - 1, 1<<31 - 1, 1<<31 - 2, (1<<31 - 1) / d * d, (1<<31-1)/d*d - 1}
		for range 64 {
			ns = append(ns, r.Uint32N(1<<31))
		}
		for _, n := range ns {
			if n >= 1<<31 {
				continue
			}
			if got := divide(n, d); got != n/d {
				t.Fatalf("%d / %d = %d by the magic constants, want %d", n, d, got, n/d)
			}
		}
	}
}

// Merging keeps every element's offsets: the merged geometry, walked as
// the kernel walks it, gives the same offsets as the original.
func TestGeometryMergesWithoutMovingElements(t *testing.T) {
	cases := []struct {
		shape   []int
		strides [][]int
		rank    int // after merging
	}{
		{[]int{4, 5, 6}, [][]int{{30, 6, 1}, {30, 6, 1}}, 1},           // contiguous: one dimension
		{[]int{4, 5, 6}, [][]int{{30, 6, 1}, {0, 0, 1}}, 2},            // a row broadcast over [4 5]
		{[]int{4, 5, 6}, [][]int{{30, 6, 1}, {5, 1, 0}}, 2},            // a column broadcast
		{[]int{4, 1, 6}, [][]int{{6, 6, 1}, {1, 0, 4}}, 2},             // a transpose with a unit dimension
		{[]int{2, 3, 4, 5}, [][]int{{60, 20, 5, 1}, {1, 2, 6, 24}}, 4}, // fully transposed
		{[]int{1, 1}, [][]int{{1, 1}, {0, 0}}, 0},
		{[]int{}, [][]int{{}, {}}, 0},
	}
	for _, c := range cases {
		g := Geometry(c.shape, c.strides, []int{3, 7})
		if got := int(le64(g, geomRank)); got != c.rank {
			t.Errorf("shape %v strides %v: merged rank %d, want %d", c.shape, c.strides, got, c.rank)
		}
		n := 1
		for _, s := range c.shape {
			n *= s
		}
		for i := range n {
			want := []int{3, 7}
			rem := i
			for d := len(c.shape) - 1; d >= 0; d-- {
				for s := range want {
					want[s] += rem % c.shape[d] * c.strides[s][d]
				}
				rem /= c.shape[d]
			}
			if got := walk(g, i, 2); !slices.Equal(got, want) {
				t.Fatalf("shape %v strides %v element %d: offsets %v, want %v", c.shape, c.strides, i, got, want)
			}
		}
	}
}

func le64(g []byte, off int) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(g[off+i])
	}
	return v
}

// walk is the narrow path of offsets in Go.
func walk(g []byte, i, n int) []int {
	rank := int(le64(g, geomRank))
	offs := make([]int, n)
	for s := range offs {
		offs[s] = int(int64(le64(g, geomOffset+8*s)))
	}
	rem := uint32(i)
	for j := 0; j < rank-1; j++ {
		size := uint32(le64(g, geomDims+16*j))
		q := divide(rem, size)
		c := rem - q*size
		rem = q
		for s := range offs {
			offs[s] += int(c) * int(int64(le64(g, geomStride+8*((MaxRank-1)*s+j))))
		}
	}
	for s := range offs {
		offs[s] += int(rem) * int(int64(le64(g, geomOuter+8*s)))
	}
	return offs
}

// The depthwise band kernels index in 32 bits: a convolution whose input
// or output holds 2^31 elements or more takes the direct kernels, whose
// geometry is 64-bit, where PoolGeometry would refuse it.
func TestDepthwiseBandsStayNarrow(t *testing.T) {
	small := DepthwiseDims{N: 2, C: 8, M: 1, H: 56, W: 56, OH: 28, OW: 28, KH: 3, KW: 3, SH: 2, SW: 2, DH: 1, DW: 1, PT: 0, PL: 0}
	for _, f := range []struct {
		name string
		take func(DepthwiseDims) bool
	}{
		{"DepthwiseBand", func(g DepthwiseDims) bool { return DepthwiseBand(g, F32, false) }},
		{"DepthwiseFilterBand", func(g DepthwiseDims) bool { return DepthwiseFilterBand(g, F32) }},
		{"DepthwiseRows", func(g DepthwiseDims) bool { return DepthwiseRows(g, F32) }},
	} {
		if !f.take(small) {
			t.Errorf("%s refuses %+v", f.name, small)
		}
		many := small
		many.N = 1 << 17 // 2^17·8·56·56 input elements: over 2^31
		if f.take(many) {
			t.Errorf("%s takes %d images of %dx%dx%d: over 2^31 elements", f.name, many.N, many.C, many.H, many.W)
		}
		wide := small
		wide.M, wide.N = 64, 1<<13 // the output: 2^13·8·64·28·28 elements
		if f.take(wide) {
			t.Errorf("%s takes an output of over 2^31 elements", f.name)
		}
	}
}
