//go:build linux && (amd64 || arm64)

package libcuda

import (
	"os"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// GEMMs through cuBLASLt (cublasLtMatmul), as PyTorch runs its float
// products on Hopper: a workspace, the algorithm its heuristics choose
// (once per shape, cached with its descriptors), and the BIAS and
// RELU_BIAS epilogues that FusedMatMul asks for. Where cuBLASLt is absent
// or its heuristics find nothing for a shape, a GEMM without an epilogue
// runs through cuBLAS's strided batched call and one with an epilogue
// returns cu.ErrNoEpilogue.

// EnvCublasLt set to 0 keeps GEMMs on cuBLAS's strided batched calls (no
// epilogues in the GEMM).
const EnvCublasLt = "EAGERFLOW_CUBLASLT"

// ltWorkspace is the workspace the heuristics may ask for: 32 MiB, what
// NVIDIA's cuBLAS guide recommends on Hopper.
const ltWorkspace = 32 << 20

// Values of cuBLAS's and CUDA's enumerations (cublas_api.h, cublasLt.h,
// library_types.h).
const (
	ltComputeF32     = 68 // CUBLAS_COMPUTE_32F
	ltComputeF32TF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32
	ltComputeF64     = 70 // CUBLAS_COMPUTE_64F
	ltDataF32        = 0  // CUDA_R_32F
	ltDataF64        = 1  // CUDA_R_64F
	ltDataF16        = 2  // CUDA_R_16F
	ltDataBF16       = 14 // CUDA_R_16BF
	ltDataF8E4M3     = 28 // CUDA_R_8F_E4M3
	ltDataF8E5M2     = 29 // CUDA_R_8F_E5M2

	ltDescTransA   = 3  // CUBLASLT_MATMUL_DESC_TRANSA, int32
	ltDescTransB   = 4  // CUBLASLT_MATMUL_DESC_TRANSB, int32
	ltDescEpilogue = 7  // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32
	ltDescBias     = 8  // CUBLASLT_MATMUL_DESC_BIAS_POINTER, void*
	ltDescScaleA   = 17 // CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, void* (float32 on the device)
	ltDescScaleB   = 18 // CUBLASLT_MATMUL_DESC_B_SCALE_POINTER

	ltEpilogueDefault  = 1   // CUBLASLT_EPILOGUE_DEFAULT
	ltEpilogueRelu     = 2   // CUBLASLT_EPILOGUE_RELU
	ltEpilogueBias     = 4   // CUBLASLT_EPILOGUE_BIAS
	ltEpilogueReluBias = 6   // CUBLASLT_EPILOGUE_RELU_BIAS
	ltEpilogueBGradA   = 256 // CUBLASLT_EPILOGUE_BGRADA: op(A)'s sums over K to the bias pointer

	ltLayoutBatch  = 5 // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32
	ltLayoutStride = 6 // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64

	ltPrefWorkspace = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
)

// ltHeuristic is cublasLtMatmulHeuristicResult_t: the algorithm (64
// bytes), its workspace size, a status, the waves count, 16 reserved
// bytes.
type ltHeuristic struct {
	algo      [64]byte
	workspace uint64
	state     int32
	waves     float32
	_         [4]int32
}

// blasLt is cuBLASLt's entry points.
type blasLt struct {
	create, descCreate, descSet, layoutCreate, layoutSet uintptr
	prefCreate, prefSet, prefDestroy, heuristic, matmul  uintptr
}

// loadBlasLt opens the cuBLASLt beside cuBLAS (already mapped: cuBLAS
// needs it), or returns nil where it is absent, lacks an entry point, or
// EnvCublasLt turns it off.
func loadBlasLt(path string) *blasLt {
	if path == "" || os.Getenv(EnvCublasLt) == "0" {
		return nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil
	}
	l := &blasLt{}
	err = resolve(h, path, map[string]*uintptr{
		"cublasLtCreate": &l.create, "cublasLtMatmulDescCreate": &l.descCreate,
		"cublasLtMatmulDescSetAttribute": &l.descSet, "cublasLtMatrixLayoutCreate": &l.layoutCreate,
		"cublasLtMatrixLayoutSetAttribute": &l.layoutSet, "cublasLtMatmulPreferenceCreate": &l.prefCreate,
		"cublasLtMatmulPreferenceSetAttribute": &l.prefSet, "cublasLtMatmulPreferenceDestroy": &l.prefDestroy,
		"cublasLtMatmulAlgoGetHeuristic": &l.heuristic, "cublasLtMatmul": &l.matmul,
	}, true)
	if err != nil {
		return nil
	}
	return l
}

// ltPlan is what cublasLtMatmul needs for one GEMM shape: its
// descriptors and the algorithm the heuristics chose (none: ok false).
type ltPlan struct {
	ok               bool
	desc, la, lb, lc uintptr
	algo             ltHeuristic
}

// ltKey is the shape of g: g without its pointers (a bias as 1).
func ltKey(g cu.Gemm) cu.Gemm {
	if g.Bias != 0 {
		g.Bias = 1
	}
	if g.BiasGradA != 0 {
		g.BiasGradA = 1
	}
	g.A, g.B, g.C = 0, 0, 0
	if g.FP8() {
		g.ScaleA, g.ScaleB = 1, 1
	}
	return g
}

// ltData is the cudaDataType_t of t.
func ltData(t cu.GemmType) int32 {
	return [...]int32{ltDataF32, ltDataF64, ltDataBF16, ltDataF16, ltDataF8E4M3, ltDataF8E5M2}[t]
}

// ltUsable reports whether g can go through cuBLASLt: a single matrix, or
// a batch in which every operand has its own matrices (a shared operand's
// stride of 0 stays with cuBLAS's batched call, which documents it).
func ltUsable(g cu.Gemm) bool {
	return g.Batch == 1 || (g.StrideA != 0 && g.StrideB != 0 && g.StrideC != 0)
}

// ltGemm queues g through cuBLASLt. It returns handled false where
// cuBLASLt is absent, the GEMM does not suit it or its heuristics found no
// algorithm, having queued nothing.
func (c *Context) ltGemm(s cu.Stream, g cu.Gemm) (handled bool, err error) {
	l := c.d.blasLt
	if l == nil || !ltUsable(g) {
		return false, nil
	}
	p, err := c.ltPlanOf(g)
	if err != nil || !p.ok {
		return false, err
	}
	// The pointers the descriptor holds, set for this call.
	for _, ptr := range []struct {
		attr int
		p    cu.Ptr
	}{{ltDescBias, g.Bias | g.BiasGradA}, {ltDescScaleA, g.ScaleA}, {ltDescScaleB, g.ScaleB}} {
		if ptr.p == 0 {
			continue
		}
		v := uintptr(ptr.p)
		if err := c.d.blas.call("cublasLtMatmulDescSetAttribute", l.descSet, p.desc, uintptr(ptr.attr), uintptr(unsafe.Pointer(&v)), 8); err != nil {
			return true, err
		}
	}
	alpha, beta := scalars(g)
	return true, c.d.blas.call("cublasLtMatmul", l.matmul, c.ltH, p.desc, uintptr(alpha),
		uintptr(g.A), p.la, uintptr(g.B), p.lb, uintptr(beta), uintptr(g.C), p.lc, uintptr(g.C), p.lc,
		uintptr(unsafe.Pointer(&p.algo.algo)), uintptr(c.ltWork), uintptr(p.algo.workspace), uintptr(s))
}

// scalars returns alpha and beta in g's scale type, on the heap.
func scalars(g cu.Gemm) (alpha, beta unsafe.Pointer) {
	if g.Type == cu.Float64 {
		a, b := g.Alpha, g.Beta
		return unsafe.Pointer(&a), unsafe.Pointer(&b)
	}
	a, b := float32(g.Alpha), float32(g.Beta)
	return unsafe.Pointer(&a), unsafe.Pointer(&b)
}

// ltPlanOf returns g's plan, making it (and the handle and workspace, on
// first use) where the context has none for g's shape.
func (c *Context) ltPlanOf(g cu.Gemm) (*ltPlan, error) {
	key := ltKey(g)
	if p, ok := c.ltPlans[key]; ok {
		return p, nil
	}
	l, b := c.d.blasLt, c.d.blas
	if c.ltH == 0 {
		if err := b.call("cublasLtCreate", l.create, uintptr(unsafe.Pointer(&c.ltH))); err != nil {
			return nil, err
		}
		w, err := c.MemAlloc(ltWorkspace, 0) // not stream-ordered: captured graphs use it
		if err != nil {
			return nil, err
		}
		c.ltWork, c.ltPlans = w, map[cu.Gemm]*ltPlan{}
	}
	p := &ltPlan{}
	// The matrices' types, and the compute and scale types: float32 for
	// the half and 8-bit types (tensor cores summing in float32), float64
	// alone for float64.
	compute, scaleType := int32(ltComputeF32), int32(ltDataF32)
	switch {
	case g.Type == cu.Float64:
		compute, scaleType = ltComputeF64, ltDataF64
	case g.TF32:
		compute = ltComputeF32TF32
	}
	set := func(fn, obj uintptr, attr int, v unsafe.Pointer, size int) error {
		return b.call("cublasLt set attribute", fn, obj, uintptr(attr), uintptr(v), uintptr(size))
	}
	if err := b.call("cublasLtMatmulDescCreate", l.descCreate, uintptr(unsafe.Pointer(&p.desc)), uintptr(compute), uintptr(scaleType)); err != nil {
		return nil, err
	}
	transA, transB := int32(flag(g.TransA)), int32(flag(g.TransB))
	epilogue := uint32(ltEpilogueDefault)
	switch {
	case g.Bias != 0 && g.Relu:
		epilogue = ltEpilogueReluBias
	case g.Bias != 0:
		epilogue = ltEpilogueBias
	case g.Relu:
		epilogue = ltEpilogueRelu
	case g.BiasGradA != 0:
		epilogue = ltEpilogueBGradA
	}
	for _, a := range []struct {
		attr int
		v    unsafe.Pointer
		size int
	}{{ltDescTransA, unsafe.Pointer(&transA), 4}, {ltDescTransB, unsafe.Pointer(&transB), 4}, {ltDescEpilogue, unsafe.Pointer(&epilogue), 4}} {
		if err := set(l.descSet, p.desc, a.attr, a.v, a.size); err != nil {
			return nil, err
		}
	}
	rowsA, colsA, rowsB, colsB := g.M, g.K, g.K, g.N
	if g.TransA {
		rowsA, colsA = g.K, g.M
	}
	if g.TransB {
		rowsB, colsB = g.N, g.K
	}
	for _, m := range []struct {
		out            *uintptr
		data           int32
		rows, cols, ld int
		stride         int64
	}{{&p.la, ltData(g.TypeA()), rowsA, colsA, g.LDA, g.StrideA}, {&p.lb, ltData(g.TypeB()), rowsB, colsB, g.LDB, g.StrideB}, {&p.lc, ltData(g.Type), g.M, g.N, g.LDC, g.StrideC}} {
		if err := b.call("cublasLtMatrixLayoutCreate", l.layoutCreate, uintptr(unsafe.Pointer(m.out)), uintptr(m.data), uintptr(m.rows), uintptr(m.cols), uintptr(m.ld)); err != nil {
			return nil, err
		}
		if g.Batch > 1 {
			count, stride := int32(g.Batch), m.stride
			if err := set(l.layoutSet, *m.out, ltLayoutBatch, unsafe.Pointer(&count), 4); err != nil {
				return nil, err
			}
			if err := set(l.layoutSet, *m.out, ltLayoutStride, unsafe.Pointer(&stride), 8); err != nil {
				return nil, err
			}
		}
	}
	var pref uintptr
	if err := b.call("cublasLtMatmulPreferenceCreate", l.prefCreate, uintptr(unsafe.Pointer(&pref))); err != nil {
		return nil, err
	}
	defer b.call("cublasLtMatmulPreferenceDestroy", l.prefDestroy, pref)
	work := uint64(ltWorkspace)
	if err := set(l.prefSet, pref, ltPrefWorkspace, unsafe.Pointer(&work), 8); err != nil {
		return nil, err
	}
	var found int32
	err := b.call("cublasLtMatmulAlgoGetHeuristic", l.heuristic, c.ltH, p.desc, p.la, p.lb, p.lc, p.lc, pref, 1,
		uintptr(unsafe.Pointer(&p.algo)), uintptr(unsafe.Pointer(&found)))
	// No algorithm (CUBLAS_STATUS_NOT_SUPPORTED, or none returned): the
	// shape stays with cuBLAS, the plan remembering it.
	p.ok = err == nil && found > 0 && p.algo.state == 0 && p.algo.workspace <= ltWorkspace
	c.ltPlans[key] = p
	return p, nil
}

func flag(t bool) int {
	if t {
		return 1
	}
	return 0
}
