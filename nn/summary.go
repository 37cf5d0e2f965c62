package nn

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/tensor"
	"google.golang.org/protobuf/encoding/protowire"
)

var writers atomic.Int64

// SummaryWriter writes TensorBoard event files (events.out.tfevents.*):
// TFRecord-framed Event protos with scalar and histogram summaries, so
// `tensorboard --logdir DIR` shows the curves. Each event is flushed to the
// file as it is written. Not safe for concurrent use.
type SummaryWriter struct {
	f    *os.File
	w    *data.Writer
	path string
	now  func() time.Time
}

// NewSummaryWriter creates dir if needed and a new event file in it.
func NewSummaryWriter(dir string) (*SummaryWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("nn: summaries: %w", err)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	// A per-process counter keeps writers opened in the same second apart.
	name := filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.%s.%d.%d.v2", time.Now().Unix(), host, os.Getpid(), writers.Add(1)))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nn: summaries: %w", err)
	}
	s := &SummaryWriter{f: f, w: data.NewWriter(f, data.WriterOptions{Compression: data.CompressionNone}), path: name, now: time.Now}
	var ev []byte
	ev = s.header(ev, 0)
	ev = protowire.AppendTag(ev, 3, protowire.BytesType) // file_version
	ev = protowire.AppendString(ev, "brain.Event:2")
	if err := s.write(ev); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// Path returns the event file's name.
func (s *SummaryWriter) Path() string { return s.path }

// header starts an Event with its wall time (1) and step (2).
func (s *SummaryWriter) header(b []byte, step int64) []byte {
	t := s.now()
	b = protowire.AppendTag(b, 1, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(float64(t.UnixNano())/1e9))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(step))
}

func (s *SummaryWriter) write(ev []byte) error {
	if err := s.w.Write(ev); err != nil {
		return fmt.Errorf("nn: summaries: %w", err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("nn: summaries: %w", err)
	}
	return nil
}

// summary wraps one Summary.Value (tag + value field) in an Event.
func (s *SummaryWriter) summary(step int64, tag string, value func(b []byte) []byte) error {
	var v []byte
	v = protowire.AppendTag(v, 1, protowire.BytesType) // tag
	v = protowire.AppendString(v, tag)
	v = value(v)
	var sum []byte
	sum = protowire.AppendTag(sum, 1, protowire.BytesType) // Summary.value
	sum = protowire.AppendBytes(sum, v)
	ev := s.header(nil, step)
	ev = protowire.AppendTag(ev, 5, protowire.BytesType) // Event.summary
	ev = protowire.AppendBytes(ev, sum)
	return s.write(ev)
}

// Scalar records a value of tag at step.
func (s *SummaryWriter) Scalar(tag string, step int64, value float64) error {
	return s.summary(step, tag, func(b []byte) []byte {
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type) // simple_value
		return protowire.AppendFixed32(b, math.Float32bits(float32(value)))
	})
}

// Histogram records the distribution of a float tensor's values at step,
// in 30 equal-width buckets between its minimum and maximum.
func (s *SummaryWriter) Histogram(tag string, step int64, values *tensor.Tensor) error {
	var xs []float64
	switch values.DType() {
	case tensor.Float32:
		for _, v := range tensor.ToSlice[float32](values) {
			xs = append(xs, float64(v))
		}
	case tensor.Float64:
		xs = tensor.ToSlice[float64](values)
	default:
		return fmt.Errorf("nn: summaries: histogram of %v values", values.DType())
	}
	lo, hi, sum, sq := math.Inf(1), math.Inf(-1), 0.0, 0.0
	for _, v := range xs {
		lo, hi = min(lo, v), max(hi, v)
		sum += v
		sq += v * v
	}
	const n = 30
	limits, counts := make([]float64, n), make([]float64, n)
	width := (hi - lo) / n
	for i := range limits {
		limits[i] = lo + width*float64(i+1)
	}
	if len(xs) > 0 {
		limits[n-1] = hi
	}
	for _, v := range xs {
		k := n - 1
		if width > 0 {
			k = min(int((v-lo)/width), n-1)
		}
		counts[k]++
	}
	if len(xs) == 0 {
		lo, hi = 0, 0
	}
	var h []byte
	for i, f := range []float64{lo, hi, float64(len(xs)), sum, sq} {
		h = protowire.AppendTag(h, protowire.Number(i+1), protowire.Fixed64Type)
		h = protowire.AppendFixed64(h, math.Float64bits(f))
	}
	for i, list := range [][]float64{limits, counts} { // bucket_limit (6), bucket (7)
		field := protowire.Number(6 + i)
		var packed []byte
		for _, f := range list {
			packed = protowire.AppendFixed64(packed, math.Float64bits(f))
		}
		h = protowire.AppendTag(h, field, protowire.BytesType)
		h = protowire.AppendBytes(h, packed)
	}
	return s.summary(step, tag, func(b []byte) []byte {
		b = protowire.AppendTag(b, 5, protowire.BytesType) // histo
		return protowire.AppendBytes(b, h)
	})
}

// Close flushes and closes the event file.
func (s *SummaryWriter) Close() error {
	err := s.w.Close()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("nn: summaries: %w", err)
	}
	return nil
}
