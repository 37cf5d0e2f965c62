package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/eagerflow/eagerflow/backend"

	"github.com/eagerflow/eagerflow/tensor"
)

// Element is one item of a Dataset: a tuple of tensors (its components).
type Element []*tensor.Tensor

// Dataset is a pipeline of stages that yields Elements, like tf.data: built
// from constructors and transformations, run with All. A Dataset is a
// description; each All (and each epoch under Repeat) runs it afresh.
// Datasets are safe to share: running one does not change it.
type Dataset struct {
	stage string
	open  func(epoch int) iterator
	rows  *rowSource // random access, when the dataset has it (FromSlices)
}

// iterator is one running stage.
type iterator interface {
	// next returns the next element, or io.EOF at the end.
	next(ctx context.Context) (Element, error)
	// close stops the stage and every stage it reads, waiting for their
	// goroutines to exit.
	close()
}

// StageError is an error that arose in a pipeline stage; Stage names it
// (for example "Map" or `TFRecord("a.tfrecord")`).
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return fmt.Sprintf("data: %s: %v", e.Stage, e.Err) }
func (e *StageError) Unwrap() error { return e.Err }

func stageErr(stage string, err error) error {
	var se *StageError
	if err == nil || err == io.EOF || errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &StageError{Stage: stage, Err: err}
}

// All runs the pipeline: for elem, err := range ds.All(ctx). An error from
// any stage is yielded once, as a *StageError naming the stage, and ends
// the loop; so does the context's error when it is cancelled. Leaving the
// loop early stops every stage; no goroutine is left running. It is
// Epoch(ctx, 0): every All of a dataset yields the same elements in the
// same order; a training loop that runs the dataset once per epoch runs
// Epoch with the epoch's number, so that a Shuffle with
// reshuffleEachEpoch draws each epoch's own order (nn.Fit does).
func (d *Dataset) All(ctx context.Context) iter.Seq2[Element, error] { return d.Epoch(ctx, 0) }

// Epoch runs the pipeline as its epoch n (from 0), as All does: a Shuffle
// with reshuffleEachEpoch draws epoch n's order (a Repeat inside counts
// its passes on from n times its count). The order depends only on the
// seeds and n, so a training run resumed at epoch n sees the order an
// uninterrupted one saw there. It panics with a *tensor.Error for a
// negative n.
func (d *Dataset) Epoch(ctx context.Context, n int) iter.Seq2[Element, error] {
	if n < 0 {
		panic(tensor.NewError("data", "Epoch", tensor.ErrValue, nil, "", "epoch %d is negative", n))
	}
	return func(yield func(Element, error) bool) {
		it := d.open(n)
		defer it.close()
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			e, err := it.next(ctx)
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, stageErr(d.stage, err))
				return
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Collect runs the pipeline to the end and returns every element.
func (d *Dataset) Collect(ctx context.Context) ([]Element, error) {
	var out []Element
	for e, err := range d.All(ctx) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// funcIter adapts a next function (and an optional close) to iterator.
type funcIter struct {
	nextFn  func(ctx context.Context) (Element, error)
	closeFn func()
}

func (f *funcIter) next(ctx context.Context) (Element, error) { return f.nextFn(ctx) }
func (f *funcIter) close() {
	if f.closeFn != nil {
		f.closeFn()
	}
}

// derive builds a stage over d.
func (d *Dataset) derive(stage string, open func(epoch int) iterator) *Dataset {
	return &Dataset{stage: stage, open: open}
}

// failing is a dataset whose iteration ends at once with err: how a
// stage built from bad arguments (a nil dataset or tensor) reports them.
func failing(stage string, err error) *Dataset {
	return &Dataset{stage: stage, open: func(int) iterator {
		return &funcIter{nextFn: func(context.Context) (Element, error) { return nil, err }}
	}}
}

// nilComponent returns an error naming the first nil tensor of
// components, for function fn.
func nilComponent(fn string, components []*tensor.Tensor) error {
	for i, c := range components {
		if c == nil {
			return fmt.Errorf("data: %s: component %d is nil", fn, i)
		}
	}
	return nil
}

// FromTensors is a dataset of one element, the given tensors whole (none
// nil: a nil one is the error of its first element), as tf.data's
// from_tensors: batching it stacks the whole tensors under a new leading
// dimension of 1. A dataset of the tensors' rows, to shuffle and batch
// for training, is FromSlices (from_tensor_slices).
func FromTensors(components ...*tensor.Tensor) *Dataset {
	if err := nilComponent("FromTensors", components); err != nil {
		return failing("FromTensors", err)
	}
	e := Element(components)
	return &Dataset{stage: "FromTensors", open: func(int) iterator {
		done := false
		return &funcIter{nextFn: func(context.Context) (Element, error) {
			if done {
				return nil, io.EOF
			}
			done = true
			return e, nil
		}}
	}}
}

// FromSlices is a dataset of the slices along the first dimension of the
// given tensors (which must share it): element i holds row i of each.
// Tensors on another device are copied to the host (a dataset's elements
// are host tensors; a Map moves batches to a device).
func FromSlices(components ...*tensor.Tensor) (*Dataset, error) {
	if len(components) == 0 {
		return nil, errors.New("data: FromSlices: no tensors")
	}
	if err := nilComponent("FromSlices", components); err != nil {
		return nil, err
	}
	n := -1
	for i, c := range components {
		if c.Rank() == 0 {
			return nil, fmt.Errorf("data: FromSlices: component %d is a scalar", i)
		}
		if n >= 0 && c.Dim(0) != n {
			return nil, fmt.Errorf("data: FromSlices: component %d has %d rows, component 0 has %d", i, c.Dim(0), n)
		}
		n = c.Dim(0)
	}
	comps := make([]*tensor.Tensor, len(components))
	for i, c := range components {
		var err error
		if comps[i], err = backend.OnHost(c); err != nil {
			return nil, fmt.Errorf("data: FromSlices: component %d: %w", i, err)
		}
	}
	all := func(int) []int {
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		return rows
	}
	return (&rowSource{comps: comps, order: all, n: n}).dataset("FromSlices"), nil
}

// Range is the dataset of Int64 scalars start, start+step, ... before stop.
func Range(start, stop, step int64) *Dataset {
	return &Dataset{stage: "Range", open: func(int) iterator {
		v := start
		return &funcIter{nextFn: func(context.Context) (Element, error) {
			if step == 0 || (step > 0 && v >= stop) || (step < 0 && v <= stop) {
				return nil, io.EOF
			}
			e := Element{tensor.Scalar(v)}
			v += step
			return e, nil
		}}
	}}
}

// FromGenerator is a dataset of what gen yields, run afresh each epoch.
// gen stops when yield returns false; an error it returns ends the
// pipeline with that error. When the pipeline is cancelled, gen's work
// up to its next yield is waited for (FromGeneratorContext's can stop).
func FromGenerator(gen func(yield func(Element) bool) error) *Dataset {
	if gen == nil {
		return FromGeneratorContext(nil)
	}
	return FromGeneratorContext(func(_ context.Context, yield func(Element) bool) error { return gen(yield) })
}

// FromGeneratorContext is FromGenerator for a generator that takes a
// context, cancelled when the pipeline is (its consumer's context is, or
// the consumer leaves the loop), so that gen can return at once from the
// work between two yields.
func FromGeneratorContext(gen func(ctx context.Context, yield func(Element) bool) error) *Dataset {
	return &Dataset{stage: "FromGenerator", open: func(int) iterator {
		var genErr error
		ctx, cancel := context.WithCancel(context.Background())
		next, stop := iter.Pull(func(yield func(Element) bool) { genErr = gen(ctx, yield) })
		return &funcIter{
			nextFn: func(callCtx context.Context) (e Element, err error) {
				// The consumer's cancellation reaches gen while it runs.
				defer context.AfterFunc(callCtx, cancel)()
				// iter.Pull raises gen's panic here, in the caller of next.
				defer func() {
					if perr := recovered("FromGenerator", recover()); perr != nil {
						e, err = nil, perr
					}
				}()
				e, ok := next()
				if !ok {
					if genErr != nil {
						return nil, genErr
					}
					return nil, io.EOF
				}
				return e, nil
			},
			closeFn: func() { cancel(); stop() },
		}
	}}
}
