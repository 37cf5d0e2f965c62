package cpu

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// scaledMatMulKernel is ScaledMatMul of 8-bit float operands (ops/
// matmul_scaled.go): both widened to float32 (exactly), multiplied by the
// float32 GEMM, each sum times scaleA·scaleB (one float32 product), then
// rounded once to the output's dtype: what MatMul, Mul and Cast of the
// widened operands give.
func scaledMatMulKernel(c *eager.Call, outs []*tensor.Tensor) {
	a, b, out := c.Inputs[0], c.Inputs[1], outs[0]
	m, k, n := a.Dim(0), a.Dim(1), b.Dim(1)
	if m*n == 0 {
		return
	}
	s := data[float32](c.Inputs[2])[0] * data[float32](c.Inputs[3])[0]
	buf, scratch := gemmScratch[float32](m*k + k*n + m*n)
	defer putGemmScratch(scratch)
	a32, b32, y := buf[:m*k], buf[m*k:m*k+k*n], buf[m*k+k*n:]
	widenFloat8(a32, a)
	widenFloat8(b32, b)
	dev := deviceOf(c)
	gemmAcc(dev, m, n, k, a32, false, b32, false, y, false)
	dev.Parallel(m*n, 2, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			y[i] *= s
		}
		castRange(y[lo:hi], out, lo)
	})
}

// widenFloat8 sets f to the float32 values of x, an 8-bit float tensor.
func widenFloat8(f []float32, x *tensor.Tensor) {
	switch x.DType() {
	case tensor.Float8E4M3:
		widenHalves(f, data[tensor.F8E4M3](x))
	case tensor.Float8E5M2:
		widenHalves(f, data[tensor.F8E5M2](x))
	}
}

func init() {
	for _, dt := range []tensor.DType{tensor.Float8E4M3, tensor.Float8E5M2} {
		eager.RegisterKernel("ScaledMatMul", device.CPU, dt, scaledMatMulKernel)
	}
}
