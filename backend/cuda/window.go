package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// ExtractPatches, ScatterPatches (ops/window.go), ReduceWindow,
// SelectAndScatter and SelectAndGather (ops/reduce_window.go) through the
// window family: every output element computes its own value (the
// scatters walk, for each operand element, the windows on it), so no two
// threads write one place and the sums run in the CPU's order.

func init() {
	registerMoves("ExtractPatches", extractPatches)
	for _, d := range kernels.Numeric {
		eager.RegisterKernel("ScatterPatches", device.GPU, tensorType(d), scatterPatchesKernel)
		eager.RegisterKernel("ReduceWindow", device.GPU, tensorType(d), reduceWindow(d))
		eager.RegisterKernel("SelectAndScatter", device.GPU, tensorType(d), selectAndScatter(d))
		eager.RegisterKernel("SelectAndGather", device.GPU, tensorType(d), selectAndGather(d))
	}
	// The half types pool with the pooling kernels (taps in float32, one
	// rounding); other windows of them compute through float32.
	for _, d := range kernels.Halves {
		eager.RegisterKernel("ReduceWindow", device.GPU, tensorType(d), reduceWindow(d))
		eager.RegisterKernel("SelectAndScatter", device.GPU, tensorType(d), selectAndScatter(d))
	}
}

// throughFloat32 runs c through the op's float32 kernel (a half call the
// generated kernels do not take), failing it where there is none.
func throughFloat32(c *eager.Call, outs []*tensor.Tensor) {
	if !eager.ThroughFloat32(c, outs) {
		c.Fail(tensor.ErrDType, "no float32 kernel of %s on %s to compute %v through", c.Op.Name, c.Device.Name(), c.Inputs[c.Op.KeyInput].DType())
	}
}

// window is w (its defaults filled) laid over an operand of shape: the
// kernels' parameter and the number of window positions. A rank-0
// operand is one element under a window of one, as on the CPU.
func window(c *eager.Call, shape tensor.Shape, w ops.Window) (geom []byte, windows int) {
	if len(shape) > kernels.MaxRank {
		c.Fail(tensor.ErrRank, "the GPU kernels take at most %d dimensions, the operand has %d", kernels.MaxRank, len(shape))
	}
	if len(shape) == 0 {
		one := kernels.WindowDim{N: 1, Out: 1, Win: 1, Stride: 1, WindowDilation: 1, BaseDilation: 1, XStride: 1}
		return kernels.WindowGeometry([]kernels.WindowDim{one}), 1
	}
	out, xs := w.OutShape(shape), tensor.Strides(shape, nil)
	dims := make([]kernels.WindowDim, len(shape))
	for d := range dims {
		dims[d] = kernels.WindowDim{N: shape[d], Out: out[d], Win: w.Dims[d], Stride: w.Strides[d],
			WindowDilation: w.WindowDilation[d], PadLow: w.Padding[d][0], BaseDilation: w.BaseDilation[d], XStride: xs[d]}
	}
	return kernels.WindowGeometry(dims), out.NumElements()
}

// patches writes ExtractPatches of x (padded with the scalar pad) into
// out.
func (d *Device) patches(c *eager.Call, out, x, pad *tensor.Tensor, w ops.Window) error {
	n := out.NumElements()
	if n == 0 {
		return nil
	}
	geom, _ := window(c, x.Shape(), w)
	args := newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(pad)).U64(uint64(n)).Bytes(geom, 8)
	return d.launch("window", kernels.Name("window_patches", width(x.DType())), n, args)
}

// scatterPatches writes ScatterPatches of dy (patches of a window w over
// out's shape) into out.
func (d *Device) scatterPatches(c *eager.Call, out, dy *tensor.Tensor, w ops.Window) error {
	n := out.NumElements()
	if n == 0 {
		return nil
	}
	geom, windows := window(c, out.Shape(), w)
	if windows == 0 {
		return d.Fill(out.Buffer(), 0, n, make([]byte, out.DType().Size()))
	}
	args := newArgs().Ptr(ptr(out)).Ptr(ptr(dy)).U64(uint64(n)).Bytes(geom, 8)
	return d.launch("window", kernels.Name("window_scatter", string(kernelType(out.DType()))), n, args)
}

func extractPatches(c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.PatchesAttrs)
	check(c, gpu(c).patches(c, outs[0], c.Inputs[0], c.Inputs[1], a.Window))
}

func scatterPatchesKernel(c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.PatchesAttrs)
	check(c, gpu(c).scatterPatches(c, outs[0], c.Inputs[0], a.Window))
}

func reduceWindow(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, init, out, a := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(ops.ReduceWindowAttrs)
		if p, nhwc, ok := spreadPool(x.Shape(), out.Shape(), a); ok { // a pooling's sums' gradient
			if out.NumElements() > 0 {
				check(c, gpu(c).scatterChosen(p, nhwc, d, nil, x, init, out))
			}
			return
		}
		if p, nhwc, ok := pool2D(x.Shape(), a.Window); ok {
			n := out.NumElements()
			if n == 0 {
				return
			}
			check(c, gpu(c).launchPool(p, nhwc, d, n, newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(init)), "pool2d", reduceKindNames[a.Kind]))
			return
		}
		if d.Half() {
			throughFloat32(c, outs)
			return
		}
		geom, windows := window(c, x.Shape(), a.Window)
		if windows == 0 {
			return
		}
		name := kernels.Name("window_reduce", reduceKindNames[a.Kind], string(d))
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(init)).U64(uint64(windows)).Bytes(geom, 8)
		check(c, gpu(c).launch("window", name, windows, args))
	}
}

// selections runs window_select over x: for each window the offset of
// its chosen element (-1 where the window is all padding), as a
// temporary int64 tensor the caller releases; nil when there are no
// windows.
func selections(c *eager.Call, d kernels.DType, x *tensor.Tensor, a ops.SelectAttrs) (sel *tensor.Tensor, geom []byte) {
	geom, windows := window(c, x.Shape(), a.Window)
	if windows == 0 {
		return nil, geom
	}
	sel, err := tensor.Empty(c.Device, tensor.Int64, tensor.Shape{windows})
	if err != nil {
		c.Fail(err, "the selections of %d windows", windows)
	}
	kind := "ge"
	if a.Select == ops.SelectLE {
		kind = "le"
	}
	args := newArgs().Ptr(ptr(sel)).Ptr(ptr(x)).U64(uint64(windows)).Bytes(geom, 8)
	if err := gpu(c).launch("window", kernels.Name("window_select", kind, string(d)), windows, args); err != nil {
		sel.Release()
		check(c, err)
	}
	return sel, geom
}

func selectAndScatter(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, src, init, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
		n := out.NumElements()
		if n == 0 {
			return
		}
		g, a := gpu(c), c.Attrs.(ops.SelectAttrs)
		p, nhwc, pooled := pool2D(x.Shape(), a.Window)
		scatters := pooled && poolScatters(p, nhwc, d)
		if d.Half() && !(pooled && disjoint(a.Window)) && !scatters {
			throughFloat32(c, outs)
			return
		}
		if disjoint(a.Window) { // one pass over the windows, each writing its block
			if !tiles(x.Shape(), a.Window) { // init where no window writes
				check(c, g.Copy(out.Buffer(), 0, []int{1}, init.Buffer(), 0, []int{0}, []int{n}, out.DType().Size()))
			}
			sel := selectName[a.Select]
			if pooled {
				windows := src.NumElements()
				if windows == 0 {
					return
				}
				check(c, g.launchPool(p, nhwc, d, windows, newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(src)).Ptr(ptr(init)), "pool2d_select_put", sel))
				return
			}
			geom, windows := window(c, x.Shape(), a.Window)
			if windows == 0 {
				return
			}
			name := kernels.Name("window_select_put", sel, string(d))
			args := newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(src)).Ptr(ptr(init)).U64(uint64(windows)).Bytes(geom, 8)
			check(c, g.launch("window", name, windows, args))
			return
		}
		if scatters {
			g.poolScatter(c, p, nhwc, d, selectName[a.Select], x, src, init, out)
			return
		}
		sel, geom := selections(c, d, x, a)
		if sel == nil { // no windows: init everywhere
			check(c, g.Copy(out.Buffer(), 0, []int{1}, init.Buffer(), 0, []int{0}, []int{n}, out.DType().Size()))
			return
		}
		defer sel.Release()
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(sel)).Ptr(ptr(src)).Ptr(ptr(init)).U64(uint64(n)).Bytes(geom, 8)
		check(c, g.launch("window", kernels.Name("window_select_scatter", string(d)), n, args))
	}
}

// selectName names a selection in kernel names.
var selectName = map[ops.SelectKind]string{ops.SelectGE: "ge", ops.SelectLE: "le"}

// poolScatters reports whether the pooling kernels' two passes take
// SelectAndScatter over the overlapping windows p of dtype d: NHWC, or
// NCHW by bands of operand rows, whole or in column tiles.
func poolScatters(p kernels.PoolDims, nhwc bool, d kernels.DType) bool {
	if !kernels.PoolSelects(p) {
		return false
	}
	switch poolLayout(p, nhwc, d) {
	case "nhwc":
		return true
	case "nchwband":
		return kernels.PoolScatterBand(p, d) || kernels.PoolScatterTile(p, d)
	case "nchwtile":
		return kernels.PoolScatterTile(p, d)
	}
	return false
}

// poolScatter queues SelectAndScatter over the overlapping windows p
// (poolScatters): a byte a window for its selection (pool2d_select,
// of kind sel), then each operand element's sum over the windows that
// chose it (pool2d_select_scatter).
func (g *Device) poolScatter(c *eager.Call, p kernels.PoolDims, nhwc bool, d kernels.DType, sel string, x, src, init, out *tensor.Tensor) {
	n, windows := out.NumElements(), src.NumElements()
	if windows == 0 { // init everywhere
		check(c, g.Copy(out.Buffer(), 0, []int{1}, init.Buffer(), 0, []int{0}, []int{n}, out.DType().Size()))
		return
	}
	chosen := temporary(c, tensor.Uint8, tensor.Shape{windows}, "the windows' selections")
	defer chosen.Release()
	check(c, g.launchPool(p, nhwc, d, windows, newArgs().Ptr(ptr(chosen)).Ptr(ptr(x)), "pool2d_select", sel))
	check(c, g.scatterChosen(p, nhwc, d, chosen, src, init, out))
}

// scatterChosen queues pool2d_select_scatter of the windows p of dtype d
// (at least one) that chose the taps chosen (a byte a window): each
// element of out *init plus src of each window that chose it. NHWC a
// thread an element; NCHW by bands of the operand's rows where the
// forward's are, by column tiles where its rows are too wide for a band,
// or a thread an element where neither takes p.
// With chosen nil, every window counts (pool2d_spread: the gradient of
// the windows' sums).
func (g *Device) scatterChosen(p kernels.PoolDims, nhwc bool, d kernels.DType, chosen, src, init, out *tensor.Tensor) error {
	n, kind := out.NumElements(), kernels.ScatterKind(chosen != nil)
	args := newArgs().Ptr(ptr(out))
	if chosen != nil {
		args.Ptr(ptr(chosen))
	}
	args.Ptr(ptr(src)).Ptr(ptr(init))
	planes := n / max(p.H*p.W, 1)
	switch {
	case !nhwc && slices.Contains([]string{"nchwband", "nchw2x2"}, poolLayout(p, false, d)) && kernels.PoolScatterBand(p, d):
		args.Bytes(kernels.PoolGeometry(p, n), 8)
		return g.launchBands("pool", kernels.Name(kind, "nchwband", string(d)), planes, p.H, kernels.ScatterBandRows(p, d), args)
	case !nhwc && kernels.PoolScatterTile(p, d):
		args.Bytes(kernels.PoolGeometry(p, n), 8)
		t, _ := kernels.RowBandTiling(p, d.Size())
		return g.launchTiles("pool", kernels.Name(kind, "nchwtile", string(d)), planes, p.H, p.W, t, args)
	}
	args.U64(uint64(n)).Bytes(kernels.PoolGeometry(p, n), 8)
	return g.launch("pool", kernels.Name(kind, kernels.LayoutName(nhwc), string(d)), n, args)
}

// spreadPool is the pooling whose sums' gradient a's window sums over
// dy into out are (ops.ReduceWindowAttrs.SpreadOf), as the pooling
// kernels take it: pool2d_spread walks its windows.
func spreadPool(dy, out tensor.Shape, a ops.ReduceWindowAttrs) (p kernels.PoolDims, nhwc, ok bool) {
	q, ok := a.SpreadOf(dy, out)
	if !ok || dy.NumElements() >= 1<<31 || out.NumElements() >= 1<<31 {
		return p, false, false
	}
	return poolDims(q), q.NHWC, true
}

func selectAndGather(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, dy, out := c.Inputs[0], c.Inputs[1], outs[0]
		sel, _ := selections(c, d, x, c.Attrs.(ops.SelectAttrs))
		if sel == nil {
			return
		}
		defer sel.Release()
		n := out.NumElements()
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(sel)).Ptr(ptr(dy)).U64(uint64(n))
		check(c, gpu(c).launch("window", kernels.Name("window_select_gather", width(x.DType())), n, args))
	}
}

// disjoint reports whether no operand element lies in two of w's windows:
// no dilation, and strides at least the window in every dimension (the
// usual pooling's), so that SelectAndScatter can put each window's value
// where it selects, with no sum across windows.
func disjoint(w ops.Window) bool {
	for d := range w.Dims {
		if w.Strides[d] < w.Dims[d] || w.WindowDilation[d] != 1 || w.BaseDilation[d] != 1 {
			return false
		}
	}
	return true
}

// tiles reports whether w's windows cover an operand of shape once
// each: in every dimension the windows stand side by side (stride the
// size, no dilation) from at or before the first element to at or beyond
// the last.
func tiles(shape tensor.Shape, w ops.Window) bool {
	out := w.OutShape(shape)
	for d := range w.Dims {
		low := w.Padding[d][0]
		if w.Strides[d] != w.Dims[d] || w.WindowDilation[d] != 1 || w.BaseDilation[d] != 1 || low < 0 || out[d]*w.Strides[d]-low < shape[d] {
			return false
		}
	}
	return true
}

// pool2D describes w over shape as the pooling kernels take it: a 2-D
// pooling (ops.Window.AsPooling2D) of fewer than 2^31 elements in and out
// (the kernels index in 32 bits).
func pool2D(shape tensor.Shape, w ops.Window) (p kernels.PoolDims, nhwc, ok bool) {
	q, ok := w.AsPooling2D(shape)
	if !ok || shape.NumElements() >= 1<<31 || w.OutShape(shape).NumElements() >= 1<<31 {
		return p, false, false
	}
	return poolDims(q), q.NHWC, true
}

// poolDims is q as the pooling kernels' geometry.
func poolDims(q ops.Pooling2D) kernels.PoolDims {
	return kernels.PoolDims{C: q.C, H: q.H, W: q.W, OH: q.OH, OW: q.OW, KH: q.KH, KW: q.KW, SH: q.SH, SW: q.SW, PH: q.PH, PW: q.PW}
}

// launchQuads queues 2x2 pooling kernel name (kernels.PoolQuads) over
// the n windows of p, args holding its tensors: a block a chunk of row
// pairs at a time.
func (d *Device) launchQuads(name string, p kernels.PoolDims, dt kernels.DType, n int, args *cu.Args) error {
	rows, per := n/p.OW, kernels.QuadsPerChunk(p.W, dt)
	args.U64(uint64(rows)).U64(uint64(p.W)).U64(uint64(per))
	divisorArg(args, p.OW, per*p.OW)
	chunks := (rows + per - 1) / per
	return d.launchBlocks("pool", name, min(chunks, max(d.info.SMs, 1)*8), blockSize, args)
}

// launchBand queues band kernel name of module (kernels.PoolBand) over the n
// windows of p, args holding its tensors: a block a band of a plane's
// output rows at a time.
func (d *Device) launchBand(module, name string, p kernels.PoolDims, dt kernels.DType, n int, args *cu.Args) error {
	return d.launchBandRows(module, name, p, n, kernels.BandRows(p, dt), args)
}

// launchBandRows is launchBand with rows output rows a band.
func (d *Device) launchBandRows(module, name string, p kernels.PoolDims, n, rows int, args *cu.Args) error {
	args.Bytes(kernels.PoolGeometry(p, n), 8)
	return d.launchBands(module, name, n/(p.OH*p.OW), p.OH, rows, args)
}

// launchBands queues band kernel name of module over planes planes of
// rows rows each, per rows a band, args holding its tensors and pooling
// geometry (then come the bands, the bands a plane as a divisor, and
// per): a block a band at a time.
func (d *Device) launchBands(module, name string, planes, rows, per int, args *cu.Args) error {
	return d.launchChunks(module, name, planes, (rows+per-1)/per, per, args)
}

// launchChunks queues band kernel name of module over planes planes of
// perPlane bands of per rows (tiles included), args holding its tensors
// and pooling geometry: a block a band at a time.
func (d *Device) launchChunks(module, name string, planes, perPlane, per int, args *cu.Args) error {
	chunks := planes * perPlane
	args.U64(uint64(chunks))
	divisorArg(args, perPlane, chunks).U64(uint64(per))
	return d.launchBlocks(module, name, min(chunks, max(d.info.SMs, 1)*8), blockSize, args)
}

// launchTile queues tiled band kernel name of module (kernels.PoolTile)
// over the n windows of p, by tiles of t (kernels.BandTiling).
func (d *Device) launchTile(module, name string, p kernels.PoolDims, n int, t kernels.Tiling, args *cu.Args) error {
	args.Bytes(kernels.PoolGeometry(p, n), 8)
	return d.launchTiles(module, name, n/(p.OH*p.OW), p.OH, p.OW, t, args)
}

// launchTiles queues tiled band kernel name of module over planes planes
// of rows x cols, by the bands and column tiles of t, args holding its
// tensors and pooling geometry (then come the bands, the bands a plane
// as a divisor, the rows a band, the columns a tile, and the tiles a row
// as a divisor): a block a tile at a time.
func (d *Device) launchTiles(module, name string, planes, rows, cols int, t kernels.Tiling, args *cu.Args) error {
	tiles := t.Tiles(cols)
	perPlane := t.Bands(rows) * tiles
	args.U64(uint64(planes * perPlane))
	divisorArg(args, perPlane, planes*perPlane).U64(uint64(t.Per)).U64(uint64(t.Cols))
	divisorArg(args, tiles, perPlane)
	return d.launchBlocks(module, name, min(planes*perPlane, max(d.info.SMs, 1)*8), blockSize, args)
}

// poolLayout names the pooling kernels that take p of dtype d: in NCHW,
// "nchw2x2" (kernels.PoolQuads), else "nchwband" (kernels.PoolBand: each
// plane's rows staged, every sector read whole), else "nchw2" (the pair
// kernels, for rows too wide for a band), else "nchwtile" (bands split
// into column tiles: kernels.PoolTile) or "nchw" (windows too large for a
// tile); "nhwc" in NHWC.
func poolLayout(p kernels.PoolDims, nhwc bool, d kernels.DType) string {
	switch {
	case nhwc:
		return "nhwc"
	case kernels.PoolQuads(p, d):
		return "nchw2x2"
	case kernels.PoolBand(p, d):
		return "nchwband"
	case kernels.PoolPairs(p, d):
		return "nchw2"
	case kernels.PoolTile(p, d):
		return "nchwtile"
	}
	return "nchw"
}

// launchPool queues the pooling kernel named by kind's parts, poolLayout
// and the dtype over the n windows of p, args holding its tensors.
func (d *Device) launchPool(p kernels.PoolDims, nhwc bool, dt kernels.DType, n int, args *cu.Args, kind ...string) error {
	return d.launchPoolIn(poolLayout(p, nhwc, dt), p, dt, n, args, kind...)
}

// launchPoolIn is launchPool of the kernels of layout (poolLayout's).
func (d *Device) launchPoolIn(layout string, p kernels.PoolDims, dt kernels.DType, n int, args *cu.Args, kind ...string) error {
	name := kernels.Name(append(kind, layout, string(dt))...)
	switch layout {
	case "nchw2x2":
		return d.launchQuads(name, p, dt, n, args)
	case "nchwband":
		return d.launchBand("pool", name, p, dt, n, args)
	case "nchwtile":
		t, _ := kernels.BandTiling(p, dt, kernels.BandBytes, 0)
		return d.launchTile("pool", name, p, n, t, args)
	}
	return d.launch("pool", name, n, args.U64(uint64(n)).Bytes(kernels.PoolGeometry(p, n), 8))
}
