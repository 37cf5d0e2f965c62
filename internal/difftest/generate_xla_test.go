package difftest

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// XLAWindow is an XLA window as a step carries it (ops.Window's fields):
// one entry per dimension of the operand, or of a convolution's spatial
// dimensions.
type XLAWindow struct {
	Dims           []int    `json:"dims"`
	Strides        []int    `json:"strides"`
	Padding        [][2]int `json:"padding"`
	BaseDilation   []int    `json:"base"`
	WindowDilation []int    `json:"wdil"`
}

func (w *XLAWindow) window() ops.Window {
	return ops.Window{Dims: w.Dims, Strides: w.Strides, Padding: w.Padding, BaseDilation: w.BaseDilation, WindowDilation: w.WindowDilation}
}

// XLAConv is a general convolution's feature groups and dimension numbers
// (ops.ConvDims's fields); its window is the step's XLAWindow, Dims being
// the kernel's spatial sizes.
type XLAConv struct {
	Groups        int   `json:"groups"`
	InBatch       int   `json:"in_batch"`
	InFeature     int   `json:"in_feature"`
	InSpatial     []int `json:"in_spatial"`
	KernelIn      int   `json:"kernel_in"`
	KernelOut     int   `json:"kernel_out"`
	KernelSpatial []int `json:"kernel_spatial"`
	OutBatch      int   `json:"out_batch"`
	OutFeature    int   `json:"out_feature"`
	OutSpatial    []int `json:"out_spatial"`
}

// xlaWindow draws a window over dimensions of the given sizes: windows of
// 1 to 3 taps, strides of 1 or 2, sometimes dilated (base and window) or
// padded (edges from -1 to 2, a negative edge cropping). It reports false
// where a dimension would have no window position.
func (g *gen) xlaWindow(sizes []int) (*XLAWindow, bool) {
	r := len(sizes)
	w := &XLAWindow{Dims: make([]int, r), Strides: make([]int, r), Padding: make([][2]int, r),
		BaseDilation: make([]int, r), WindowDilation: make([]int, r)}
	for d, n := range sizes {
		w.Dims[d], w.Strides[d], w.BaseDilation[d], w.WindowDilation[d] = g.between(1, 3), g.between(1, 2), 1, 1
		if g.chance(0.3) {
			w.BaseDilation[d] = 2
		}
		if g.chance(0.3) {
			w.WindowDilation[d] = 2
		}
		if g.chance(0.5) {
			w.Padding[d] = [2]int{g.between(-1, 2), g.between(-1, 2)}
		}
		span := (w.Dims[d]-1)*w.WindowDilation[d] + 1
		if (n-1)*w.BaseDilation[d]+1+w.Padding[d][0]+w.Padding[d][1] < span {
			return nil, false
		}
	}
	return w, true
}

// genXLAWindow adds one of XLA's general window ops: ReduceWindow (sum,
// max or min, its init an input), ExtractPatches (its pad an input),
// SelectAndScatter (GE or LE, a source per window position), or Conv of
// 1 to 3 spatial dimensions with feature groups, lhs and rhs dilation,
// negative padding and shuffled dimension numbers.
func genXLAWindow(g *gen) bool {
	if g.chance(0.4) {
		return genXLAConv(g)
	}
	x := g.operand(1, 3, nil)
	s := g.value(x).Shape()
	w, ok := g.xlaWindow(s)
	if !ok {
		return false
	}
	out := w.window().OutShape(s)
	a := Attrs{Window: w}
	switch g.intn(4) {
	case 0:
		if out.NumElements()*tensor.Shape(w.Dims).NumElements() > g.limit {
			return false
		}
		g.add("extract_patches", a, x, g.input(nil, -1, 1))
	case 1:
		if g.smooth {
			x = g.input(s, -2, 2)
		}
		a.Kind = []string{"ge", "le"}[g.intn(2)]
		g.add("select_and_scatter", a, x, g.input(out, -1, 1), g.input(nil, -1, 1))
	default:
		a.Kind = []string{"sum", "max", "min"}[g.intn(3)]
		if g.smooth && a.Kind != "sum" {
			x = g.input(s, -2, 2)
		}
		g.add("reduce_window", a, x, g.input(nil, -1, 1))
	}
	return true
}

func genXLAConv(g *gen) bool {
	r := g.between(1, 3)
	hi := 5
	if r == 3 {
		hi = 3
	}
	groups := g.between(1, 2)
	n, cin, cout := g.between(1, 2), groups*g.size(2), groups*g.size(2)
	spatial := make([]int, r)
	for d := range spatial {
		spatial[d] = g.size(hi)
	}
	w, ok := g.xlaWindow(spatial)
	if !ok {
		return false
	}
	c := &XLAConv{Groups: groups}
	ip, kp, op := g.perm(r+2), g.perm(r+2), g.perm(r+2)
	c.InBatch, c.InFeature, c.InSpatial = ip[0], ip[1], ip[2:]
	c.KernelOut, c.KernelIn, c.KernelSpatial = kp[0], kp[1], kp[2:]
	c.OutBatch, c.OutFeature, c.OutSpatial = op[0], op[1], op[2:]
	xs, ks := make([]int, r+2), make([]int, r+2)
	xs[c.InBatch], xs[c.InFeature] = n, cin
	ks[c.KernelOut], ks[c.KernelIn] = cout, cin/groups
	for d := range r {
		xs[c.InSpatial[d]], ks[c.KernelSpatial[d]] = spatial[d], w.Dims[d]
	}
	if tensor.Shape(xs).NumElements() > g.limit || n*cout*w.window().OutShape(spatial).NumElements() > g.limit {
		return false
	}
	g.add("conv", Attrs{Window: w, Conv: c}, g.operandOf(xs), g.input(ks, -1, 1))
	return true
}

// applyXLAWindow runs the steps genXLAWindow adds.
func applyXLAWindow(op string, x []T, a Attrs) T {
	w := a.Window.window()
	switch op {
	case "extract_patches":
		return ops.ExtractPatches(x[0], x[1], w)
	case "select_and_scatter":
		sel := map[string]ops.SelectKind{"ge": ops.SelectGE, "le": ops.SelectLE}[a.Kind]
		return ops.SelectAndScatter(x[0], x[1], x[2], sel, w)
	case "reduce_window":
		kind := map[string]ops.ReduceKind{"sum": ops.ReduceSum, "max": ops.ReduceMax, "min": ops.ReduceMin}[a.Kind]
		return ops.ReduceWindow(x[0], x[1], kind, w)
	}
	c := a.Conv
	return ops.Conv(x[0], x[1], ops.ConvOpts{Strides: w.Strides, Padding: w.Padding, LhsDilation: w.BaseDilation,
		RhsDilation: w.WindowDilation, FeatureGroups: c.Groups, Dims: ops.ConvDims{
			InBatch: c.InBatch, InFeature: c.InFeature, InSpatial: c.InSpatial,
			KernelIn: c.KernelIn, KernelOut: c.KernelOut, KernelSpatial: c.KernelSpatial,
			OutBatch: c.OutBatch, OutFeature: c.OutFeature, OutSpatial: c.OutSpatial}})
}
