package gorgonia

import (
	"testing"
	"unsafe"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the kernels of the ops below
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
	"github.com/google/go-cmp/cmp"
	gt "gorgonia.org/tensor"
)

// This test also guards the go.mod pin of go4.org/unsafe/assume-no-moving-gc:
// older versions panic when the test binary starts on Go 1.26.
func TestRoundTripSharesMemory(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	d, err := ToDense(x)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal([]int(d.Shape()), []int{2, 3}) || d.Dtype() != gt.Float32 {
		t.Fatalf("dense %v %v", d.Shape(), d.Dtype())
	}
	back := d.Data().([]float32)
	if unsafe.SliceData(back) != unsafe.SliceData(tensor.HostData[float32](x)) {
		t.Error("ToDense copied a row-major tensor")
	}
	y, err := FromDense(d)
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(tensor.HostData[float32](y)) != unsafe.SliceData(back) {
		t.Error("FromDense copied a contiguous Dense")
	}
	if got := tensor.ToSlice[float32](ops.Add(y, y)); !cmp.Equal(got, []float32{2, 4, 6, 8, 10, 12}) {
		t.Errorf("ops on a converted tensor: %v", got)
	}
}

func TestConversionsCopyWhenTheyMust(t *testing.T) {
	// A transposed view is not row-major: ToDense copies it into order.
	x := ops.Transpose(tensor.FromSlice([]int64{1, 2, 3, 4, 5, 6}, 2, 3))
	d, err := ToDense(x)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Data().([]int64); !cmp.Equal(got, []int64{1, 4, 2, 5, 3, 6}) {
		t.Errorf("transposed = %v", got)
	}
	// A Gorgonia view that needs an iterator is materialized.
	g := gt.New(gt.WithShape(2, 3), gt.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	if err := g.T(); err != nil {
		t.Fatal(err)
	}
	y, err := FromDense(g)
	if err != nil {
		t.Fatal(err)
	}
	if got := tensor.ToSlice[float64](y); !y.Shape().Equal(tensor.Shape{3, 2}) || !cmp.Equal(got, []float64{1, 4, 2, 5, 3, 6}) {
		t.Errorf("from transposed dense: %v %v", y.Shape(), got)
	}
	s, err := FromDense(gt.New(gt.FromScalar(float32(2.5))))
	if err != nil || s.Rank() != 0 || s.Item() != float32(2.5) {
		t.Errorf("scalar: %v %v", s, err)
	}
	sd, err := ToDense(tensor.Scalar(true))
	if err != nil || !sd.IsScalar() || sd.Data() != true {
		t.Errorf("scalar to dense: %v %v", sd, err)
	}
}
