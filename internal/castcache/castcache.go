// Package castcache keeps a variable's value cast to a half type, so
// that a mixed-precision layer, which casts its float32 weights to
// bfloat16 or float16 at every step, launches no cast while the weights
// are unchanged, and an optimizer step that updates them can write the
// half copy in the same pass (tape's fused updates on a GPU), leaving the
// next forward pass nothing to cast.
//
// An entry is a tensor of the half dtype holding the cast of the
// variable's value at one version (plumb.Tensor.Version: each assignment
// moves it on); it serves only that version. Views handed out share its
// buffer (each the caller's tensor, released as it likes); an entry
// whose buffer a view still holds is never written in place: Writable
// gives a fresh tensor instead, so a tape that kept a view for its
// gradient rule (a product's gradient reads its weights) keeps the values
// the forward pass used. Entries go with their variable's tensor.
package castcache

import (
	"runtime"
	"sync"
	"weak"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// key is a variable's tensor, held weakly, and the half dtype.
type key struct {
	v  weak.Pointer[tensor.Tensor]
	dt tensor.DType
}

// entry is a cast copy and the variable's version it holds.
type entry struct {
	t       *tensor.Tensor
	version uint64
}

var cache struct {
	sync.Mutex
	m       map[key]*entry
	cleaned map[weak.Pointer[tensor.Tensor]]bool // variables with a cleanup set
}

// Applies reports whether a cast of x to dt is kept here: x is a float32
// or float64 variable, dt a half type, and x's device is not recording
// (device.CaptureState: a recording's replays would read the copy without
// asking whether it is current).
func Applies(x *tensor.Tensor, dt tensor.DType) bool {
	if !x.IsVariable() || !dt.IsHalf() || (x.DType() != tensor.Float32 && x.DType() != tensor.Float64) {
		return false
	}
	if c, ok := x.Device().(device.CaptureState); ok && c.Capturing() {
		return false
	}
	return true
}

// Get returns a view of v's copy in dt when it holds v's current value,
// else nil.
func Get(v *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	cache.Lock()
	defer cache.Unlock()
	e := cache.m[key{weak.Make(v), dt}]
	if e == nil || e.version != plumb.Tensor.Version(v) {
		return nil
	}
	return e.t.View(e.t.Shape(), nil)
}

// Put makes t (v's value cast to t's dtype, which the cache now owns) v's
// copy at v's current version, dropping the one it replaces, and returns
// a view of it.
func Put(v, t *tensor.Tensor) *tensor.Tensor {
	cache.Lock()
	defer cache.Unlock()
	put(v, t)
	return t.View(t.Shape(), nil)
}

func put(v, t *tensor.Tensor) {
	wv := weak.Make(v)
	k := key{wv, t.DType()}
	if cache.m == nil {
		cache.m = map[key]*entry{}
		cache.cleaned = map[weak.Pointer[tensor.Tensor]]bool{}
	}
	if old := cache.m[k]; old != nil && old.t != t {
		old.t.Release()
	}
	cache.m[k] = &entry{t: t, version: plumb.Tensor.Version(v)}
	if !cache.cleaned[wv] {
		cache.cleaned[wv] = true
		runtime.AddCleanup(v, forget, wv)
	}
}

// forget drops a collected variable's copies.
func forget(wv weak.Pointer[tensor.Tensor]) {
	cache.Lock()
	defer cache.Unlock()
	delete(cache.cleaned, wv)
	for k, e := range cache.m {
		if k.v == wv {
			e.t.Release()
			delete(cache.m, k)
		}
	}
}

// Writable returns a dt tensor of v's shape on v's device for an update
// of v to write v's new value into, cast (the copy's own buffer where no
// view of it is held, else a new one), and commit, which makes it v's
// copy at v's version when commit runs: call it once the write is queued,
// after the assignment's version bump. It returns nil where v's device
// has no memory for a new copy.
func Writable(v *tensor.Tensor, dt tensor.DType) (t *tensor.Tensor, commit func()) {
	cache.Lock()
	e := cache.m[key{weak.Make(v), dt}]
	if e != nil && e.t.Buffer().Refs().Load() == 1 {
		t = e.t
	}
	cache.Unlock()
	if t == nil {
		var err error
		if t, err = tensor.Empty(v.Device(), dt, v.Shape().Clone()); err != nil {
			return nil, nil
		}
	}
	return t, func() {
		cache.Lock()
		defer cache.Unlock()
		put(v, t)
	}
}

// Len is how many copies are kept, for tests.
func Len() int {
	cache.Lock()
	defer cache.Unlock()
	return len(cache.m)
}
