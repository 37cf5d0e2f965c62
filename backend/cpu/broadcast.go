package cpu

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Broadcasting for the elementwise kernels with two or three inputs.

// bcastPlan walks an output in rows of its (collapsed) innermost dimension,
// giving each input's offset for the row and whether the input is constant
// along the row (stride 0) or advances with it (stride 1).
type bcastPlan struct {
	dims    []int   // collapsed output dimensions
	strides [][]int // per input, per collapsed dimension
	step    [3]int  // per input: 0 or 1 along the innermost dimension
	n       int     // number of inputs
}

func newBcastPlan(out tensor.Shape, ins ...tensor.Shape) *bcastPlan {
	rank := len(out)
	p := &bcastPlan{n: len(ins)}
	// full[i][d]: input i's stride along output dimension d (0 = broadcast).
	full := make([][]int, len(ins))
	for i, s := range ins {
		full[i] = make([]int, rank)
		off := rank - len(s)
		step := 1
		for d := rank - 1; d >= off; d-- {
			if s[d-off] != 1 {
				full[i][d] = step
			}
			step *= s[d-off]
		}
	}
	// Collapse neighbouring dimensions that every input treats alike.
	for d := 0; d < rank; d++ {
		if out[d] == 1 && rank > 1 {
			continue
		}
		k := len(p.dims) - 1
		if k >= 0 && p.mergeable(full, d, out) {
			p.dims[k] *= out[d]
			for i := range ins {
				p.strides[i][k] = full[i][d]
			}
			continue
		}
		p.dims = append(p.dims, out[d])
		if p.strides == nil {
			p.strides = make([][]int, len(ins))
		}
		for i := range ins {
			p.strides[i] = append(p.strides[i], full[i][d])
		}
	}
	if len(p.dims) == 0 {
		p.dims = []int{1}
		p.strides = make([][]int, len(ins))
		for i := range ins {
			p.strides[i] = []int{0}
		}
	}
	last := len(p.dims) - 1
	for i := range ins {
		if p.strides[i][last] != 0 {
			p.step[i] = 1
		}
	}
	return p
}

// mergeable reports whether output dimension d can join the last collapsed
// dimension: for each input, both broadcast, or d continues it contiguously.
func (p *bcastPlan) mergeable(full [][]int, d int, out tensor.Shape) bool {
	k := len(p.dims) - 1
	for i := range full {
		prev, cur := p.strides[i][k], full[i][d]
		if (prev == 0) != (cur == 0) {
			return false
		}
		if cur != 0 && prev != cur*out[d] {
			return false
		}
	}
	return true
}

// rows calls fn for each row of the innermost dimension with the output
// offset and each input's offset; the row has p.dims[last] elements.
func (p *bcastPlan) rows(fn func(o int, off [3]int)) {
	last := len(p.dims) - 1
	inner := p.dims[last]
	outer := 1
	for _, d := range p.dims[:last] {
		outer *= d
	}
	idx := make([]int, last)
	var off [3]int
	for r := 0; r < outer; r++ {
		fn(r*inner, off)
		for d := last - 1; d >= 0; d-- {
			idx[d]++
			for i := 0; i < p.n; i++ {
				off[i] += p.strides[i][d]
			}
			if idx[d] < p.dims[d] {
				break
			}
			for i := 0; i < p.n; i++ {
				off[i] -= p.strides[i][d] * p.dims[d]
			}
			idx[d] = 0
		}
	}
}

// binLoops is one binary operation as three contiguous loops: both operands
// advancing (vv), the second fixed (vs), the first fixed (sv).
type binLoops[T, R any] struct {
	vv func(o []R, a, b []T)
	vs func(o []R, a []T, b T)
	sv func(o []R, a T, b []T)
}

// binaryKernel runs l over two broadcast inputs, sharding rows over cores.
func binaryKernel[T, R tensor.Elem](l binLoops[T, R]) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out := c.Inputs[0], c.Inputs[1], outs[0]
		av, bv, ov := data[T](a), data[T](b), data[R](out)
		n := len(ov)
		switch {
		case n == 0:
		case n < backend.MinShardCost && len(av) == n && len(bv) == n:
			l.vv(ov, av, bv) // small: no closure, no sharding
		case n < backend.MinShardCost && len(bv) == 1 && len(av) == n:
			l.vs(ov, av, bv[0])
		case n < backend.MinShardCost && len(av) == 1 && len(bv) == n:
			l.sv(ov, av[0], bv)
		case len(av) == n && len(bv) == n:
			deviceOf(c).Parallel(n, 1, func(lo, hi int) { l.vv(ov[lo:hi], av[lo:hi], bv[lo:hi]) })
		case len(bv) == 1 && len(av) == n:
			deviceOf(c).Parallel(n, 1, func(lo, hi int) { l.vs(ov[lo:hi], av[lo:hi], bv[0]) })
		case len(av) == 1 && len(bv) == n:
			deviceOf(c).Parallel(n, 1, func(lo, hi int) { l.sv(ov[lo:hi], av[0], bv[lo:hi]) })
		case len(av) == n && len(bv) > 1 && trailing(b.Shape(), out.Shape()):
			// b repeats along a's leading dims (a bias over NHWC): long
			// rows against b tiled, instead of one short row per repeat.
			periodic(c, n, bv, func(lo, hi int, tile []T) { l.vv(ov[lo:hi], av[lo:hi], tile) })
		case len(bv) == n && len(av) > 1 && trailing(a.Shape(), out.Shape()):
			periodic(c, n, av, func(lo, hi int, tile []T) { l.vv(ov[lo:hi], tile, bv[lo:hi]) })
		default:
			p := newBcastPlan(out.Shape(), a.Shape(), b.Shape())
			inner := p.dims[len(p.dims)-1]
			p.rows(func(o int, off [3]int) {
				row := ov[o : o+inner]
				switch {
				case p.step[0] == 1 && p.step[1] == 1:
					l.vv(row, av[off[0]:off[0]+inner], bv[off[1]:off[1]+inner])
				case p.step[0] == 1:
					l.vs(row, av[off[0]:off[0]+inner], bv[off[1]])
				case p.step[1] == 1:
					l.sv(row, av[off[0]], bv[off[1]:off[1]+inner])
				default:
					l.vs(row[:1], av[off[0]:off[0]+1], bv[off[1]])
					for i := 1; i < inner; i++ {
						row[i] = row[0]
					}
				}
			})
		}
	}
}

// trailing reports whether s, leading 1s aside, is the trailing part of
// out: an operand broadcast along out's leading dimensions only, so that
// it repeats with a period of its own size through out's memory.
func trailing(s, out tensor.Shape) bool {
	for len(s) > 0 && s[0] == 1 {
		s = s[1:]
	}
	return len(s) <= len(out) && slices.Equal(s, out[len(out)-len(s):])
}

// periodTile is about how many elements periodic makes its tile.
const periodTile = 4096

// periodLen is the length of a tile of whole periods of p elements, about
// periodTile long.
func periodLen(p int) int { return p * max(1, periodTile/p) }

// repeatInto fills tile with pattern repeated (len(tile) a multiple of
// len(pattern)).
func repeatInto[T any](tile, pattern []T) {
	for i := 0; i < len(tile); i += len(pattern) {
		copy(tile[i:], pattern)
	}
}

// periodic calls fn over [0, n) in pieces that start at multiples of
// len(pattern), each with pattern repeated to the piece's length: the
// operand that repeats, as one long row. Pieces run in parallel.
func periodic[T tensor.Elem](c *eager.Call, n int, pattern []T, fn func(lo, hi int, tile []T)) {
	tile := make([]T, periodLen(len(pattern)))
	repeatInto(tile, pattern)
	span := len(tile)
	pieces := (n + span - 1) / span
	deviceOf(c).Parallel(pieces, float64(span), func(a, b int) {
		for i := a; i < b; i++ {
			lo, hi := i*span, min(n, (i+1)*span)
			fn(lo, hi, tile[:hi-lo])
		}
	})
}
