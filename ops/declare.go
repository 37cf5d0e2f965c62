package ops

import "github.com/eagerflow/eagerflow/tensor"

// DType sets used by declarations.
var (
	// The half types compute through float32 where a device has no kernel
	// of theirs (eager/half.go).
	floatTypes   = []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16}
	numericTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.BFloat16, tensor.Float16}
	allTypes     = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool, tensor.BFloat16, tensor.Float16}
)
