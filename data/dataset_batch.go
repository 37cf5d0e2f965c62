package data

import (
	"context"
	"fmt"
	"io"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// Batch stacks n consecutive elements into one, each component gaining a
// leading dimension. The last batch may be short unless dropRemainder.
// Components must keep their shapes across a batch (see PaddedBatch).
func (d *Dataset) Batch(n int, dropRemainder bool) *Dataset {
	return d.batch("Batch", n, dropRemainder, false, 0)
}

// PaddedBatch is Batch for components whose shapes vary: each is padded
// with padValue at the end of every dimension to the batch's largest shape.
func (d *Dataset) PaddedBatch(n int, dropRemainder bool, padValue float64) *Dataset {
	return d.batch("PaddedBatch", n, dropRemainder, true, padValue)
}

func (d *Dataset) batch(stage string, n int, drop, pad bool, padValue float64) *Dataset {
	if n < 1 {
		n = 1
	}
	if d.rows != nil {
		return d.rows.batches(stage, n, drop) // rows alike in shape: nothing to pad
	}
	return d.derive(stage, func(epoch int) iterator {
		up := d.open(epoch)
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			group := make([]Element, 0, n)
			for len(group) < n {
				e, err := up.next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, stageErr(d.stage, err)
				}
				if len(group) > 0 {
					if err := sameSpec(group[0], e); err != nil {
						return nil, &StageError{Stage: stage, Err: err}
					}
				}
				group = append(group, e)
			}
			if len(group) == 0 || (drop && len(group) < n) {
				return nil, io.EOF
			}
			out, err := stack(group, pad, padValue)
			if err != nil {
				return nil, &StageError{Stage: stage, Err: err}
			}
			return out, nil
		}, closeFn: up.close}
	})
}

// stack joins the elements of a group component by component.
func stack(group []Element, pad bool, padValue float64) (Element, error) {
	out := make(Element, len(group[0]))
	for c := range out {
		shape := group[0][c].Shape().Clone()
		for i, e := range group[1:] {
			s := e[c].Shape()
			if pad {
				for k := range shape {
					shape[k] = max(shape[k], s[k])
				}
			} else if !s.Equal(shape) {
				return nil, fmt.Errorf("component %d has shape %v in element %d and %v in element 0 (PaddedBatch pads)", c, s, i+1, shape)
			}
		}
		dt := group[0][c].DType()
		t := backend.MustEmptyHost(dt, append([]int{len(group)}, shape...))
		dst := t.HostBytes()
		size := shape.NumElements() * dt.Size()
		if pad {
			backend.FillElems(dst, tensor.FullOf(dt, padValue).HostBytes())
		}
		for i, e := range group {
			src, err := backend.OnHost(e[c])
			if err != nil {
				return nil, fmt.Errorf("component %d of element %d: %w", c, i, err)
			}
			if src.Shape().Equal(shape) {
				copy(dst[i*size:(i+1)*size], src.HostBytes())
				continue
			}
			backend.MoveElems(dt.Size(), dst, i*shape.NumElements(), tensor.Strides(shape, nil),
				src.HostBytes(), 0, tensor.Strides(src.Shape(), nil), src.Shape())
		}
		out[c] = t
	}
	return out, nil
}

// Unbatch splits each element along its first dimension into elements.
func (d *Dataset) Unbatch() *Dataset {
	return d.derive("Unbatch", func(epoch int) iterator {
		up := d.open(epoch)
		var cur Element
		row, rows := 0, 0
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for row >= rows {
				e, err := up.next(ctx)
				if err != nil {
					return nil, stageErr(d.stage, err)
				}
				rows = -1
				for i, c := range e {
					if c.Rank() == 0 {
						return nil, &StageError{Stage: "Unbatch", Err: fmt.Errorf("component %d is a scalar", i)}
					}
					if rows >= 0 && c.Dim(0) != rows {
						return nil, &StageError{Stage: "Unbatch", Err: fmt.Errorf("component %d has %d rows, component 0 has %d", i, c.Dim(0), rows)}
					}
					rows = c.Dim(0)
				}
				cur, row = make(Element, len(e)), 0
				for i, c := range e {
					if cur[i], err = backend.OnHost(c); err != nil {
						return nil, &StageError{Stage: "Unbatch", Err: fmt.Errorf("component %d: %w", i, err)}
					}
				}
			}
			out := make(Element, len(cur))
			for i, c := range cur {
				out[i] = rowOf(c, row)
			}
			row++
			return out, nil
		}, closeFn: up.close}
	})
}
