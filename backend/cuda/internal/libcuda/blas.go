//go:build linux && (amd64 || arm64)

package libcuda

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// blas is cuBLAS's entry points.
type blas struct {
	files                                                      []string
	ltFile                                                     string // cuBLASLt's path or name
	create, setStream, setMathMode, sgemmBatched, dgemmBatched uintptr
	getProperty                                                uintptr
	statusName                                                 func(status int32) string
}

// loadBlas opens cuBLAS (newest first), with its cuBLASLt from the same
// directory opened before it so the dependency resolves there.
func loadBlas(dirs []string) (*blas, error) {
	h, file, err := open("cuBLAS (libcublas.so.13 or .12)", candidates(os.Getenv(EnvCublas), cublasNames, dirs))
	if err != nil {
		return nil, err
	}
	b := &blas{files: []string{file}}
	if lt := cublasLtName[filepath.Base(file)]; lt != "" {
		b.ltFile = lt // mapped already, as cuBLAS's dependency
		if p := filepath.Join(filepath.Dir(file), lt); filepath.IsAbs(p) {
			if _, err := os.Stat(p); err == nil {
				b.files = append(b.files, p)
				b.ltFile = p
			}
		}
	}
	err = resolve(h, file, map[string]*uintptr{
		"cublasCreate_v2": &b.create, "cublasSetStream_v2": &b.setStream, "cublasSetMathMode": &b.setMathMode,
		"cublasSgemmStridedBatched": &b.sgemmBatched, "cublasDgemmStridedBatched": &b.dgemmBatched,
		"cublasGetProperty": &b.getProperty,
	}, true)
	if err != nil {
		return nil, err
	}
	if sym, err := purego.Dlsym(h, "cublasGetStatusName"); err == nil && sym != 0 {
		purego.RegisterFunc(&b.statusName, sym)
	}
	return b, nil
}

// call calls a cuBLAS function and turns its status into an error.
//
//go:uintptrescapes
func (b *blas) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if r == 0 {
		return nil
	}
	e := &cu.Error{Call: name, Code: int(r), Name: fmt.Sprintf("CUBLAS_STATUS %d", r)}
	if b.statusName != nil {
		e.Name = b.statusName(int32(r))
	}
	return e
}

// Version is cuBLAS's major, minor and patch version.
func (b *blas) version() string {
	var v [3]int32
	for i := range v {
		_ = b.call("cublasGetProperty", b.getProperty, uintptr(i), uintptr(unsafe.Pointer(&v[i])))
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
}

// cuBLAS math modes (cublasMath_t).
const (
	mathDefault = 0
	mathTF32    = 3
)

// Gemm queues a GEMM on s: through cuBLASLt where it is loaded and has an
// algorithm for g's shape, else as cuBLAS's strided batched call, creating
// the context's handles on first use (the context is current: Gemm runs
// inside Do).
func (c *Context) Gemm(s cu.Stream, g cu.Gemm) error {
	b := c.d.blas
	if b == nil {
		return fmt.Errorf("%w: %v", cu.ErrNoBLAS, c.d.blasE)
	}
	if err := g.CheckFP8(); err != nil {
		return err
	}
	if handled, err := c.ltGemm(s, g); handled || err != nil {
		return err
	}
	if g.FP8() {
		return fmt.Errorf("%w: a %dx%dx%d GEMM of 8-bit floats needs cuBLASLt and an algorithm for it (Hopper or Ada)", cu.ErrGemmType, g.M, g.N, g.K)
	}
	if g.Type == cu.BFloat16 || g.Type == cu.Float16 || g.In != 0 {
		return fmt.Errorf("%w: a %dx%dx%d GEMM of 16-bit floats needs cuBLASLt and an unshared batch", cu.ErrGemmType, g.M, g.N, g.K)
	}
	if g.Epilogue() {
		why := "cuBLASLt is not loaded"
		if c.d.blasLt != nil {
			why = "cuBLASLt has no algorithm for it"
		}
		return fmt.Errorf("%w: %dx%dx%d GEMM: %s", cu.ErrNoEpilogue, g.M, g.N, g.K, why)
	}
	if c.blasH == 0 {
		if err := b.call("cublasCreate_v2", b.create, uintptr(unsafe.Pointer(&c.blasH))); err != nil {
			return err
		}
		c.tf32 = false
	}
	if err := b.call("cublasSetStream_v2", b.setStream, c.blasH, uintptr(s)); err != nil {
		return err
	}
	if g.TF32 != c.tf32 {
		mode := mathDefault
		if g.TF32 {
			mode = mathTF32
		}
		if err := b.call("cublasSetMathMode", b.setMathMode, c.blasH, uintptr(mode)); err != nil {
			return err
		}
		c.tf32 = g.TF32
	}
	op := func(t bool) uintptr { return uintptr(flag(t)) } // CUBLAS_OP_T or _N
	switch g.Type {
	case cu.Float32:
		alpha, beta := float32(g.Alpha), float32(g.Beta)
		return b.call("cublasSgemmStridedBatched", b.sgemmBatched, c.blasH, op(g.TransA), op(g.TransB),
			uintptr(g.M), uintptr(g.N), uintptr(g.K), uintptr(unsafe.Pointer(&alpha)),
			uintptr(g.A), uintptr(g.LDA), uintptr(g.StrideA), uintptr(g.B), uintptr(g.LDB), uintptr(g.StrideB),
			uintptr(unsafe.Pointer(&beta)), uintptr(g.C), uintptr(g.LDC), uintptr(g.StrideC), uintptr(g.Batch))
	case cu.Float64:
		alpha, beta := g.Alpha, g.Beta
		return b.call("cublasDgemmStridedBatched", b.dgemmBatched, c.blasH, op(g.TransA), op(g.TransB),
			uintptr(g.M), uintptr(g.N), uintptr(g.K), uintptr(unsafe.Pointer(&alpha)),
			uintptr(g.A), uintptr(g.LDA), uintptr(g.StrideA), uintptr(g.B), uintptr(g.LDB), uintptr(g.StrideB),
			uintptr(unsafe.Pointer(&beta)), uintptr(g.C), uintptr(g.LDC), uintptr(g.StrideC), uintptr(g.Batch))
	}
	return fmt.Errorf("libcuda: GEMM of element type %d", g.Type)
}
