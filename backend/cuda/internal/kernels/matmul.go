package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// matmul_<dtype> (out, a, b, batch, m, k, n, sa, sb, ta, tb): integer
// MatMul (floats go through cuBLAS), a thread per output element summing
// its row·column in order, wrapping as the CPU's integers do. a is [m k]
// row-major ([k m] when ta is 1), b is [k n] ([n k] when tb is 1); sa and
// sb are their batch strides in elements (0 shares the operand).

func matmulKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range []DType{S32, S64, U8} {
		out = append(out, matmulKernel(d))
	}
	return out
}

func matmulKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("matmul", string(d)))
	o, a, b := k.ParamPtr("out"), k.ParamPtr("a"), k.ParamPtr("b")
	batch, m, kk, nd := k.Param("batch", ptx.U64), k.Param("m", ptx.U64), k.Param("k", ptx.U64), paramDivisor(k, "n")
	n := nd.v
	sa, sb := k.Param("sa", ptx.U64), k.Param("sb", ptx.U64)
	ta, tb := k.Param("ta", ptx.U64), k.Param("tb", ptx.U64)
	pa, pb := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", pa, ta)
	k.Op("setp.ne.u64 %s, %s, 0", pb, tb)
	// Element strides of a along (i, p) and of b along (p, j).
	aI, aP, bP, bJ := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	one := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 1", one)
	k.Op("selp.u64 %s, %s, %s, %s", aI, one, kk, pa)
	k.Op("selp.u64 %s, %s, %s, %s", aP, m, one, pa)
	k.Op("selp.u64 %s, %s, %s, %s", bP, one, n, pb)
	k.Op("selp.u64 %s, %s, %s, %s", bJ, kk, one, pb)
	cells(k, batch, m, nd, func(e, bi, i, j ptx.Reg) {
		ai, bi2 := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", ai, bi, sa)
		k.Op("mad.lo.s64 %s, %s, %s, %s", ai, i, aI, ai)
		k.Op("mul.lo.s64 %s, %s, %s", bi2, bi, sb)
		k.Op("mad.lo.s64 %s, %s, %s, %s", bi2, j, bJ, bi2)
		acc := k.Reg(d.reg())
		mov(k, d, acc, "0")
		upTo(k, kk, func(p ptx.Reg) {
			x := load(k, d, k.Addr(a, ai, d.Size()))
			y := load(k, d, k.Addr(b, bi2, d.Size()))
			mov(k, d, acc, binaryOp(k, "add", d, acc, binaryOp(k, "mul", d, x, y)))
			k.Op("add.s64 %s, %s, %s", ai, ai, aP)
			k.Op("add.s64 %s, %s, %s", bi2, bi2, bP)
		})
		store(k, d, k.Addr(o, e, d.Size()), acc)
	})
	return k
}
