// Package kernels builds the CUDA backend's kernels as PTX (package ptx),
// one module per family, and says how each is launched: the parameter
// order and the geometry block the backend packs. ptxgen writes the
// modules to backend/cuda/ptx (committed); the backend embeds them.
package kernels

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"

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
	// The half types (cast.go's kernels take them; other ops Cast to F32).
	BF16 DType = "bf16"
	F16  DType = "f16"
	// The 8-bit floats (cast.go's kernels alone take them).
	F8E4M3 DType = "f8e4m3"
	F8E5M2 DType = "f8e5m2"
)

// Numeric and All list the dtypes.
var (
	Floats  = []DType{F32, F64}
	Numeric = []DType{F32, F64, S32, S64, U8}
	All     = []DType{F32, F64, S32, S64, U8, Bool}
	Halves  = []DType{BF16, F16}
	Floats8 = []DType{F8E4M3, F8E5M2}
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
	case BF16, F16:
		return ptx.U16
	}
	return ptx.U8
}

// reg is the PTX type the dtype is computed in (bytes in 32-bit registers).
func (d DType) reg() ptx.Type {
	switch d {
	case U8, Bool, BF16, F16, F8E4M3, F8E5M2:
		return ptx.U32
	}
	return d.mem()
}

func (d DType) float() bool { return d == F32 || d == F64 }

// Half reports whether d is BF16 or F16.
func (d DType) Half() bool { return d == BF16 || d == F16 }

// narrow reports whether d is a float narrower than float32: the half
// and 8-bit floats.
func (d DType) narrow() bool { return d.Half() || d == F8E4M3 || d == F8E5M2 }

// Compute is the dtype d's values are computed in: float32 for the half
// types (loaded into 32-bit registers, widened, computed, rounded once on
// the way out: toCompute and fromCompute), d otherwise.
func (d DType) Compute() DType {
	if d.Half() {
		return F32
	}
	return d
}

// toCompute is x, a value of d as loaded, in d's compute dtype.
func toCompute(k *ptx.Kernel, d DType, x ptx.Reg) ptx.Reg {
	if d.Half() {
		return halfToF32(k, d, x)
	}
	return x
}

// fromCompute is r, a value of res's compute dtype, as res stores it
// (rounded once to a half type).
func fromCompute(k *ptx.Kernel, res DType, r ptx.Reg) ptx.Reg {
	if res.Half() {
		return f32ToHalf(k, res, r)
	}
	return r
}

// Size is the dtype's size in bytes.
func (d DType) Size() int { return d.mem().Size() }

// Family is one module of kernels.
type Family struct {
	Name    string
	Kernels []*ptx.Kernel
	// Declares are its module-level declarations: the device functions
	// its kernels call, a dynamic shared array.
	Declares []string
	// Target is the module's PTX target where it needs a newer one than
	// ptx.Target (the device must have it: TCTarget, compute capability
	// 8.0, for attention_tc).
	Target string
}

// Families returns every family, by name.
func Families() []Family {
	fams := []Family{
		{Name: "copy", Kernels: copyKernels()},
		{Name: "binary", Kernels: binaryKernels()},
		{Name: "single", Kernels: singleKernels()},
		{Name: "compare", Kernels: compareKernels()},
		{Name: "unary", Kernels: unaryKernels()},
		{Name: "cast", Kernels: castKernels()},
		{Name: "reduce", Kernels: reduceKernels()},
		{Name: "softmax", Kernels: softmaxKernels()},
		{Name: "norm", Kernels: normKernels()},
		{Name: "attention", Kernels: attentionKernels()},
		{Name: "attention_tc", Kernels: flashTCKernels(), Target: TCTarget, Declares: FlashTCDeclares},
		{Name: "rnn", Kernels: slices.Concat(rnnCellKernels(), rnnSequenceKernels())},
		{Name: "index", Kernels: indexKernels()},
		{Name: "along", Kernels: alongKernels()},
		{Name: "linalg", Kernels: linalgKernels()},
		{Name: "matmul", Kernels: matmulKernels()},
		{Name: "window", Kernels: windowKernels()},
		{Name: "depthwise", Kernels: depthwiseKernels()},
		{Name: "optim", Kernels: optimKernels()},
		{Name: "pool", Kernels: poolKernels()},
		{Name: "random", Kernels: randomKernels()},
		{Name: "graph", Kernels: graphKernels(), Declares: []string{setConditionalDecl}},
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	return fams
}

// Module is a family's PTX text.
func (f Family) Module() string {
	m := ptx.NewModule()
	if f.Target != "" {
		m = ptx.NewModuleFor(f.Target)
	}
	for _, d := range f.Declares {
		m.Declare(d)
	}
	for _, k := range f.Kernels {
		m.Add(k)
	}
	return m.String()
}

// Geometry is the layout of the byte-array parameter "g" that kernels
// reading strided or broadcast operands take. Geometry merges what can be
// merged first (dimensions of size 1 go; a dimension joins its inner
// neighbour where every operand steps over both as over one), then stores
// the rank, whether the narrow path applies (fewer than 2^31 elements:
// coordinates in 32 bits, divided by multiplying with a constant), the
// inner dimensions innermost first (size, and the constant and shift that
// divide by it), each operand's strides along them, its stride along the
// outermost dimension, and its element offset. The outermost coordinate
// is what remains after the inner ones, so it is never divided.
const (
	MaxRank      = 8
	geomRank     = 0
	geomNarrow   = 8
	geomDims     = 16                           // per inner dimension: size u64, magic u32, shift u32
	geomStride   = geomDims + 16*(MaxRank-1)    // per operand, per inner dimension: u64
	geomOuter    = geomStride + 3*8*(MaxRank-1) // per operand: the outermost dimension's stride
	geomOffset   = geomOuter + 3*8              // per operand: u64
	GeometrySize = geomOffset + 3*8             // the parameter's size in bytes
)

// Geometry fills the parameter: shape, strides per operand (in elements;
// 0 broadcasts), and offsets (nil for none).
func Geometry(shape []int, strides [][]int, offsets []int) []byte {
	if len(shape) > MaxRank || len(strides) > 3 {
		panic(fmt.Sprintf("kernels: geometry of rank %d with %d operands", len(shape), len(strides)))
	}
	shape, strides = MergeDims(shape, strides)
	b := make([]byte, GeometrySize)
	put := func(off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
	n := 1
	for _, s := range shape {
		n *= s
	}
	put(geomRank, uint64(len(shape)))
	if n < narrowLimit {
		put(geomNarrow, 1)
	}
	rank := len(shape)
	for j := 0; j < rank-1; j++ { // inner dimension j is shape[rank-1-j]
		size := shape[rank-1-j]
		put(geomDims+16*j, uint64(size))
		if n < narrowLimit {
			magic, shift := DivMagic(uint32(size))
			binary.LittleEndian.PutUint32(b[geomDims+16*j+8:], magic)
			binary.LittleEndian.PutUint32(b[geomDims+16*j+12:], shift)
		}
		for s, st := range strides {
			put(geomStride+8*((MaxRank-1)*s+j), uint64(int64(st[rank-1-j])))
		}
	}
	if rank > 0 {
		for s, st := range strides {
			put(geomOuter+8*s, uint64(int64(st[0])))
		}
	}
	for s, o := range offsets {
		put(geomOffset+8*s, uint64(int64(o)))
	}
	return b
}

// MergeDims drops the dimensions of size 1 and merges each dimension with
// its inner neighbour where every operand's stride over it is the
// neighbour's stride times the neighbour's size.
func MergeDims(shape []int, strides [][]int) ([]int, [][]int) {
	outShape := []int{}
	outStrides := make([][]int, len(strides))
	for d, size := range shape {
		if size == 1 {
			continue
		}
		last := len(outShape) - 1
		merge := last >= 0
		for s := range strides {
			if merge && outStrides[s][last] != strides[s][d]*size {
				merge = false
			}
		}
		if merge {
			outShape[last] *= size
			for s := range strides {
				outStrides[s][last] = strides[s][d]
			}
			continue
		}
		outShape = append(outShape, size)
		for s := range strides {
			outStrides[s] = append(outStrides[s], strides[s][d])
		}
	}
	return outShape, outStrides
}

// offsets writes, for the element of flat row-major index i of the
// geometry's shape, the element offset of each of n operands (stride set
// s and offset s): on the narrow path with 32-bit coordinates divided by
// DivMagic's constants, else with 64-bit division.
func offsets(k *ptx.Kernel, g string, i ptx.Reg, n int) []ptx.Reg {
	rank := k.LoadField(g, geomRank)
	offs := make([]ptx.Reg, n)
	for s := range offs {
		offs[s] = k.LoadField(g, geomOffset+8*s)
	}
	narrow, wide, outer := k.Label("narrow"), k.Label("wide"), k.Label("outer")
	p := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", p, k.LoadField(g, geomNarrow))
	k.Op("@%s bra %s", p, narrow)
	// The wide path: 64-bit coordinates and divisions.
	rem := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, %s", rem, i)
	for j := 0; j < MaxRank-1; j++ {
		k.Op("setp.le.u64 %s, %s, %d", p, rank, j+1)
		k.Op("@%s bra %s", p, wide)
		size := k.LoadField(g, geomDims+16*j)
		c := k.Reg(ptx.U64)
		k.Op("rem.u64 %s, %s, %s", c, rem, size)
		k.Op("div.u64 %s, %s, %s", rem, rem, size)
		addStrides(k, g, offs, j, c)
	}
	k.Place(wide)
	addOuter(k, g, offs, rem)
	k.Op("bra.uni %s", outer)
	// The narrow path: 32-bit coordinates, each division a multiply-high,
	// an add and a shift.
	k.Place(narrow)
	rem32 := k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", rem32, i)
	done := k.Label("dims")
	for j := 0; j < MaxRank-1; j++ {
		k.Op("setp.le.u64 %s, %s, %d", p, rank, j+1)
		k.Op("@%s bra %s", p, done)
		size := k.LoadField32(g, geomDims+16*j)
		q, c := divide32(k, rem32, size, k.LoadField32(g, geomDims+16*j+8), k.LoadField32(g, geomDims+16*j+12))
		c64 := k.Reg(ptx.U64)
		k.Op("mov.u32 %s, %s", rem32, q)
		k.Op("cvt.u64.u32 %s, %s", c64, c)
		addStrides(k, g, offs, j, c64)
	}
	k.Place(done)
	rem64 := k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", rem64, rem32)
	addOuter(k, g, offs, rem64)
	k.Place(outer)
	return offs
}

// addStrides adds coordinate c (64-bit) of inner dimension j times each
// operand's stride to its offset.
func addStrides(k *ptx.Kernel, g string, offs []ptx.Reg, j int, c ptx.Reg) {
	for s := range offs {
		st := k.LoadField(g, geomStride+8*((MaxRank-1)*s+j))
		k.Op("mad.lo.s64 %s, %s, %s, %s", offs[s], c, st, offs[s])
	}
}

// addOuter adds the outermost coordinate c (64-bit) times each operand's
// stride to its offset.
func addOuter(k *ptx.Kernel, g string, offs []ptx.Reg, c ptx.Reg) {
	for s := range offs {
		st := k.LoadField(g, geomOuter+8*s)
		k.Op("mad.lo.s64 %s, %s, %s, %s", offs[s], c, st, offs[s])
	}
}

// Name is a kernel's name: its family's op, the dtypes, a variant, joined
// by "_". Names of up to five parts are built once and cached, so that a
// launch builds no string.
func Name(parts ...string) string {
	if len(parts) > len(nameKey{}.parts) {
		return joinName(parts)
	}
	k := nameKey{n: len(parts)}
	copy(k.parts[:], parts)
	names.RLock()
	s, ok := names.m[k]
	names.RUnlock()
	if ok {
		return s
	}
	s = joinName(parts)
	names.Lock()
	names.m[k] = s
	names.Unlock()
	return s
}

// nameKey is Name's parts, as its cache keys them.
type nameKey struct {
	n     int
	parts [5]string
}

var names = struct {
	sync.RWMutex
	m map[nameKey]string
}{m: map[nameKey]string{}}

func joinName(parts []string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "_"
		}
		s += p
	}
	return s
}
