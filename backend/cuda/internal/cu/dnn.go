package cu

import (
	"errors"
	"fmt"
)

// ErrNoDNN is the error of a convolution where cuDNN was not loaded.
var ErrNoDNN = errors.New("cuda: cuDNN is not loaded")

// ConvPass is one of a convolution's three computations.
type ConvPass uint8

// The passes: the output from the input and the filters, the input's
// gradient from the filters and the output's gradient, the filters'
// gradient from the input and the output's gradient.
const (
	ConvForward ConvPass = iota
	ConvBackwardData
	ConvBackwardFilter
)

func (p ConvPass) String() string {
	return [...]string{"forward", "backward data", "backward filter"}[p]
}

// Conv is a 2-D cross-correlation as cuDNN computes it: an input x of N
// images of C channels, H by W, in NCHW or (NHWC set) NHWC; K filters of
// C/G channels (G the Groups), R by S, stored KCRS beside NCHW and KRSC
// beside NHWC; the output y of N images of K channels, P by Q (OutSize),
// in x's layout. Filter k reads the channels of its group, the (k·G/K)th
// run of C/G (a depthwise convolution: G = C, K = C·multiplier). Padding
// is the same on both sides of a dimension.
type Conv struct {
	Type                 GemmType
	NHWC                 bool
	N, C, H, W           int
	K, R, S              int
	PadH, PadW           int
	StrideH, StrideW     int
	DilationH, DilationW int
	// Groups splits the channels and the filters (cudnnSetConvolutionGroupCount);
	// 0 and 1 are one group.
	Groups int
	// TF32 lets float32 convolutions run on TF32 tensor cores.
	TF32 bool
}

// GroupCount is the groups, at least 1.
func (c Conv) GroupCount() int { return max(c.Groups, 1) }

// FilterChannels is the channels each filter reads: C/G.
func (c Conv) FilterChannels() int { return c.C / c.GroupCount() }

// OutSize is the output's height and width.
func (c Conv) OutSize() (p, q int) {
	p = (c.H+2*c.PadH-c.DilationH*(c.R-1)-1)/c.StrideH + 1
	q = (c.W+2*c.PadW-c.DilationW*(c.S-1)-1)/c.StrideW + 1
	return p, q
}

// Check reports a convolution cuDNN would refuse: a size not positive, an
// empty output, or an element type other than float32 and float64.
func (c Conv) Check() error {
	for _, v := range []int{c.N, c.C, c.H, c.W, c.K, c.R, c.S, c.StrideH, c.StrideW, c.DilationH, c.DilationW} {
		if v <= 0 {
			return fmt.Errorf("cuda: convolution %+v: sizes, strides and dilations must be positive", c)
		}
	}
	if c.PadH < 0 || c.PadW < 0 {
		return fmt.Errorf("cuda: convolution %+v: negative padding", c)
	}
	if g := c.GroupCount(); c.Groups < 0 || c.C%g != 0 || c.K%g != 0 {
		return fmt.Errorf("cuda: convolution %+v: %d groups do not divide the channels and the filters", c, c.Groups)
	}
	if p, q := c.OutSize(); p <= 0 || q <= 0 {
		return fmt.Errorf("cuda: convolution %+v: no output positions", c)
	}
	if c.Type > Float16 {
		return fmt.Errorf("cuda: convolution of element type %d", c.Type)
	}
	return nil
}

// Elements are the element counts of x, the filters and y.
func (c Conv) Elements() (x, w, y int) {
	p, q := c.OutSize()
	return c.N * c.C * c.H * c.W, c.K * c.FilterChannels() * c.R * c.S, c.N * c.K * p * q
}

// ConvPlan is the algorithm chosen for a pass (cuDNN's number for it) and
// the bytes of workspace it needs.
type ConvPlan struct {
	Algo      int
	Workspace int
}

// DNN is cuDNN as the backend uses it: a Context that has it loaded
// implements it (the driver's, where libcudnn.so.9 was found; the
// emulator's, which computes on the host and holds the backend to cuDNN's
// contracts). Calls are made inside Do, like the Context's.
type DNN interface {
	// DNNVersion names the library.
	DNNVersion() string
	// PlanConv chooses the algorithm of a pass: the fastest by cuDNN's
	// heuristics of those that are deterministic and neither FFT nor
	// Winograd (whose rounding differs most from a direct sum).
	PlanConv(c Conv, pass ConvPass) (ConvPlan, error)
	// Conv queues a pass on s with the plan's algorithm and a workspace of
	// at least its bytes at ws: ConvForward computes y (out) from x (a) and
	// the filters (b); ConvBackwardData the input's gradient (out) from the
	// filters (a) and the output's gradient (b); ConvBackwardFilter the
	// filters' gradient (out) from x (a) and the output's gradient (b).
	Conv(s Stream, c Conv, pass ConvPass, plan ConvPlan, a, b, out, ws Ptr) error
}
