package data

import (
	"context"
	"io"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// rowSource is a dataset with random access: element i holds row
// order(epoch)[i] of each component. FromSlices makes one, and Take, Skip,
// Shuffle and Batch keep or use it: Shuffle then permutes row numbers
// instead of holding elements in a buffer (the whole training set, for a
// full shuffle), and Batch copies rows straight into the batch.
type rowSource struct {
	comps []*tensor.Tensor      // row-major, sharing their first dimension
	order func(epoch int) []int // the rows, in the order the epoch yields them
	n     int                   // len(order(epoch)) for every epoch
}

// sliced returns the source limited to elements [lo, hi) of its order.
func (r *rowSource) sliced(lo, hi int) *rowSource {
	lo, hi = min(max(lo, 0), r.n), min(max(hi, 0), r.n)
	hi = max(hi, lo)
	return &rowSource{comps: r.comps, n: hi - lo, order: func(epoch int) []int { return r.order(epoch)[lo:hi] }}
}

// strided returns every n-th element of the source from index on.
func (r *rowSource) strided(n, index int) *rowSource {
	count := 0
	if r.n > index {
		count = (r.n - index + n - 1) / n
	}
	return &rowSource{comps: r.comps, n: count, order: func(epoch int) []int {
		all := r.order(epoch)
		rows := make([]int, 0, count)
		for i := index; i < len(all); i += n {
			rows = append(rows, all[i])
		}
		return rows
	}}
}

// shuffled returns the source in an order drawn afresh from seed (and the
// epoch, with reshuffle): a Fisher-Yates permutation, uniform as a full
// buffer's draws are.
func (r *rowSource) shuffled(seed uint64, reshuffle bool) *rowSource {
	return &rowSource{comps: r.comps, n: r.n, order: func(epoch int) []int {
		rows := append([]int(nil), r.order(epoch)...)
		rng := tensor.NewRNG(shuffleSeed(seed, epoch, reshuffle))
		draw := make([]uint32, 1)
		for i := len(rows) - 1; i > 0; i-- {
			rng.Uint32s(draw)
			k := int(uint64(draw[0]) * uint64(i+1) >> 32)
			rows[i], rows[k] = rows[k], rows[i]
		}
		return rows
	}}
}

// shuffleSeed is the seed of an epoch's shuffle.
func shuffleSeed(seed uint64, epoch int, reshuffle bool) uint64 {
	if reshuffle {
		return seed + uint64(epoch)*0x9e3779b97f4a7c15
	}
	return seed
}

// dataset is the Dataset of the source's elements, one at a time.
func (r *rowSource) dataset(stage string) *Dataset {
	return &Dataset{stage: stage, rows: r, open: func(epoch int) iterator {
		order, i := r.order(epoch), 0
		return &funcIter{nextFn: func(context.Context) (Element, error) {
			if i >= len(order) {
				return nil, io.EOF
			}
			e := make(Element, len(r.comps))
			for k, c := range r.comps {
				e[k] = rowOf(c, order[i])
			}
			i++
			return e, nil
		}}
	}}
}

// batches is Batch over the source: each batch's rows copied from the
// components into its tensors, with no element in between.
func (r *rowSource) batches(stage string, n int, drop bool) *Dataset {
	return &Dataset{stage: stage, open: func(epoch int) iterator {
		order := r.order(epoch)
		return &funcIter{nextFn: func(context.Context) (Element, error) {
			if len(order) == 0 || (drop && len(order) < n) {
				return nil, io.EOF
			}
			rows := order[:min(n, len(order))]
			order = order[len(rows):]
			out := make(Element, len(r.comps))
			for k, c := range r.comps {
				shape := append([]int{len(rows)}, c.Shape()[1:]...)
				t := backend.MustEmptyHost(c.DType(), shape)
				size := tensor.Shape(shape[1:]).NumElements() * c.DType().Size()
				dst, src := t.HostBytes(), c.HostBytes()
				for j, row := range rows {
					copy(dst[j*size:(j+1)*size], src[row*size:(row+1)*size])
				}
				out[k] = t
			}
			return out, nil
		}}
	}}
}

// rowOf copies row i of t (along its first dimension); t is row-major.
func rowOf(t *tensor.Tensor, i int) *tensor.Tensor {
	shape := t.Shape()[1:].Clone()
	size := shape.NumElements() * t.DType().Size()
	out := backend.MustEmptyHost(t.DType(), shape)
	copy(out.HostBytes(), t.HostBytes()[i*size:(i+1)*size])
	return out
}
