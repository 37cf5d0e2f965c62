package trace_test

import "github.com/eagerflow/eagerflow/tensor"

type T = *tensor.Tensor

func vals(x T) []float64 { return tensor.ToSlice[float64](x) }
