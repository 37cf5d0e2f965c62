//go:build linux && (amd64 || arm64)

package libcuda

import (
	"fmt"
	"os"
	"slices"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// cuDNN 9's legacy convolution API (libcudnn.so.9, the shim that loads
// libcudnn_cnn and libcudnn_ops beside it), as the cuDNN headers declare
// it: a handle per context, tensor, filter and convolution descriptors
// made once per convolution shape, algorithms chosen by
// cudnnGet*Algorithm_v7's heuristics.

// dnn is cuDNN's entry points.
type dnn struct {
	file                                                 string
	version                                              int
	create, setStream, getErrorString                    uintptr
	createTensor, setTensor4d, createFilter, setFilter4d uintptr
	createConv, setConv2d, setConvMath                   uintptr
	fwdAlgo, fwdWorkspace, forward                       uintptr
	dataAlgo, dataWorkspace, backwardData                uintptr
	filterAlgo, filterWorkspace, backwardFilter          uintptr
	setGroups                                            uintptr // cudnnSetConvolutionGroupCount; 0 where absent
	errorString                                          func(status int32) string
	getVersion                                           uintptr
}

// dnnNames are the libraries tried, newest first.
var dnnNames = []string{"libcudnn.so.9"}

// EnvCudnn names a cuDNN library to load instead of searching.
const EnvCudnn = "EAGERFLOW_LIBCUDNN"

// loadDNN opens cuDNN.
func loadDNN(dirs []string) (*dnn, error) {
	h, file, err := open("cuDNN (libcudnn.so.9)", candidates(os.Getenv(EnvCudnn), dnnNames, dirs))
	if err != nil {
		return nil, err
	}
	n := &dnn{file: file}
	err = resolve(h, file, map[string]*uintptr{
		"cudnnCreate": &n.create, "cudnnSetStream": &n.setStream, "cudnnGetVersion": &n.getVersion,
		"cudnnCreateTensorDescriptor": &n.createTensor, "cudnnSetTensor4dDescriptor": &n.setTensor4d,
		"cudnnCreateFilterDescriptor": &n.createFilter, "cudnnSetFilter4dDescriptor": &n.setFilter4d,
		"cudnnCreateConvolutionDescriptor": &n.createConv, "cudnnSetConvolution2dDescriptor": &n.setConv2d,
		"cudnnSetConvolutionMathType":             &n.setConvMath,
		"cudnnGetConvolutionForwardAlgorithm_v7":  &n.fwdAlgo,
		"cudnnGetConvolutionForwardWorkspaceSize": &n.fwdWorkspace, "cudnnConvolutionForward": &n.forward,
		"cudnnGetConvolutionBackwardDataAlgorithm_v7":  &n.dataAlgo,
		"cudnnGetConvolutionBackwardDataWorkspaceSize": &n.dataWorkspace, "cudnnConvolutionBackwardData": &n.backwardData,
		"cudnnGetConvolutionBackwardFilterAlgorithm_v7":  &n.filterAlgo,
		"cudnnGetConvolutionBackwardFilterWorkspaceSize": &n.filterWorkspace, "cudnnConvolutionBackwardFilter": &n.backwardFilter,
	}, true)
	if err != nil {
		return nil, err
	}
	if sym, err := purego.Dlsym(h, "cudnnSetConvolutionGroupCount"); err == nil {
		n.setGroups = sym
	}
	if sym, err := purego.Dlsym(h, "cudnnGetErrorString"); err == nil && sym != 0 {
		purego.RegisterFunc(&n.errorString, sym)
	}
	r, _, _ := purego.SyscallN(n.getVersion)
	n.version = int(r)
	return n, nil
}

// call calls a cuDNN function and turns its status into an error.
//
//go:uintptrescapes
func (n *dnn) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if r == 0 {
		return nil
	}
	e := &cu.Error{Call: name, Code: int(r), Name: fmt.Sprintf("CUDNN_STATUS %d", r)}
	if n.errorString != nil {
		e.Name = n.errorString(int32(r))
	}
	return e
}

// cuDNN's enumerations, as its headers number them.
const (
	dnnNCHW, dnnNHWC         = 0, 1 // cudnnTensorFormat_t
	dnnFloat, dnnDouble      = 0, 1 // cudnnDataType_t
	dnnHalf, dnnBFloat16     = 2, 9
	dnnCrossCorrelation      = 1 // cudnnConvolutionMode_t
	dnnDefaultMath           = 0 // cudnnMathType_t
	dnnTensorOpMath          = 1
	dnnFMAMath               = 3
	dnnDeterministic         = 1 // cudnnDeterminism_t
	dnnPerfBytes             = 48
	dnnRequestedAlgos        = 8
	dnnPerfAlgo, dnnPerfStat = 0, 4 // offsets in cudnnConvolution*AlgoPerf_t
	dnnPerfDeterminism       = 24
)

// dnnSpectral are the FFT and Winograd algorithms of each pass, which
// PlanConv passes over.
var dnnSpectral = map[cu.ConvPass][]int{
	cu.ConvForward:        {4, 5, 6, 7}, // FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED
	cu.ConvBackwardData:   {2, 3, 4, 5}, // FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED
	cu.ConvBackwardFilter: {2, 4, 5, 6}, // FFT, WINOGRAD, WINOGRAD_NONFUSED, FFT_TILING
}

// convDescs are one convolution's descriptors: x's, the filters', y's and
// the convolution's.
type convDescs struct{ x, w, y, conv uintptr }

// String names the file and the version (cuDNN 9 numbers versions
// major·10000 + minor·100 + patch).
func (n *dnn) String() string {
	return fmt.Sprintf("%s (cuDNN %d.%d.%d)", n.file, n.version/10000, n.version/100%100, n.version%100)
}

// DNNVersion names cuDNN's file and version.
func (c *Context) DNNVersion() string {
	if c.d.dnn == nil {
		return ""
	}
	return c.d.dnn.String()
}

// dnnHandle returns cuDNN and the context's handle, made on first use.
func (c *Context) dnnHandle() (*dnn, uintptr, error) {
	n := c.d.dnn
	if n == nil {
		return nil, 0, fmt.Errorf("%w: %v", cu.ErrNoDNN, c.d.dnnE)
	}
	if c.dnnH == 0 {
		if err := n.call("cudnnCreate", n.create, uintptr(unsafe.Pointer(&c.dnnH))); err != nil {
			return nil, 0, err
		}
		c.convs = map[cu.Conv]convDescs{}
	}
	return n, c.dnnH, nil
}

// descs returns cv's descriptors, made on first use.
func (c *Context) descs(n *dnn, cv cu.Conv) (convDescs, error) {
	key := cv
	if d, ok := c.convs[key]; ok {
		return d, nil
	}
	if g := cv.GroupCount(); g > 1 && n.setGroups == 0 { // before any descriptor is made
		return convDescs{}, fmt.Errorf("cuda: %s has no cudnnSetConvolutionGroupCount for a convolution of %d groups", n, g)
	}
	d := new(convDescs) // on the heap: its fields' addresses go to cuDNN as integers
	format, dt := uintptr(dnnNCHW), uintptr(dnnFloat)
	if cv.NHWC {
		format = dnnNHWC
	}
	compute := uintptr(dnnFloat) // the convolution's: float32 for the half types
	switch cv.Type {
	case cu.Float64:
		dt, compute = dnnDouble, dnnDouble
	case cu.Float16:
		dt = dnnHalf
	case cu.BFloat16:
		dt = dnnBFloat16
	}
	p, q := cv.OutSize()
	steps := []struct {
		name string
		fn   uintptr
		args []uintptr
	}{
		{"cudnnCreateTensorDescriptor", n.createTensor, []uintptr{uintptr(unsafe.Pointer(&d.x))}},
		{"cudnnCreateTensorDescriptor", n.createTensor, []uintptr{uintptr(unsafe.Pointer(&d.y))}},
		{"cudnnCreateFilterDescriptor", n.createFilter, []uintptr{uintptr(unsafe.Pointer(&d.w))}},
		{"cudnnCreateConvolutionDescriptor", n.createConv, []uintptr{uintptr(unsafe.Pointer(&d.conv))}},
	}
	for _, s := range steps {
		if err := n.call(s.name, s.fn, s.args...); err != nil {
			return *d, err
		}
	}
	math := uintptr(dnnDefaultMath)
	switch {
	case cv.Type == cu.Float32 && cv.TF32, cv.Type == cu.BFloat16, cv.Type == cu.Float16:
		math = dnnTensorOpMath
	case cv.Type == cu.Float32:
		math = dnnFMAMath
	}
	sets := []struct {
		name string
		fn   uintptr
		args []uintptr
	}{
		{"cudnnSetTensor4dDescriptor", n.setTensor4d, []uintptr{d.x, format, dt, uintptr(cv.N), uintptr(cv.C), uintptr(cv.H), uintptr(cv.W)}},
		{"cudnnSetTensor4dDescriptor", n.setTensor4d, []uintptr{d.y, format, dt, uintptr(cv.N), uintptr(cv.K), uintptr(p), uintptr(q)}},
		{"cudnnSetFilter4dDescriptor", n.setFilter4d, []uintptr{d.w, dt, format, uintptr(cv.K), uintptr(cv.FilterChannels()), uintptr(cv.R), uintptr(cv.S)}},
		{"cudnnSetConvolution2dDescriptor", n.setConv2d, []uintptr{d.conv, uintptr(cv.PadH), uintptr(cv.PadW),
			uintptr(cv.StrideH), uintptr(cv.StrideW), uintptr(cv.DilationH), uintptr(cv.DilationW), dnnCrossCorrelation, compute}},
		{"cudnnSetConvolutionMathType", n.setConvMath, []uintptr{d.conv, math}},
	}
	if g := cv.GroupCount(); g > 1 {
		sets = append(sets, struct {
			name string
			fn   uintptr
			args []uintptr
		}{"cudnnSetConvolutionGroupCount", n.setGroups, []uintptr{d.conv, uintptr(g)}})
	}
	for _, s := range sets {
		if err := n.call(s.name, s.fn, s.args...); err != nil {
			return *d, err
		}
	}
	c.convs[key] = *d
	return *d, nil
}

// PlanConv asks cuDNN's heuristics for the pass's algorithms and takes
// the first that is deterministic and neither FFT nor Winograd, with the
// workspace it needs.
func (c *Context) PlanConv(cv cu.Conv, pass cu.ConvPass) (cu.ConvPlan, error) {
	if err := cv.Check(); err != nil {
		return cu.ConvPlan{}, err
	}
	n, h, err := c.dnnHandle()
	if err != nil {
		return cu.ConvPlan{}, err
	}
	d, err := c.descs(n, cv)
	if err != nil {
		return cu.ConvPlan{}, err
	}
	// On the heap, as below: their addresses go to cuDNN as integers.
	perf, count := new([dnnRequestedAlgos * dnnPerfBytes]byte), new(int32)
	pp, cp := uintptr(unsafe.Pointer(&perf[0])), uintptr(unsafe.Pointer(count))
	switch pass {
	case cu.ConvForward:
		err = n.call("cudnnGetConvolutionForwardAlgorithm_v7", n.fwdAlgo, h, d.x, d.w, d.conv, d.y, dnnRequestedAlgos, cp, pp)
	case cu.ConvBackwardData:
		err = n.call("cudnnGetConvolutionBackwardDataAlgorithm_v7", n.dataAlgo, h, d.w, d.y, d.conv, d.x, dnnRequestedAlgos, cp, pp)
	default:
		err = n.call("cudnnGetConvolutionBackwardFilterAlgorithm_v7", n.filterAlgo, h, d.x, d.y, d.conv, d.w, dnnRequestedAlgos, cp, pp)
	}
	if err != nil {
		return cu.ConvPlan{}, err
	}
	algo := -1
	for i := range int(min(*count, dnnRequestedAlgos)) {
		rec := perf[i*dnnPerfBytes:]
		a, status, det := le32(rec[dnnPerfAlgo:]), le32(rec[dnnPerfStat:]), le32(rec[dnnPerfDeterminism:])
		if status == 0 && det == dnnDeterministic && !slices.Contains(dnnSpectral[pass], int(a)) {
			algo = int(a)
			break
		}
	}
	if algo < 0 {
		return cu.ConvPlan{}, fmt.Errorf("cuda: cuDNN offers no deterministic %s algorithm for %+v", pass, cv)
	}
	ws := new(uint64)
	wp := uintptr(unsafe.Pointer(ws))
	switch pass {
	case cu.ConvForward:
		err = n.call("cudnnGetConvolutionForwardWorkspaceSize", n.fwdWorkspace, h, d.x, d.w, d.conv, d.y, uintptr(algo), wp)
	case cu.ConvBackwardData:
		err = n.call("cudnnGetConvolutionBackwardDataWorkspaceSize", n.dataWorkspace, h, d.w, d.y, d.conv, d.x, uintptr(algo), wp)
	default:
		err = n.call("cudnnGetConvolutionBackwardFilterWorkspaceSize", n.filterWorkspace, h, d.x, d.y, d.conv, d.w, uintptr(algo), wp)
	}
	return cu.ConvPlan{Algo: algo, Workspace: int(*ws)}, err
}

func le32(b []byte) int32 {
	return int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

// Conv queues the pass on s (alpha 1, beta 0: the output is overwritten).
func (c *Context) Conv(s cu.Stream, cv cu.Conv, pass cu.ConvPass, plan cu.ConvPlan, a, b, out, ws cu.Ptr) error {
	n, h, d, alpha, beta, err := c.onStream(s, cv)
	if err != nil {
		return err
	}
	algo, wsBytes := uintptr(plan.Algo), uintptr(plan.Workspace)
	switch pass {
	case cu.ConvForward:
		return n.call("cudnnConvolutionForward", n.forward, h, alpha, d.x, uintptr(a), d.w, uintptr(b), d.conv, algo,
			uintptr(ws), wsBytes, beta, d.y, uintptr(out))
	case cu.ConvBackwardData:
		return n.call("cudnnConvolutionBackwardData", n.backwardData, h, alpha, d.w, uintptr(a), d.y, uintptr(b), d.conv, algo,
			uintptr(ws), wsBytes, beta, d.x, uintptr(out))
	}
	return n.call("cudnnConvolutionBackwardFilter", n.backwardFilter, h, alpha, d.x, uintptr(a), d.y, uintptr(b), d.conv, algo,
		uintptr(ws), wsBytes, beta, d.w, uintptr(out))
}

// onStream readies a call on cv: cuDNN, the handle on stream s, cv's
// descriptors, and the addresses of 1 and 0 in cv's scaling type.
func (c *Context) onStream(s cu.Stream, cv cu.Conv) (n *dnn, h uintptr, d convDescs, alpha, beta uintptr, err error) {
	if n, h, err = c.dnnHandle(); err != nil {
		return
	}
	if d, err = c.descs(n, cv); err != nil {
		return
	}
	if err = n.call("cudnnSetStream", n.setStream, h, uintptr(s)); err != nil {
		return
	}
	alpha, beta = uintptr(unsafe.Pointer(&one32)), uintptr(unsafe.Pointer(&zero32))
	if cv.Type == cu.Float64 {
		alpha, beta = uintptr(unsafe.Pointer(&one64)), uintptr(unsafe.Pointer(&zero64))
	}
	return
}

// The scaling factors cuDNN reads through pointers: package variables,
// which stay where they are.
var (
	one32, zero32 = float32(1), float32(0)
	one64, zero64 = float64(1), float64(0)
)

var _ cu.DNN = (*Context)(nil)
