package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// MapOptions configure Map: Parallel > 1 runs fn on that many goroutines;
// the output keeps the input order unless Unordered, which yields results
// as they finish.
type MapOptions struct {
	Parallel  int
	Unordered bool
}

type result struct {
	e   Element
	err error
}

// Map applies fn to every element. fn must be safe for concurrent use when
// Parallel > 1. An error from fn ends the pipeline (a *StageError "Map").
// When the pipeline is cancelled (its context, or the consumer leaving
// the loop), no element is started after, but a call of fn in progress
// is waited for: use MapContext for a function that can stop early.
func (d *Dataset) Map(fn func(Element) (Element, error), opts ...MapOptions) *Dataset {
	return d.MapContext(withoutContext(fn), opts...)
}

// MapContext is Map for a function that takes a context: the one the
// pipeline runs under, cancelled when the pipeline is (its consumer's
// context, or the consumer leaving the loop), so that a slow fn (a read,
// a decode) can return at once with ctx.Err().
func (d *Dataset) MapContext(fn func(ctx context.Context, e Element) (Element, error), opts ...MapOptions) *Dataset {
	var o MapOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Parallel <= 1 {
		return d.derive("Map", func(epoch int) iterator {
			up := d.open(epoch)
			return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
				e, err := up.next(ctx)
				if err != nil {
					return nil, stageErr(d.stage, err)
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				out, err := guard("Map", fn, ctx, e)
				if err != nil {
					return nil, userErr("Map", err)
				}
				return out, nil
			}, closeFn: up.close}
		})
	}
	return d.derive("Map", func(epoch int) iterator { return newParallelMap(d, epoch, fn, o) })
}

// parallelMap runs fn on workers. A feeder goroutine reads upstream (one
// reader at a time) and hands out jobs; for ordered output each job has a
// slot, queued in input order.
type parallelMap struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	up      iterator
	order   chan chan result // ordered: slots in input order
	results chan result      // unordered
	once    sync.Once
}

func newParallelMap(d *Dataset, epoch int, fn func(context.Context, Element) (Element, error), o MapOptions) *parallelMap {
	ctx, cancel := context.WithCancel(context.Background())
	m := &parallelMap{cancel: cancel, up: d.open(epoch)}
	type job struct {
		e    Element
		slot chan result
	}
	jobs := make(chan job, o.Parallel)
	if o.Unordered {
		m.results = make(chan result, o.Parallel)
	} else {
		m.order = make(chan chan result, o.Parallel)
	}
	var workers sync.WaitGroup
	deliver := func(slot chan result, r result) bool {
		if slot != nil {
			slot <- r // buffered: never blocks
			return true
		}
		select {
		case m.results <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for range o.Parallel {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					continue // cancelled: queued jobs are dropped, not run
				}
				out, err := guard("Map", fn, ctx, j.e)
				if !deliver(j.slot, result{out, userErr("Map", err)}) {
					return
				}
			}
		}()
	}
	m.wg.Add(1)
	go func() { // feeder
		defer m.wg.Done()
		defer func() {
			close(jobs)
			workers.Wait()
			if m.results != nil {
				close(m.results)
			} else {
				close(m.order)
			}
		}()
		for {
			e, err := safeNext(m.up, ctx, d.stage)
			var slot chan result
			if !o.Unordered {
				slot = make(chan result, 1)
				select {
				case m.order <- slot:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					deliver(slot, result{err: stageErr(d.stage, err)})
				} else if slot != nil {
					slot <- result{err: io.EOF}
				}
				return
			}
			select {
			case jobs <- job{e, slot}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return m
}

func (m *parallelMap) next(ctx context.Context) (Element, error) {
	var r result
	var ok bool
	if m.results != nil {
		select {
		case r, ok = <-m.results:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		var slot chan result
		select {
		case slot, ok = <-m.order:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ok {
			select {
			case r = <-slot:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if !ok {
		return nil, io.EOF
	}
	return r.e, r.err
}

func (m *parallelMap) close() {
	m.once.Do(func() {
		m.cancel()
		// Drain so that blocked senders see the cancellation and exit.
		go func() {
			if m.results != nil {
				for range m.results {
				}
			} else {
				for range m.order {
				}
			}
		}()
		m.wg.Wait()
		m.up.close()
	})
}

// Prefetch reads up to n elements ahead on a goroutine, so that producing
// the next batch overlaps with consuming this one.
func (d *Dataset) Prefetch(n int) *Dataset {
	return d.derive("Prefetch", func(epoch int) iterator {
		ctx, cancel := context.WithCancel(context.Background())
		up := d.open(epoch)
		ch := make(chan result, max(n, 1))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			for ctx.Err() == nil { // cancelled: start no further element
				e, err := safeNext(up, ctx, d.stage)
				select {
				case ch <- result{e, stageErr(d.stage, err)}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		var once sync.Once
		return &funcIter{nextFn: func(c context.Context) (Element, error) {
			select {
			case r, ok := <-ch:
				if !ok {
					return nil, io.EOF
				}
				return r.e, r.err
			case <-c.Done():
				return nil, c.Err()
			}
		}, closeFn: func() {
			once.Do(func() {
				cancel()
				for range ch { // unblock the producer
				}
				wg.Wait()
				up.close()
			})
		}}
	})
}

// InterleaveOptions configure Interleave: Cycle datasets are read at once,
// Block elements from each in turn; Parallel prefetches each.
type InterleaveOptions struct {
	Cycle, Block int
	Parallel     bool
}

// Interleave maps each element to a dataset with fn and interleaves their
// elements: Block from each of Cycle open datasets in turn, opening the next
// when one ends (tf.data's interleave; the order is deterministic).
func (d *Dataset) Interleave(fn func(Element) (*Dataset, error), o InterleaveOptions) *Dataset {
	cycle, block := max(o.Cycle, 1), max(o.Block, 1)
	return d.derive("Interleave", func(epoch int) iterator {
		up := d.open(epoch)
		var open []iterator
		upDone := false
		cur, taken := 0, 0
		closeAll := func() {
			for _, it := range open {
				it.close()
			}
			open = nil
			up.close()
		}
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			for {
				for !upDone && len(open) < cycle {
					e, err := up.next(ctx)
					if err == io.EOF {
						upDone = true
						break
					}
					if err != nil {
						return nil, stageErr(d.stage, err)
					}
					sub, err := guard("Interleave", withoutContext(fn), ctx, e)
					if err != nil {
						return nil, userErr("Interleave", err)
					}
					if o.Parallel {
						sub = sub.Prefetch(block)
					}
					open = append(open, sub.open(epoch))
				}
				if len(open) == 0 {
					return nil, io.EOF
				}
				cur %= len(open)
				e, err := open[cur].next(ctx)
				if err == io.EOF {
					open[cur].close()
					open = append(open[:cur], open[cur+1:]...)
					taken = 0
					continue
				}
				if err != nil {
					return nil, stageErr("Interleave", err)
				}
				if taken++; taken >= block {
					cur, taken = cur+1, 0
				}
				return e, nil
			}
		}, closeFn: closeAll}
	})
}

// TFRecordOptions configure TFRecordFiles.
type TFRecordOptions struct {
	Compression  Compression
	ShuffleFiles bool   // a new file order every epoch, from Seed
	Seed         uint64 // for ShuffleFiles
	Parallel     int    // files read at once (interleaved record by record)
	SkipCorrupt  bool
}

// TFRecordFiles is the dataset of the records of files, each as a Uint8
// vector. Files are read in order (or shuffled per epoch), Parallel at a
// time interleaved by record. Read errors name the file, record and offset.
func TFRecordFiles(files []string, o TFRecordOptions) *Dataset {
	list := &Dataset{stage: "TFRecordFiles", open: func(epoch int) iterator {
		order := make([]int, len(files))
		for i := range order {
			order[i] = i
		}
		if o.ShuffleFiles {
			rng := tensor.NewRNG(o.Seed + uint64(epoch)*0x9e3779b97f4a7c15)
			w := make([]uint32, 1)
			for i := len(order) - 1; i > 0; i-- {
				rng.Uint32s(w)
				j := int(uint64(w[0]) * uint64(i+1) >> 32)
				order[i], order[j] = order[j], order[i]
			}
		}
		i := 0
		return &funcIter{nextFn: func(context.Context) (Element, error) {
			if i >= len(order) {
				return nil, io.EOF
			}
			i++
			return Element{tensor.Scalar(int64(order[i-1]))}, nil
		}}
	}}
	return list.Interleave(func(e Element) (*Dataset, error) {
		name := files[e[0].Item().(int64)]
		return tfrecordFile(name, o), nil
	}, InterleaveOptions{Cycle: max(o.Parallel, 1), Block: 1, Parallel: o.Parallel > 1})
}

func tfrecordFile(name string, o TFRecordOptions) *Dataset {
	stage := fmt.Sprintf("TFRecord(%q)", name)
	return &Dataset{stage: stage, open: func(int) iterator {
		var r *Reader
		return &funcIter{nextFn: func(context.Context) (Element, error) {
			if r == nil {
				var err error
				if r, err = OpenReader(name, ReaderOptions{Compression: o.Compression, SkipCorrupt: o.SkipCorrupt}); err != nil {
					return nil, &StageError{Stage: stage, Err: err}
				}
			}
			rec, err := r.Next()
			if err != nil {
				if err == io.EOF {
					return nil, io.EOF
				}
				return nil, &StageError{Stage: stage, Err: err}
			}
			t := backend.MustEmptyHost(tensor.Uint8, []int{len(rec)})
			copy(t.HostBytes(), rec)
			return Element{t}, nil
		}, closeFn: func() {
			if r != nil {
				r.Close()
			}
		}}
	}}
}

// describe lists e's components as "float32[2 3], <nil>".
func describe(e Element) string {
	parts := make([]string, len(e))
	for i, c := range e {
		parts[i] = tensor.Describe(c)
	}
	return strings.Join(parts, ", ")
}

// ParseWith returns a Map function that parses an element holding one
// serialized Example (a Uint8 vector, as TFRecordFiles yields) by p: the
// result has one component per feature of the spec, in sorted name order
// (VarLen features padded or not, as their spec says; unpadded ones give
// their values only).
func ParseWith(p *Parser) func(Element) (Element, error) {
	return func(e Element) (Element, error) {
		if p == nil {
			return nil, errors.New("data: ParseWith: the parser is nil")
		}
		if len(e) != 1 || e[0] == nil || e[0].DType() != tensor.Uint8 {
			return nil, fmt.Errorf("data: ParseWith needs one Uint8 record, got %d components (%v)", len(e), describe(e))
		}
		rec, err := backend.OnHost(e[0])
		if err != nil {
			return nil, fmt.Errorf("data: ParseWith: %w", err)
		}
		parsed, err := p.Parse([][]byte{rec.HostBytes()})
		if err != nil {
			return nil, err
		}
		out := make(Element, 0, len(p.names))
		for _, name := range p.names {
			if t, ok := parsed.Dense[name]; ok {
				out = append(out, rowOf(t.Contiguous(), 0))
			} else {
				out = append(out, parsed.Ragged[name].Values)
			}
		}
		return out, nil
	}
}
