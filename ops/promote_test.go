package ops_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A Go value made a tensor by Scalar takes the dtype of the tensor beside
// it (tensor.IsWeak).
func TestWeakScalarsTakeTheOtherDType(t *testing.T) {
	x32 := tensor.FromSlice([]float32{0.5, 255, 510})
	i32 := tensor.FromSlice([]int32{1, -2, 7})
	u8 := tensor.FromSlice([]uint8{0, 200, 255})
	check := func(name string, got *tensor.Tensor, want any) {
		t.Helper()
		var ok bool
		switch w := want.(type) {
		case []float32:
			ok = got.DType() == tensor.Float32 && slicesEqual(tensor.ToSlice[float32](got), w)
		case []int32:
			ok = got.DType() == tensor.Int32 && slicesEqual(tensor.ToSlice[int32](got), w)
		case []uint8:
			ok = got.DType() == tensor.Uint8 && slicesEqual(tensor.ToSlice[uint8](got), w)
		case []bool:
			ok = got.DType() == tensor.Bool && slicesEqual(tensor.ToSlice[bool](got), w)
		}
		if !ok {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("Div(x32, 255.0)", ops.Div(x32, tensor.Scalar(255.0)), []float32{0.5 / 255, 1, 2})
	check("Sub(1.0, x32)", ops.Sub(tensor.Scalar(1.0), x32), []float32{0.5, -254, -509})
	check("Mul(x32, 0.1) rounds 0.1 to float32", ops.Mul(x32, tensor.Scalar(0.1)),
		[]float32{0.5 * float32(0.1), 255 * float32(0.1), 510 * float32(0.1)})
	check("Add(i32, 2.0)", ops.Add(i32, tensor.Scalar(2.0)), []int32{3, 0, 9})
	check("Add(i32, int64 3)", ops.Add(i32, tensor.Scalar(int64(3))), []int32{4, 1, 10})
	check("Sub(u8, 200)", ops.Sub(u8, tensor.Scalar(200)), []uint8{56, 0, 55})
	check("Gt(x32, 1)", ops.Gt(x32, tensor.Scalar(1)), []bool{false, true, true})
	check("Select(p, x32, 0.0)", ops.Where(ops.Gt(x32, tensor.Scalar(300.0)), x32, tensor.Scalar(0.0)), []float32{0, 0, 510})
	check("Pad(x32, -1.0)", ops.Pad(x32, tensor.Scalar(-1.0), ops.PadDim{Low: 1}), []float32{-1, 0.5, 255, 510})
	check("Max(x32, 300)", ops.Maximum(x32, tensor.Scalar(300)), []float32{300, 300, 510})
	check("Maximum of a uint8 and a float", ops.Maximum(u8, tensor.Scalar(100.0)), []uint8{100, 200, 255})

	// Tensors ops compute are strong: mixed dtypes stay an error.
	_, err := catch(func() *tensor.Tensor { return ops.Add(x32, ops.Neg(tensor.Scalar(1.0))) })
	wantErr(t, "strong float64 beside float32", err, tensor.ErrDType, "inputs must share a dtype, got float32 and float64")
	_, err = catch(func() *tensor.Tensor { return ops.Add(x32, tensor.FromSlice([]float64{1})) })
	wantErr(t, "FromSlice is strong", err, tensor.ErrDType, "inputs must share a dtype")
	// Values a dtype cannot hold exactly.
	_, err = catch(func() *tensor.Tensor { return ops.Mul(i32, tensor.Scalar(0.5)) })
	wantErr(t, "0.5 beside int32", err, tensor.ErrDType, "input 1, the scalar 0.5 (float64), is not exactly an int32")
	_, err = catch(func() *tensor.Tensor { return ops.Add(u8, tensor.Scalar(256)) })
	wantErr(t, "256 beside uint8", err, tensor.ErrDType, "the scalar 256 (int64), is not exactly a uint8")
	_, err = catch(func() *tensor.Tensor { return ops.Add(i32, tensor.Scalar(math.Inf(1))) })
	wantErr(t, "Inf beside int32", err, tensor.ErrDType, "is not exactly an int32")
	_, err = catch(func() *tensor.Tensor { return ops.Add(x32, tensor.Scalar(true)) })
	wantErr(t, "bool beside float32", err, tensor.ErrDType, "the scalar true (bool), is not exactly a float32")
	// Weak scalars alone meet at the highest kind, and within it at the
	// narrowest dtype present.
	check("Add(1, float32 1.5)", ops.Add(tensor.Scalar(1), tensor.Scalar(float32(1.5))), []float32{2.5})
	check("Mul(float32 10, 0.5)", ops.Mul(tensor.Scalar(float32(10)), tensor.Scalar(0.5)), []float32{5})
	check("Add(int32 3, 4)", ops.Add(tensor.Scalar(int32(3)), tensor.Scalar(4)), []int32{7})
	check("Ge(uint8 3, 2)", ops.Ge(tensor.Scalar(uint8(3)), tensor.Scalar(2)), []bool{true})
	if y := ops.Add(tensor.Scalar(1), tensor.Scalar(1.5)); y.DType() != tensor.Float64 || y.Float() != 2.5 {
		t.Errorf("Add(1, 1.5) = %v, want float64 2.5", y)
	}
	_, err = catch(func() *tensor.Tensor { return ops.Add(tensor.Scalar(uint8(3)), tensor.Scalar(-4)) })
	wantErr(t, "uint8 beside -4", err, tensor.ErrDType, "the scalar -4 (int64), is not exactly a uint8")
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func catch(f func() *tensor.Tensor) (y *tensor.Tensor, err error) {
	err = tensor.Catch(func() { y = f() })
	return y, err
}

func wantErr(t *testing.T, name string, err, kind error, text string) {
	t.Helper()
	if err == nil || !errors.Is(err, kind) || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: error %v, want %v containing %q", name, err, kind, text)
	}
}

// A weak scalar also moves to the device of the tensor beside it.
func TestWeakScalarsTakeTheOtherDevice(t *testing.T) {
	dev, err := device.Lookup("cpu:1")
	if err != nil {
		t.Fatal(err)
	}
	x, err := tensor.FromSlice([]float32{1, 2}).To(dev)
	if err != nil {
		t.Fatal(err)
	}
	y := ops.Mul(tensor.Scalar(3.0), x)
	if y.Device() != dev || y.DType() != tensor.Float32 {
		t.Fatalf("Mul(3.0, x on %s) is %v on %s", dev.Name(), y.DType(), y.Device().Name())
	}
	if got := tensor.ToSlice[float32](y); got[0] != 3 || got[1] != 6 {
		t.Fatalf("Mul(3.0, x) = %v", got)
	}
}

// Gradients flow through the promoted op to the strong operand; a weak
// scalar a tape watches keeps its dtype (and its gradient).
func TestWeakScalarsGradients(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2})
	tp := tape.New()
	tp.Watch(x)
	y := ops.Sum(ops.Mul(ops.Square(x), tensor.Scalar(3.0)))
	g := tp.Gradient(y, x)[0]
	if got := tensor.ToSlice[float32](g); got[0] != 6 || got[1] != 12 {
		t.Fatalf("gradient %v, want [6 12]", got)
	}
	s := tensor.Scalar(float32(2))
	tp = tape.New()
	tp.Watch(s)
	gs := tp.Gradient(ops.Sum(ops.Mul(x, s)), s)[0]
	if gs.Float() != 3 {
		t.Fatalf("gradient of a watched scalar %v, want 3", gs)
	}
	w := tensor.Scalar(2.0)
	tp = tape.New()
	tp.Watch(w)
	_, err := catch(func() *tensor.Tensor { return ops.Mul(x, w) })
	wantErr(t, "watched weak float64 beside float32", err, tensor.ErrDType, "inputs must share a dtype")
	tp.Stop()
}
