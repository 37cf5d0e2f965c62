package ops

import (
	"github.com/eagerflow/eagerflow/internal/hostupdate"
	"github.com/eagerflow/eagerflow/tensor"
)

// AxpyInPlace sets dst[i] += alpha*x[i] for every element of dst, on the
// host's workers.
//
// Deprecated: update variables with tape.Variable.AssignScaled; the
// kernel itself is cpu.AxpyInPlace (package backend/cpu). It panics with
// a *tensor.Error where backend/cpu is not linked.
func AxpyInPlace[T tensor.Float](dst []T, alpha T, x []T) {
	switch d := any(dst).(type) {
	case []float32:
		hostKernel("AxpyInPlace", hostupdate.Axpy32 != nil)
		hostupdate.Axpy32(d, any(alpha).(float32), any(x).([]float32))
	case []float64:
		hostKernel("AxpyInPlace", hostupdate.Axpy64 != nil)
		hostupdate.Axpy64(d, any(alpha).(float64), any(x).([]float64))
	}
}

// AdamInPlace takes one Adam step over w, with its moments m and v and the
// gradient g, in place.
//
// Deprecated: use tape.Variable.AdamUpdate (or an nn.Adam optimizer); the
// kernel itself is cpu.AdamInPlace (package backend/cpu). It panics with
// a *tensor.Error where backend/cpu is not linked.
func AdamInPlace[T tensor.Float](w, m, v, g []T, p AdamParams) {
	switch w := any(w).(type) {
	case []float32:
		hostKernel("AdamInPlace", hostupdate.Adam32 != nil)
		hostupdate.Adam32(w, any(m).([]float32), any(v).([]float32), any(g).([]float32), hostupdate.AdamParams(p))
	case []float64:
		hostKernel("AdamInPlace", hostupdate.Adam64 != nil)
		hostupdate.Adam64(w, any(m).([]float64), any(v).([]float64), any(g).([]float64), hostupdate.AdamParams(p))
	}
}

// hostKernel fails fn when backend/cpu, which lends its kernel, is not
// linked.
func hostKernel(fn string, linked bool) {
	if !linked {
		fail(fn, tensor.ErrNoKernel, nil, "the kernel is backend/cpu's; import it (package tape does)")
	}
}
