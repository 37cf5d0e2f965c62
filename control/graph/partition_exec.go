package graph

import (
	"errors"
	"fmt"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Running partitions (partition.go cuts them): each by an executor of its
// own, at once; the values that cross meet in the call's mailbox within
// this process, or through the Exchange between processes.

// rankOf is the process that runs device d's partition.
func (p *Partitioned) rankOf(d device.Device) int {
	if p.o.RankOf == nil {
		return p.o.Rank
	}
	return p.o.RankOf(d)
}

// Execute runs this process's partitions on args at once, each by an
// executor of its own, and returns g's results: those of other processes'
// partitions are nil. A partition that fails (an op's error, which
// Execute would panic with, comes back as the error here) makes every
// receive of this process's others fail, so that the call returns its
// error (another process's receives fail after its Exchange's timeout).
func (p *Partitioned) Execute(args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	if p == nil {
		return nil, errors.New("graph: Partitioned.Execute: nil")
	}
	if len(p.Parts) == 1 && p.Ranks[0] == p.o.Rank {
		return Execute(p.Parts[0], args...)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mail = newPartMail()
	outs := make([][]*tensor.Tensor, len(p.Parts))
	errs := make([]error, len(p.Parts))
	var wg sync.WaitGroup
	for i, part := range p.Parts {
		if p.Ranks[i] != p.o.Rank {
			continue
		}
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil { // ops' errors and the executor's own failures panic
					if e, ok := r.(error); ok {
						errs[i] = e
					} else {
						errs[i] = fmt.Errorf("%v", r)
					}
					p.mail.fail(errs[i])
				}
			}()
			outs[i], errs[i] = Execute(part, args...)
			if errs[i] != nil {
				p.mail.fail(fmt.Errorf("partition %d (%s) failed: %w", i, p.Devices[i].Name(), errs[i]))
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, errPartitionFailed) {
			return nil, fmt.Errorf("graph: partition %d (%s): %w", i, p.Devices[i].Name(), err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := make([]*tensor.Tensor, len(p.results))
	for i, r := range p.results {
		if outs[r.part] != nil {
			res[i] = outs[r.part][r.index]
		}
	}
	return res, nil
}

// errPartitionFailed is what the receives of the other partitions get
// when one fails.
var errPartitionFailed = errors.New("graph: another partition failed")

// partMail is where one call's transfers meet: by edge and iteration tag.
type partMail struct {
	mu      sync.Mutex
	arrived map[string]partValue
	waiting map[string]func(t *tensor.Tensor, dead bool, err error)
	err     error
}

type partValue struct {
	t    *tensor.Tensor
	dead bool
}

func newPartMail() *partMail {
	return &partMail{arrived: map[string]partValue{}, waiting: map[string]func(*tensor.Tensor, bool, error){}}
}

func (m *partMail) post(key string, v partValue) {
	m.mu.Lock()
	done, ok := m.waiting[key]
	if ok {
		delete(m.waiting, key)
	} else {
		m.arrived[key] = v
	}
	m.mu.Unlock()
	if ok {
		done(v.t, v.dead, nil)
	}
}

func (m *partMail) await(key string, done func(t *tensor.Tensor, dead bool, err error)) {
	m.mu.Lock()
	v, ok := m.arrived[key]
	err := m.err
	switch {
	case ok:
		delete(m.arrived, key)
	case err == nil:
		m.waiting[key] = done
	}
	m.mu.Unlock()
	switch {
	case ok:
		done(v.t, v.dead, nil)
	case err != nil:
		done(nil, false, err)
	}
}

// fail ends every receive waiting, and every later one, with err.
func (m *partMail) fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = fmt.Errorf("%w: %w", errPartitionFailed, err)
	}
	waiting := m.waiting
	m.waiting = map[string]func(*tensor.Tensor, bool, error){}
	err = m.err
	m.mu.Unlock()
	for _, done := range waiting {
		done(nil, false, err)
	}
}

// The transfers' ops and attributes: Sender and Receiver for the
// executor, through the call's mailbox or the Exchange. The ops are not
// registered: nothing calls them but a partition's executor, which runs
// them as transfers.
var (
	partSendOp = &eager.Op{Name: "PartitionSend", Inputs: 1, Ordered: true, NonDifferentiable: true}
	partRecvOp = &eager.Op{Name: "PartitionRecv", Inputs: 1, Ordered: true, NonDifferentiable: true}
)

type partSend struct {
	p   *Partitioned
	key int
	to  int // the receiver's rank
}

func (a partSend) String() string { return fmt.Sprintf("edge=%d to=%d", a.key, a.to) }

// partKey is the key of edge's value at the iteration tag.
func partKey(edge int, tag string) string { return fmt.Sprintf("partition/edge %d%s", edge, tag) }

// SendTagged posts x under the edge's key and tag (Sender): to another
// process through the Exchange (which copies it), or within this one a
// handle of its own on x's buffer, which the receiving partition's
// executor owns (the sending one releases x once the send has read it).
func (a partSend) SendTagged(tag string, x *tensor.Tensor, dead bool) error {
	if a.to != a.p.o.Rank {
		return a.p.o.Exchange.Post(a.to, partKey(a.key, tag), x, dead)
	}
	if x != nil && !dead {
		x = x.View(x.Shape(), x.Layout())
	}
	a.p.mail.post(partKey(a.key, tag), partValue{x, dead})
	return nil
}

type partRecv struct {
	p    *Partitioned
	key  int
	from int           // the sender's rank
	dev  device.Device // where the value lives in the graph (an Exchange delivers to the host)
}

func (a partRecv) String() string { return fmt.Sprintf("edge=%d from=%d", a.key, a.from) }

// ReceiveTagged takes the value under the edge's key and tag (Receiver).
func (a partRecv) ReceiveTagged(tag string, done func(t *tensor.Tensor, dead bool, err error)) {
	if a.from != a.p.o.Rank {
		a.p.o.Exchange.Await(a.from, partKey(a.key, tag), func(t *tensor.Tensor, dead bool, err error) {
			if err == nil && !dead && t != nil && a.dev != nil && t.Device() != a.dev {
				moved, merr := t.To(a.dev)
				t.Release()
				t, err = moved, merr
			}
			done(t, dead, err)
		})
		return
	}
	a.p.mail.await(partKey(a.key, tag), done)
}
