package eager_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// An op that needs row-major inputs reads a strided one through a
// row-major copy, which goes back to the cache once the op has run: at
// once for a kernel, once its output is released for a view of the copy
// (Reshape of a transposed matrix). Left to the collector, every such op
// took fresh memory until the next collection.
func TestRowMajorCopiesAreReleased(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 64, 256) // 64 KiB: cached sizes
	xt := ops.Transpose(x, 1, 0)
	if xt.IsRowMajor() {
		t.Fatal("the transpose is row-major: nothing to copy")
	}
	want := tensor.ToSlice[float32](xt.Contiguous())
	st := device.Host().Stats()
	frees := st.Frees.Load()
	r := ops.Reshape(xt, 256*64)
	if got := st.Frees.Load() - frees; got != 0 {
		t.Errorf("the reshape's copy went back while its view lives (%d frees)", got)
	}
	if !slices.Equal(tensor.ToSlice[float32](r), want) {
		t.Fatal("the reshape's values differ from the transpose's")
	}
	r.Release()
	if got := st.Frees.Load() - frees; got != 1 {
		t.Errorf("releasing the reshape freed %d buffers, want its copy's 1", got)
	}
}
