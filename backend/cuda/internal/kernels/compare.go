package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Comparison and logic kernels write bools (one byte, 0 or 1):
//   - <cmp>_<dtype>_vv/_bc (out, a, b, n[, g]) for eq, ne (every dtype) and
//     lt, le, gt, ge (numeric), IEEE 754's way: false with a NaN but for ne;
//   - and_b_*, or_b_* on bools;
//   - select_<dtype>_bc (out, pred, a, b, n, g): g's stride sets 0, 1 and 2
//     for pred, a and b; select_<dtype>_vv with all three full.

// Compares lists the comparisons per dtype.
func Compares(d DType) []string {
	if d == Bool {
		return []string{"eq", "ne"}
	}
	return []string{"eq", "ne", "lt", "le", "gt", "ge"}
}

func compareKernels() []*ptx.Kernel {
	out := pairKernels(slices.Concat(All, Halves), Compares, func(DType) DType { return Bool }, compareOp)
	for _, op := range []string{"and", "or"} {
		for _, bc := range []bool{false, true} {
			out = append(out, elementwise2(Name(op, "b", variant(bc)), Bool, Bool, bc, false, func(k *ptx.Kernel, x, y ptx.Reg) ptx.Reg {
				r := k.Reg(ptx.U32)
				k.Op("%s.b32 %s, %s, %s", op, r, x, y)
				return r
			}))
		}
	}
	for _, d := range slices.Concat(All, Halves) { // a selection moves bits: the half types as they are
		for _, bc := range []bool{false, true} {
			out = append(out, selectKernel(d, bc))
		}
	}
	return out
}

func compareOp(k *ptx.Kernel, cmp string, d DType, x, y ptx.Reg) ptx.Reg {
	p := k.Reg(ptx.Pred)
	t := string(d.reg())
	if !d.float() {
		t = itype(d)
	}
	c := cmp
	if d.float() && cmp == "ne" {
		c = "neu" // NaN is unequal to everything
	}
	k.Op("setp.%s.%s %s, %s, %s", c, t, p, x, y)
	r := k.Reg(ptx.U32)
	k.Op("selp.u32 %s, 1, 0, %s", r, p)
	return r
}

func selectKernel(d DType, bc bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("select", string(d), variant(bc)))
	o, pr, a, b := k.ParamPtr("out"), k.ParamPtr("cond"), k.ParamPtr("a"), k.ParamPtr("b")
	n := k.Param("n", ptx.U64)
	pick := func(pv, x, y ptx.Reg) ptx.Reg {
		p := k.Reg(ptx.Pred)
		k.Op("setp.ne.u32 %s, %s, 0", p, pv)
		r := k.Reg(d.reg())
		k.Op("selp.%s %s, %s, %s, %s", bits(d.reg()), r, x, y, p)
		return r
	}
	if !bc {
		vectorizedMixed(k, n, []operand{{pr, Bool}, {a, d}, {b, d}}, d, o, func(xs []ptx.Reg) ptx.Reg { return pick(xs[0], xs[1], xs[2]) })
		return k
	}
	g := k.ParamBytes("g", GeometrySize)
	k.GridStride(n, func(i ptx.Reg) {
		off := offsets(k, g, i, 3)
		pv := load(k, Bool, k.Addr(pr, off[0], 1))
		x := load(k, d, k.Addr(a, off[1], d.Size()))
		y := load(k, d, k.Addr(b, off[2], d.Size()))
		store(k, d, k.Addr(o, i, d.Size()), pick(pv, x, y))
	})
	return k
}
