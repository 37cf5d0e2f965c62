// Package kernels builds the CUDA backend's kernels as PTX (package ptx),
// one module per family, and says how each is launched: the parameter
// order and the geometry block the backend packs. ptxgen writes the
// modules to backend/cuda/ptx (committed); the backend embeds them.
package kernels

import (
	"fmt"
	"sort"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// DType is an element type as kernels name it.
type DType string

// The element types: the tensor dtypes, bool stored as a byte.
const (
	F32  DType = "f32"
	F64  DType = "f64"
	S32  DType = "s32"
	S64  DType = "s64"
	U8   DType = "u8"
	Bool DType = "b"
)

// Numeric and All list the dtypes.
var (
	Floats  = []DType{F32, F64}
	Numeric = []DType{F32, F64, S32, S64, U8}
	All     = []DType{F32, F64, S32, S64, U8, Bool}
)

// mem is the PTX type of the dtype in memory.
func (d DType) mem() ptx.Type {
	switch d {
	case F32:
		return ptx.F32
	case F64:
		return ptx.F64
	case S32:
		return ptx.S32
	case S64:
		return ptx.S64
	}
	return ptx.U8
}

// reg is the PTX type the dtype is computed in (bytes in 32-bit registers).
func (d DType) reg() ptx.Type {
	switch d {
	case U8, Bool:
		return ptx.U32
	}
	return d.mem()
}

func (d DType) float() bool { return d == F32 || d == F64 }

// Size is the dtype's size in bytes.
func (d DType) Size() int { return d.mem().Size() }

// Family is one module of kernels.
type Family struct {
	Name    string
	Kernels []*ptx.Kernel
}

// Families returns every family, by name.
func Families() []Family {
	fams := []Family{
		{Name: "copy", Kernels: copyKernels()},
		{Name: "binary", Kernels: binaryKernels()},
		{Name: "compare", Kernels: compareKernels()},
		{Name: "unary", Kernels: unaryKernels()},
		{Name: "cast", Kernels: castKernels()},
		{Name: "reduce", Kernels: reduceKernels()},
		{Name: "softmax", Kernels: softmaxKernels()},
		{Name: "index", Kernels: indexKernels()},
		{Name: "along", Kernels: alongKernels()},
		{Name: "matmul", Kernels: matmulKernels()},
		{Name: "window", Kernels: windowKernels()},
		{Name: "random", Kernels: randomKernels()},
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	return fams
}

// Module is a family's PTX text.
func (f Family) Module() string {
	m := ptx.NewModule()
	for _, k := range f.Kernels {
		m.Add(k)
	}
	return m.String()
}

// Geometry is the layout of the byte-array parameter "g" that kernels
// reading strided or broadcast operands take: a rank, the shape (at most
// MaxRank dimensions), up to three sets of element strides and three
// element offsets, each an int64.
const (
	MaxRank    = 8
	geomRank   = 0
	geomShape  = 8
	geomStride = geomShape + 8*MaxRank
	geomOffset = geomStride + 3*8*MaxRank
	// GeometrySize is the parameter's size in bytes.
	GeometrySize = geomOffset + 3*8
)

// Geometry fills the parameter: shape, strides per operand (in elements;
// 0 broadcasts), and offsets (nil for none).
func Geometry(shape []int, strides [][]int, offsets []int) []byte {
	if len(shape) > MaxRank || len(strides) > 3 {
		panic(fmt.Sprintf("kernels: geometry of rank %d with %d operands", len(shape), len(strides)))
	}
	b := make([]byte, GeometrySize)
	put := func(off int, v int) {
		for i := range 8 {
			b[off+i] = byte(uint64(int64(v)) >> (8 * i))
		}
	}
	put(geomRank, len(shape))
	for d, n := range shape {
		put(geomShape+8*d, n)
	}
	for s, st := range strides {
		for d, v := range st {
			put(geomStride+8*(MaxRank*s+d), v)
		}
	}
	for s, o := range offsets {
		put(geomOffset+8*s, o)
	}
	return b
}

// offsets writes, for the element of flat row-major index i of the
// geometry's shape, the element offset of each of n operands (stride set
// s and offset s).
func offsets(k *ptx.Kernel, g string, i ptx.Reg, n int) []ptx.Reg {
	rank := k.LoadField(g, geomRank)
	offs := make([]ptx.Reg, n)
	for s := range offs {
		offs[s] = k.LoadField(g, geomOffset+8*s)
	}
	rem := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, %s", rem, i)
	p := k.Reg(ptx.Pred)
	for d := MaxRank - 1; d >= 0; d-- {
		skip := k.Label("dim")
		k.Op("setp.le.s64 %s, %s, %d", p, rank, d)
		k.Op("@%s bra %s", p, skip)
		size := k.LoadField(g, geomShape+8*d)
		c := k.Reg(ptx.U64)
		k.Op("rem.u64 %s, %s, %s", c, rem, size)
		k.Op("div.u64 %s, %s, %s", rem, rem, size)
		for s := range offs {
			st := k.LoadField(g, geomStride+8*(MaxRank*s+d))
			k.Op("mad.lo.s64 %s, %s, %s, %s", offs[s], c, st, offs[s])
		}
		k.Place(skip)
	}
	return offs
}

// Name is a kernel's name: its family's op, the dtypes, a variant.
func Name(parts ...string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "_"
		}
		s += p
	}
	return s
}
