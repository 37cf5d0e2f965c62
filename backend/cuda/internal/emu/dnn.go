package emu

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// The emulated cuDNN: convolutions computed on the host from emulated
// device memory (sums in float64, rounded once to the element type),
// holding the backend to cuDNN's contracts: the plan's algorithm, a
// workspace of the bytes the plan asked for (scribbled over, as a real
// algorithm may), buffers as large as the shapes say, and cuDNN's status
// names in its errors.

// The one algorithm the emulator plans, and its status codes (cuDNN 9's
// numbering).
const (
	dnnAlgo         = 1
	dnnStatusBad    = 2000 // CUDNN_STATUS_BAD_PARAM
	dnnVersionEmu   = "emulated cuDNN (9.0.0)"
	dnnScribbleByte = 0xab
)

func dnnError(call, format string, args ...any) error {
	return &cu.Error{Call: call, Code: dnnStatusBad, Name: "CUDNN_STATUS_BAD_PARAM", Detail: fmt.Sprintf(format, args...)}
}

// DNNVersion names the emulation.
func (c *Context) DNNVersion() string { return dnnVersionEmu }

// dnnWorkspace is the workspace the emulator asks for: a row of the
// pass's reduction, so that the backend's handling of workspaces runs.
func dnnWorkspace(cv cu.Conv, pass cu.ConvPass) int {
	elem := cv.Type.Size()
	switch pass {
	case cu.ConvForward:
		return elem * cv.FilterChannels() * cv.R * cv.S
	case cu.ConvBackwardData:
		return elem * cv.K * cv.R * cv.S
	}
	p, q := cv.OutSize()
	return elem * cv.N * p * q
}

// PlanConv checks the convolution as cuDNN would and plans the emulator's
// algorithm.
func (c *Context) PlanConv(cv cu.Conv, pass cu.ConvPass) (cu.ConvPlan, error) {
	const call = "cudnnGetConvolutionAlgorithm_v7"
	if err := c.enter(call); err != nil {
		return cu.ConvPlan{}, err
	}
	defer c.mu.Unlock()
	if err := cv.Check(); err != nil {
		return cu.ConvPlan{}, dnnError(call, "%v", err)
	}
	return cu.ConvPlan{Algo: dnnAlgo, Workspace: dnnWorkspace(cv, pass)}, nil
}

// Conv checks the call and queues the pass.
func (c *Context) Conv(s cu.Stream, cv cu.Conv, pass cu.ConvPass, plan cu.ConvPlan, a, b, out, ws cu.Ptr) error {
	call := "cudnnConvolution" + map[cu.ConvPass]string{cu.ConvForward: "Forward", cu.ConvBackwardData: "BackwardData",
		cu.ConvBackwardFilter: "BackwardFilter"}[pass]
	return c.enqueue(call, s, func() error {
		if err := cv.Check(); err != nil {
			return dnnError(call, "%v", err)
		}
		if plan.Algo != dnnAlgo {
			return dnnError(call, "algorithm %d was not planned for this convolution", plan.Algo)
		}
		if need := dnnWorkspace(cv, pass); plan.Workspace < need {
			return dnnError(call, "a workspace of %d bytes, the algorithm needs %d", plan.Workspace, need)
		}
		if plan.Workspace > 0 {
			if err := c.checkRange(call, ws, plan.Workspace); err != nil {
				return err
			}
		}
		elem := cv.Type.Size()
		nx, nw, ny := cv.Elements()
		sizes := map[cu.ConvPass][3]int{cu.ConvForward: {nx, nw, ny}, cu.ConvBackwardData: {nw, ny, nx}, cu.ConvBackwardFilter: {nx, ny, nw}}[pass]
		for i, p := range []cu.Ptr{a, b, out} {
			if err := c.checkRange(call, p, sizes[i]*elem); err != nil {
				return err
			}
		}
		return nil
	}, func() error {
		c.DNNCalls++
		if cv.Type == cu.BFloat16 || cv.Type == cu.Float16 {
			c.HalfDNNCalls++
		}
		if plan.Workspace > 0 {
			w, err := c.mem.slice(uint64(ws), plan.Workspace)
			if err != nil {
				return freed(call, err)
			}
			for i := range w {
				w[i] = dnnScribbleByte
			}
		}
		if err := c.convolve(cv, pass, a, b, out); err != nil {
			return freed(call, err)
		}
		_, _, ny := cv.Elements() // every pass does the forward's multiply-adds
		c.tick(launchNs + 2*float64(ny)*float64(cv.FilterChannels()*cv.R*cv.S)/gemmFlopsPerNs)
		return nil
	})
}

// convLayout indexes a convolution's tensors in their layouts.
type convLayout struct {
	cv   cu.Conv
	p, q int
}

func (l convLayout) x(n, ch, h, w int) int {
	if l.cv.NHWC {
		return ((n*l.cv.H+h)*l.cv.W+w)*l.cv.C + ch
	}
	return ((n*l.cv.C+ch)*l.cv.H+h)*l.cv.W + w
}

// w indexes filter k's channel ch of its group's C/G.
func (l convLayout) w(k, ch, r, s int) int {
	cg := l.cv.FilterChannels()
	if l.cv.NHWC { // KRSC
		return ((k*l.cv.R+r)*l.cv.S+s)*cg + ch
	}
	return ((k*cg+ch)*l.cv.R+r)*l.cv.S + s // KCRS
}

func (l convLayout) y(n, k, p, q int) int {
	if l.cv.NHWC {
		return ((n*l.p+p)*l.q+q)*l.cv.K + k
	}
	return ((n*l.cv.K+k)*l.p+p)*l.q + q
}

// convolve computes the pass on emulated memory.
func (c *Context) convolve(cv cu.Conv, pass cu.ConvPass, a, b, out cu.Ptr) error {
	elem := cv.Type.Size()
	nx, nw, ny := cv.Elements()
	read := func(p cu.Ptr, n int) ([]float64, error) {
		raw, err := c.mem.slice(uint64(p), n*elem)
		if err != nil {
			return nil, err
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = readElem(raw, i, cv.Type)
		}
		return v, nil
	}
	var x, w, y []float64
	var err error
	switch pass {
	case cu.ConvForward:
		if x, err = read(a, nx); err == nil {
			w, err = read(b, nw)
		}
		y = make([]float64, ny)
	case cu.ConvBackwardData:
		if w, err = read(a, nw); err == nil {
			y, err = read(b, ny)
		}
		x = make([]float64, nx)
	default:
		if x, err = read(a, nx); err == nil {
			y, err = read(b, ny)
		}
		w = make([]float64, nw)
	}
	if err != nil {
		return err
	}
	p, q := cv.OutSize()
	l := convLayout{cv: cv, p: p, q: q}
	cg, perGroup := cv.FilterChannels(), cv.K/cv.GroupCount()
	for n := range cv.N {
		for k := range cv.K {
			first := k / perGroup * cg // the group's first channel
			for op := range p {
				for oq := range q {
					yi := l.y(n, k, op, oq)
					for ch := range cg {
						for r := range cv.R {
							h := op*cv.StrideH - cv.PadH + r*cv.DilationH
							if h < 0 || h >= cv.H {
								continue
							}
							for s := range cv.S {
								ww := oq*cv.StrideW - cv.PadW + s*cv.DilationW
								if ww < 0 || ww >= cv.W {
									continue
								}
								xi, wi := l.x(n, first+ch, h, ww), l.w(k, ch, r, s)
								switch pass {
								case cu.ConvForward:
									y[yi] += x[xi] * w[wi]
								case cu.ConvBackwardData:
									x[xi] += y[yi] * w[wi]
								default:
									w[wi] += x[xi] * y[yi]
								}
							}
						}
					}
				}
			}
		}
	}
	res := map[cu.ConvPass][]float64{cu.ConvForward: y, cu.ConvBackwardData: x, cu.ConvBackwardFilter: w}[pass]
	raw, err := c.mem.slice(uint64(out), len(res)*elem)
	if err != nil {
		return err
	}
	for i, v := range res {
		writeElem(raw, i, cv.Type, v)
	}
	return nil
}

var _ cu.DNN = (*Context)(nil)
