package data

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/eagerflow/eagerflow/tensor"
)

// Filter keeps the elements pred accepts. A call of pred in progress when
// the pipeline is cancelled is waited for (FilterContext's can stop).
func (d *Dataset) Filter(pred func(Element) (bool, error)) *Dataset {
	return d.FilterContext(withoutContext(pred))
}

// FilterContext is Filter for a predicate that takes the pipeline's
// context (see MapContext).
func (d *Dataset) FilterContext(pred func(ctx context.Context, e Element) (bool, error)) *Dataset {
	return d.derive("Filter", func(epoch int) iterator {
		up := d.open(epoch)
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for {
				e, err := up.next(ctx)
				if err != nil {
					return nil, stageErr(d.stage, err)
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				keep, err := guard("Filter", pred, ctx, e)
				if err != nil {
					return nil, userErr("Filter", err)
				}
				if keep {
					return e, nil
				}
			}
		}, closeFn: up.close}
	})
}

// Shard yields every n-th element starting at index (tf.data's shard):
// the part of the dataset that worker index of n reads, so that the n
// workers together read each element once. Over FromSlices it keeps
// random access (a Shuffle before it permutes the whole set the same way
// on every worker, with the same seed). n < 1 or an index outside [0, n)
// yields nothing.
func (d *Dataset) Shard(n, index int) *Dataset {
	if n < 1 || index < 0 || index >= n {
		return d.Take(0)
	}
	if d.rows != nil {
		return d.rows.strided(n, index).dataset("Shard")
	}
	return d.derive("Shard", func(epoch int) iterator {
		up, i := d.open(epoch), 0
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for {
				e, err := up.next(ctx)
				if err != nil {
					return nil, stageErr(d.stage, err)
				}
				i++
				if (i-1)%n == index {
					return e, nil
				}
			}
		}, closeFn: up.close}
	})
}

// Take yields at most the first n elements.
func (d *Dataset) Take(n int) *Dataset {
	if d.rows != nil {
		return d.rows.sliced(0, n).dataset("Take")
	}
	return d.derive("Take", func(epoch int) iterator {
		up, i := d.open(epoch), 0
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			if i >= n {
				return nil, io.EOF
			}
			i++
			e, err := up.next(ctx)
			return e, stageErr(d.stage, err)
		}, closeFn: up.close}
	})
}

// Skip drops the first n elements.
func (d *Dataset) Skip(n int) *Dataset {
	if d.rows != nil {
		return d.rows.sliced(n, d.rows.n).dataset("Skip")
	}
	return d.derive("Skip", func(epoch int) iterator {
		up, skipped := d.open(epoch), 0
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for skipped < n {
				if _, err := up.next(ctx); err != nil {
					return nil, stageErr(d.stage, err)
				}
				skipped++
			}
			e, err := up.next(ctx)
			return e, stageErr(d.stage, err)
		}, closeFn: up.close}
	})
}

// Repeat runs the dataset count times (count < 0: forever), each time as a
// new epoch (Shuffle reshuffles per epoch).
func (d *Dataset) Repeat(count int) *Dataset {
	return d.derive("Repeat", func(epoch int) iterator {
		run := 0
		up := d.open(epoch * max(count, 1))
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for {
				e, err := up.next(ctx)
				if err != io.EOF {
					return e, stageErr(d.stage, err)
				}
				up.close()
				run++
				if count >= 0 && run >= count {
					up = &funcIter{nextFn: func(context.Context) (Element, error) { return nil, io.EOF }}
					return nil, io.EOF
				}
				up = d.open(epoch*max(count, 1) + run)
			}
		}, closeFn: func() { up.close() }}
	})
}

// Enumerate prepends each element's position as an Int64 scalar.
func (d *Dataset) Enumerate() *Dataset {
	return d.derive("Enumerate", func(epoch int) iterator {
		up, i := d.open(epoch), int64(0)
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			e, err := up.next(ctx)
			if err != nil {
				return nil, stageErr(d.stage, err)
			}
			out := append(Element{tensor.Scalar(i)}, e...)
			i++
			return out, nil
		}, closeFn: up.close}
	})
}

// Zip yields the components of the datasets' elements side by side, ending
// with the shortest. A nil dataset is the error of the first element.
func Zip(ds ...*Dataset) *Dataset {
	for i, d := range ds {
		if d == nil {
			return failing("Zip", fmt.Errorf("data: Zip: dataset %d is nil", i))
		}
	}
	return &Dataset{stage: "Zip", open: func(epoch int) iterator {
		ups := make([]iterator, len(ds))
		for i, d := range ds {
			ups[i] = d.open(epoch)
		}
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			var out Element
			for i, up := range ups {
				e, err := up.next(ctx)
				if err != nil {
					return nil, stageErr(ds[i].stage, err)
				}
				out = append(out, e...)
			}
			return out, nil
		}, closeFn: func() {
			for _, up := range ups {
				up.close()
			}
		}}
	}}
}

// Shuffle draws elements at random from a buffer of size elements, refilled
// from upstream (tf.data's shuffle). The order depends only on seed (and,
// with reshuffle, on the epoch), never on timing or core count.
//
// Over FromSlices (and Take or Skip of it) with size at least its length,
// Shuffle holds no buffer: it permutes row numbers (a uniform permutation,
// as a full buffer gives, in an order of its own) and the rows are copied
// only when they are read, so shuffling a training set does not copy it.
func (d *Dataset) Shuffle(size int, seed uint64, reshuffleEachEpoch bool) *Dataset {
	if d.rows != nil && size >= d.rows.n {
		return d.rows.shuffled(seed, reshuffleEachEpoch).dataset("Shuffle")
	}
	return d.derive("Shuffle", func(epoch int) iterator {
		up := d.open(epoch)
		rng := tensor.NewRNG(shuffleSeed(seed, epoch, reshuffleEachEpoch))
		var buf []Element
		ended := false
		draw := make([]uint32, 1)
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for !ended && len(buf) < max(size, 1) {
				e, err := up.next(ctx)
				if err == io.EOF {
					ended = true
					break
				}
				if err != nil {
					return nil, stageErr(d.stage, err)
				}
				buf = append(buf, e)
			}
			if len(buf) == 0 {
				return nil, io.EOF
			}
			rng.Uint32s(draw)
			k := int(uint64(draw[0]) * uint64(len(buf)) >> 32)
			e := buf[k]
			buf[k] = buf[len(buf)-1]
			buf = buf[:len(buf)-1]
			return e, nil
		}, closeFn: up.close}
	})
}

// Cache keeps the elements of the first complete run in memory and serves
// later runs (epochs) from there. An incomplete first run caches nothing.
func (d *Dataset) Cache() *Dataset {
	var mu sync.Mutex
	var cached []Element
	done := false
	return d.derive("Cache", func(epoch int) iterator {
		mu.Lock()
		ready := done
		mu.Unlock()
		if ready {
			i := 0
			return &funcIter{nextFn: func(context.Context) (Element, error) {
				if i >= len(cached) {
					return nil, io.EOF
				}
				i++
				return cached[i-1], nil
			}}
		}
		up := d.open(epoch)
		var fill []Element
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			e, err := up.next(ctx)
			if err == io.EOF {
				mu.Lock()
				if !done {
					cached, done = fill, true
				}
				mu.Unlock()
			} else if err == nil {
				fill = append(fill, e)
			}
			return e, stageErr(d.stage, err)
		}, closeFn: up.close}
	})
}

func sameSpec(a, b Element) error {
	if len(a) != len(b) {
		return fmt.Errorf("elements have %d and %d components", len(a), len(b))
	}
	for i := range a {
		if a[i].DType() != b[i].DType() || a[i].Rank() != b[i].Rank() {
			return fmt.Errorf("component %d is %s in one element and %s in another", i, tensor.Describe(a[i]), tensor.Describe(b[i]))
		}
	}
	return nil
}
