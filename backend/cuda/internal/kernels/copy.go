package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// Copy kernels move elements without looking at them:
//   - copy_b8, copy_b32, copy_b64 (dst, src, n, g): element i of the box
//     g.shape (row-major) goes from src[g.off1 + Σ c_d g.stride1[d]] to
//     dst[g.off0 + Σ c_d g.stride0[d]]; the device's strided Copy.
//   - fill_b64 (dst, n, v): n 8-byte elements set to v (memsets do 1 and 4
//     bytes).

var copyTypes = []struct {
	name string
	t    ptx.Type
}{{"b8", ptx.U8}, {"b32", ptx.U32}, {"b64", ptx.U64}}

func copyKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, ct := range copyTypes {
		k := ptx.NewKernel(Name("copy", ct.name))
		dst, src := k.ParamPtr("dst"), k.ParamPtr("src")
		n := k.Param("n", ptx.U64)
		g := k.ParamBytes("g", GeometrySize)
		k.GridStride(n, func(i ptx.Reg) {
			off := offsets(k, g, i, 2)
			v := k.Load(ct.t, k.Addr(src, off[1], ct.t.Size()))
			k.Store(ct.t, k.Addr(dst, off[0], ct.t.Size()), v)
		})
		out = append(out, k)
	}
	k := ptx.NewKernel("fill_b64")
	dst := k.ParamPtr("dst")
	n := k.Param("n", ptx.U64)
	v := k.Param("v", ptx.U64)
	k.GridStride(n, func(i ptx.Reg) { k.Store(ptx.U64, k.Addr(dst, i, 8), v) })
	return append(out, k)
}
