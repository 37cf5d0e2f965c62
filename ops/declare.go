package ops

import "github.com/eagerflow/eagerflow/tensor"

// DType sets used by declarations.
var (
	floatTypes   = []tensor.DType{tensor.Float32, tensor.Float64}
	numericTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8}
	allTypes     = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}
)
