package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// MaxPool2DWithArgmax, MaxUnpool2D and MaxUnpool2DGather
// (ops/pool_argmax.go) through the pooling kernels: max pooling's
// gradient on the GPU reads the byte a window its forward pass wrote
// beside the pooled value, where SelectAndScatter would search every
// window of the input again (PoolsWithArgmax makes ops.MaxPool2D take
// this path under a tape).

func init() {
	for _, d := range slices.Concat(kernels.Numeric, kernels.Halves) {
		eager.RegisterKernel("MaxPool2DWithArgmax", device.GPU, tensorType(d), maxPoolArgmax(d))
		eager.RegisterKernel("MaxUnpool2D", device.GPU, tensorType(d), maxUnpool(d))
		eager.RegisterKernel("MaxUnpool2DGather", device.GPU, tensorType(d), maxUnpoolGather(d))
	}
}

// PoolsWithArgmax implements ops.ArgmaxPooler: max pooling of an operand
// of shape and dtype dt under w keeps its choices on the GPU wherever the
// pooling kernels take w (a 2-D pooling window in NHWC or NCHW, padding
// not negative, fewer than 2^31 elements, at most 254 taps).
func (g *Device) PoolsWithArgmax(shape tensor.Shape, dt tensor.DType, w ops.Window) bool {
	p, _, ok := pool2D(shape, w)
	return ok && kernels.PoolSelects(p) && maxPoolArgmaxOp().Kernel(device.GPU, dt) != nil
}

// maxPoolArgmaxOp is the op whose GPU kernels PoolsWithArgmax offers.
func maxPoolArgmaxOp() *eager.Op { return eager.Lookup("MaxPool2DWithArgmax") }

// argmaxPool is pool2D of the call's window w over shape, failing the
// call where the pooling kernels do not take it.
func argmaxPool(c *eager.Call, shape tensor.Shape, w ops.Window) (p kernels.PoolDims, nhwc bool) {
	p, nhwc, ok := pool2D(shape, w)
	if !ok || !kernels.PoolSelects(p) {
		c.Fail(tensor.ErrAttr, "the GPU keeps max pooling's choices for 2-D pooling windows over NHWC or NCHW, padding not negative, below 2^31 elements; got %v over %v", w, shape)
	}
	return p, nhwc
}

// argmaxLayout is the layout of the pool2d_argmax kernels for p of dtype
// d: poolLayout's, but for the pairs', which have no argmax twin (their
// windows take a band's column tiles, or a thread each).
func argmaxLayout(p kernels.PoolDims, nhwc bool, d kernels.DType) string {
	layout := poolLayout(p, nhwc, d)
	if layout != "nchw2" {
		return layout
	}
	if kernels.PoolTile(p, d) {
		return "nchwtile"
	}
	return "nchw"
}

func maxPoolArgmax(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, w := c.Inputs[0], c.Attrs.(ops.Window)
		p, nhwc := argmaxPool(c, x.Shape(), w)
		n := outs[0].NumElements()
		if n == 0 {
			return
		}
		args := newArgs().Ptr(ptr(outs[0])).Ptr(ptr(outs[1])).Ptr(ptr(x))
		check(c, gpu(c).launchPoolIn(argmaxLayout(p, nhwc, d), p, d, n, args, "pool2d_argmax"))
	}
}

func maxUnpool(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		v, chosen, out, a := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(ops.PatchesAttrs)
		p, nhwc := argmaxPool(c, a.Operand, a.Window)
		g, n := gpu(c), out.NumElements()
		if n == 0 {
			return
		}
		zero, windows := make([]byte, out.DType().Size()), v.NumElements()
		if windows == 0 || (disjoint(a.Window) && !tiles(a.Operand, a.Window)) { // zeros where no window puts
			check(c, g.Fill(out.Buffer(), 0, n, zero))
		}
		if windows == 0 {
			return
		}
		if disjoint(a.Window) { // each window writes its block
			args := newArgs().Ptr(ptr(out)).Ptr(ptr(chosen)).Ptr(ptr(v))
			check(c, g.launchPoolIn(argmaxLayout(p, nhwc, d), p, d, windows, args, "pool2d_unpool_put"))
			return
		}
		init := temporary(c, out.DType(), tensor.Shape{}, "max unpooling's zero")
		defer init.Release()
		check(c, g.Fill(init.Buffer(), 0, 1, zero))
		check(c, g.scatterChosen(p, nhwc, d, chosen, v, init, out))
	}
}

func maxUnpoolGather(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		grad, chosen, out, a := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(ops.PatchesAttrs)
		p, nhwc := argmaxPool(c, a.Operand, a.Window)
		n := out.NumElements()
		if n == 0 {
			return
		}
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(chosen)).Ptr(ptr(grad)).U64(uint64(n)).Bytes(kernels.PoolGeometry(p, n), 8)
		check(c, gpu(c).launch("pool", kernels.Name("pool2d_unpool_gather", kernels.LayoutName(nhwc), string(d)), n, args))
	}
}
