package collective

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func rendezvous(t *testing.T, n int) []*Rendezvous {
	t.Helper()
	var out []*Rendezvous
	for _, tr := range Loopback(n) {
		r, err := NewRendezvous(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		t.Cleanup(func() { r.Close() })
	}
	return out
}

func receive(t *testing.T, r *Rendezvous, from int, key string) (*tensor.Tensor, bool) {
	t.Helper()
	v, dead, err := r.Receive(from, key)
	if err != nil {
		t.Fatalf("Receive %q from %d: %v", key, from, err)
	}
	return v, dead
}

// Values meet under their keys whatever the order of posts and awaits;
// one key posted twice is taken in order; dead flags travel alone.
func TestRendezvousMatchesKeys(t *testing.T) {
	rs := rendezvous(t, 3)
	a := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	tr := ops.Transpose(a, 1, 0) // a transposed view: sent in its row-major order
	for _, p := range []struct {
		key  string
		t    *tensor.Tensor
		dead bool
	}{{"a", a, false}, {"b", tr, false}, {"d", nil, true}, {"e", tensor.Zeros(tensor.Int64, 0, 4), false},
		{"twice", tensor.Scalar(true), false}, {"twice", tensor.FromSlice([]uint8{7}), false}} {
		if err := rs[0].Post(2, p.key, p.t, p.dead); err != nil {
			t.Fatal(err)
		}
	}
	// Awaited before it is posted: delivered when it comes.
	late := make(chan *tensor.Tensor, 1)
	rs[2].Await(1, "late", func(v *tensor.Tensor, dead bool, err error) {
		if err != nil || dead {
			t.Errorf("late: %v %v", dead, err)
		}
		late <- v
	})
	if err := rs[1].Post(2, "late", tensor.FromSlice([]float64{9}), false); err != nil {
		t.Fatal(err)
	}
	if v := <-late; tensor.ToSlice[float64](v)[0] != 9 {
		t.Errorf("late: %v", v)
	}
	if v, _ := receive(t, rs[2], 0, "b"); !v.Shape().Equal(tensor.Shape{3, 2}) || !slices.Equal(tensor.ToSlice[float32](v), []float32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("b: %v", v)
	}
	if v, _ := receive(t, rs[2], 0, "a"); !slices.Equal(tensor.ToSlice[float32](v), []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("a: %v", v)
	}
	if v, dead := receive(t, rs[2], 0, "d"); !dead || v != nil {
		t.Errorf("d: %v dead %v", v, dead)
	}
	if v, _ := receive(t, rs[2], 0, "e"); !v.Shape().Equal(tensor.Shape{0, 4}) || v.DType() != tensor.Int64 {
		t.Errorf("e: %v", v)
	}
	if v, _ := receive(t, rs[2], 0, "twice"); v.DType() != tensor.Bool {
		t.Errorf("twice, first: %v", v)
	}
	if v, _ := receive(t, rs[2], 0, "twice"); v.DType() != tensor.Uint8 {
		t.Errorf("twice, second: %v", v)
	}
	// To itself.
	if err := rs[1].Post(1, "self", tensor.Scalar(int32(5)), false); err != nil {
		t.Fatal(err)
	}
	if v, _ := receive(t, rs[1], 1, "self"); v.Item().(int32) != 5 {
		t.Errorf("self: %v", v)
	}
}

// Many goroutines posting to one rank at once keep each header with its
// bytes.
func TestRendezvousConcurrentPosts(t *testing.T) {
	rs := rendezvous(t, 2)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := rs[0].Post(1, fmt.Sprint(i), tensor.FullOf(tensor.Float64, float64(i), 1+i%5), false); err != nil {
				t.Error(err)
			}
		})
	}
	for i := range n {
		wg.Go(func() {
			v, dead, err := rs[1].Receive(0, fmt.Sprint(n-1-i))
			want := float64(n - 1 - i)
			if err != nil || dead || v.NumElements() != 1+(n-1-i)%5 || tensor.ToSlice[float64](v)[0] != want {
				t.Errorf("key %d: %v %v %v", n-1-i, v, dead, err)
			}
		})
	}
	wg.Wait()
}

// A receive that nothing answers fails after the timeout naming the key
// and the rank; Close fails those still waiting; bad arguments are
// errors.
func TestRendezvousErrors(t *testing.T) {
	rs := rendezvous(t, 2)
	rs[1].SetTimeout(30 * time.Millisecond)
	_, _, err := rs[1].Receive(0, "never")
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrCollective) || !strings.Contains(err.Error(), `"never" from rank 0`) {
		t.Errorf("timeout: %v", err)
	}
	for name, err := range map[string]error{
		"rank":      rs[0].Post(2, "k", tensor.Scalar(1.0), false),
		"nil live":  rs[0].Post(1, "k", nil, false),
		"long key":  rs[0].Post(1, strings.Repeat("k", maxKey+1), tensor.Scalar(1.0), false),
		"high rank": rs[0].Post(1, "k", tensor.Zeros(tensor.Float32, 1, 1, 1, 1, 1, 1, 1, 1, 1), false),
	} {
		if !errors.Is(err, ErrCollective) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := rs[0].Receive(5, "k"); !errors.Is(err, ErrCollective) {
		t.Errorf("receive from rank 5: %v", err)
	}
	waiting := make(chan error, 1)
	rs[0].Await(1, "closed", func(_ *tensor.Tensor, _ bool, err error) { waiting <- err })
	rs[0].Close()
	if err := <-waiting; !errors.Is(err, ErrCollective) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Close: %v", err)
	}
	if err := rs[0].Post(1, "k", tensor.Scalar(1.0), false); err == nil {
		t.Error("Post after Close succeeded")
	}
}

// Headers that are not whole, or lie about their shape, are errors.
func TestDecodeHeaderRejects(t *testing.T) {
	good, err := header{key: "k", dtype: tensor.Float32, shape: tensor.Shape{2, 3}, bytes: 24}.encode()
	if err != nil {
		t.Fatal(err)
	}
	if h, err := decodeHeader(good); err != nil || h.key != "k" || !h.shape.Equal(tensor.Shape{2, 3}) {
		t.Fatalf("%+v %v", h, err)
	}
	for name, mutate := range map[string]func(b []byte){
		"short":   nil,
		"magic":   func(b []byte) { b[0] ^= 1 },
		"bytes":   func(b []byte) { b[9]++ },
		"dtype":   func(b []byte) { b[5] = 99 },
		"invalid": func(b []byte) { b[5] = 0 },
		"rank":    func(b []byte) { b[6] = maxRank + 1 },
		"key":     func(b []byte) { b[7], b[8] = 0xff, 0xff },
	} {
		b := slices.Clone(good)
		if mutate == nil {
			b = b[:100]
		} else {
			mutate(b)
		}
		if _, err := decodeHeader(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodeHeader(f *testing.F) {
	good, _ := header{key: "k", dtype: tensor.Float64, shape: tensor.Shape{4}, bytes: 32}.encode()
	f.Add(good)
	dead, _ := header{key: "d", dead: true}.encode()
	f.Add(dead)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil || h.dead {
			return
		}
		if size, ok := tensor.ByteSize(h.dtype, h.shape); !ok || size != h.bytes {
			t.Fatalf("decoded %+v", h)
		}
	})
}
