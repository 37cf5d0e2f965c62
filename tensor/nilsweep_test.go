package tensor_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	rng, host := tensor.NewRNG(1), device.Host()
	f32 := tensor.Float32
	fns := []nilsweep.Func{
		{Name: "ScalarOf", Fn: tensor.ScalarOf},
		{Name: "Zeros", Fn: tensor.Zeros},
		{Name: "Ones", Fn: tensor.Ones},
		{Name: "Eye", Fn: tensor.Eye},
		{Name: "FullOf", Fn: tensor.FullOf},
		{Name: "FullOn", Fn: tensor.FullOn, Valid: []any{host, f32, 1.0, []int{2}}},
		{Name: "Describe", Fn: tensor.Describe},
		{Name: "Caller", Fn: tensor.Caller},
		{Name: "RowMajor", Fn: tensor.RowMajor},
		{Name: "NewRNG", Fn: tensor.NewRNG},
		{Name: "RandUniform", Fn: tensor.RandUniform, Valid: []any{rng, f32, 0.0, 1.0, []int{2}}},
		{Name: "RandUniformOn", Fn: tensor.RandUniformOn, Valid: []any{host, rng, f32, 0.0, 1.0, []int{2}}},
		{Name: "RandNormal", Fn: tensor.RandNormal, Valid: []any{rng, f32, []int{2}}},
		{Name: "RandNormalOn", Fn: tensor.RandNormalOn, Valid: []any{host, rng, f32, []int{2}}},
		{Name: "RandInt", Fn: tensor.RandInt, Valid: []any{rng, tensor.Int32, int64(0), int64(5), []int{2}}},
		{Name: "RandIntOn", Fn: tensor.RandIntOn, Valid: []any{host, rng, tensor.Int32, int64(0), int64(5), []int{2}}},
		{Name: "RandBernoulli", Fn: tensor.RandBernoulli, Valid: []any{rng, f32, 0.5, []int{2}}},
		{Name: "RandBernoulliOn", Fn: tensor.RandBernoulliOn, Valid: []any{host, rng, f32, 0.5, []int{2}}},
		{Name: "RandBernoulliAt", Fn: tensor.RandBernoulliAt, Valid: []any{host, [2]uint32{1, 2}, uint64(3), f32, 0.5, []int{2}}},
		{Name: "ByteSize", Fn: tensor.ByteSize},
		{Name: "Empty", Fn: tensor.Empty, Valid: []any{host, f32, tensor.Shape{2}}},
		{Name: "FromBuffer", Fn: tensor.FromBuffer},
		{Name: "MustEmptyHost", Fn: tensor.MustEmptyHost},
		{Name: "MustEmpty", Fn: tensor.MustEmpty},
		{Name: "Catch", Fn: tensor.Catch},
		{Name: "FromFloat32s", Fn: tensor.FromFloat32s, Valid: []any{tensor.BFloat16, []float32{1, 2}, []int{2}}},
		{Name: "NewError", Fn: func(inputs []*tensor.Tensor) error {
			return tensor.NewError("tensor", "Op", tensor.ErrShape, inputs, "", "detail")
		}, Valid: []any{[]*tensor.Tensor{tensor.Zeros(f32, 1)}}},
		{Name: "Panicf", Fn: func(inputs []*tensor.Tensor) {
			tensor.Panicf("tensor", "Op", tensor.ErrShape, inputs, "", "detail")
		}, Valid: []any{[]*tensor.Tensor{tensor.Zeros(f32, 1)}}},
	}
	arith := "layout arithmetic on slices the caller sizes (a nil layout is row-major)"
	elems := "deprecated element movers over buffers the caller sizes"
	conv := "conversions of one float32 value, which has no nil"
	nilsweep.Covered(t, ".", fns, map[string]string{"ToBF16": conv, "ToF16": conv, "ToF8E4M3": conv, "ToF8E5M2": conv, "Strides": arith, "LinearIndex": arith, "MultiIndex": arith,
		"FillElems": elems, "MoveElems": elems, "View32": elems, "View64": elems})
	nilsweep.Sweep(t, fns)
}
