package emu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/tensor"
)

// The reference GEMM of the emulated cuBLAS: column-major, as cuBLAS is,
// with its argument checks (leading dimensions at least the rows stored,
// every matrix inside an allocation).

func checkGemm(g cu.Gemm) error {
	if g.M < 0 || g.N < 0 || g.K < 0 || g.Batch < 1 {
		return fmt.Errorf("sizes m=%d n=%d k=%d batch=%d", g.M, g.N, g.K, g.Batch)
	}
	rowsA, rowsB := g.M, g.K // rows of A and B as stored
	if g.TransA {
		rowsA = g.K
	}
	if g.TransB {
		rowsB = g.N
	}
	switch {
	case g.LDA < max(1, rowsA):
		return fmt.Errorf("lda %d < %d", g.LDA, max(1, rowsA))
	case g.LDB < max(1, rowsB):
		return fmt.Errorf("ldb %d < %d", g.LDB, max(1, rowsB))
	case g.LDC < max(1, g.M):
		return fmt.Errorf("ldc %d < %d", g.LDC, max(1, g.M))
	case g.Type > cu.Float16:
		return fmt.Errorf("element type %d", g.Type)
	case g.FP8() != (g.FP8B != 0):
		return fmt.Errorf("one FP8 operand type of two")
	case g.TF32 && g.Type != cu.Float32:
		return fmt.Errorf("TF32 applies to float32 GEMMs only")
	}
	return nil
}

// matrix is a column-major matrix of rows x cols with leading dimension
// ld at addr in device memory.
type matrix struct {
	data       []byte
	ld, esize  int
	rows, cols int
	t          cu.GemmType
}

func view(mem *memory, addr uint64, rows, cols, ld int, t cu.GemmType) (matrix, error) {
	esize := t.Size()
	m := matrix{ld: ld, esize: esize, rows: rows, cols: cols, t: t}
	if rows == 0 || cols == 0 {
		return m, nil
	}
	n := ((cols-1)*ld + rows) * esize
	b, err := mem.slice(addr, n)
	if err != nil {
		return m, err
	}
	m.data = b
	return m, nil
}

func (m matrix) at(i, j int) float64 { return readElem(m.data, j*m.ld+i, m.t) }

func (m matrix) set(i, j int, v float64) { writeElem(m.data, j*m.ld+i, m.t, v) }

// readElem is element i of raw, of type t, as a float64 (exactly).
func readElem(raw []byte, i int, t cu.GemmType) float64 {
	o := i * t.Size()
	switch t {
	case cu.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[o:])))
	case cu.BFloat16:
		return float64(tensor.BF16(binary.LittleEndian.Uint16(raw[o:])).Float32())
	case cu.Float16:
		return float64(tensor.F16(binary.LittleEndian.Uint16(raw[o:])).Float32())
	case cu.Float8E4M3:
		return float64(tensor.F8E4M3(raw[o]).Float32())
	case cu.Float8E5M2:
		return float64(tensor.F8E5M2(raw[o]).Float32())
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(raw[o:]))
}

// writeElem sets element i of raw, of type t, to v rounded to t (the
// half types through float32, as the device's conversions go).
func writeElem(raw []byte, i int, t cu.GemmType, v float64) {
	o := i * t.Size()
	switch t {
	case cu.Float32:
		binary.LittleEndian.PutUint32(raw[o:], math.Float32bits(float32(v)))
	case cu.BFloat16:
		binary.LittleEndian.PutUint16(raw[o:], uint16(tensor.ToBF16(float32(v))))
	case cu.Float16:
		binary.LittleEndian.PutUint16(raw[o:], uint16(tensor.ToF16(float32(v))))
	default:
		binary.LittleEndian.PutUint64(raw[o:], math.Float64bits(v))
	}
}

// gemm computes C = alpha op(A) op(B) + beta C for each batch, summing in
// float64 (within the rounding cuBLAS's own orders give), then the
// epilogue as cuBLASLt's: the bias (M elements) added to each column and
// Relu, on the product in float32 (float64 for Float64 GEMMs); C is
// rounded to its type once. With beta 0, C is not read (cuBLAS's rule:
// NaN in C does not propagate). A bias gradient (BGRADA) is op(A)'s rows
// summed over K in float64, rounded once. An FP8 GEMM reads its operands as their
// 8-bit types and multiplies alpha by its two scales (in float32, as
// cuBLASLt's scale type).
func gemm(mem *memory, g cu.Gemm) error {
	esize, sizeA, sizeB := g.Type.Size(), g.TypeA().Size(), g.TypeB().Size()
	if g.FP8() {
		var scales [2]float32
		for i, p := range []cu.Ptr{g.ScaleA, g.ScaleB} {
			raw, err := mem.slice(uint64(p), 4)
			if err != nil {
				return fmt.Errorf("scale of %c: %v", "AB"[i], err)
			}
			scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw))
		}
		g.Alpha = float64(float32(g.Alpha) * scales[0] * scales[1])
	}
	rowsA, colsA := g.M, g.K
	if g.TransA {
		rowsA, colsA = g.K, g.M
	}
	rowsB, colsB := g.K, g.N
	if g.TransB {
		rowsB, colsB = g.N, g.K
	}
	if g.BiasGradA != 0 && (g.Batch != 1 || g.Bias != 0 || g.Relu) {
		return fmt.Errorf("%w: a bias gradient takes a single matrix and no other epilogue", cu.ErrNoEpilogue)
	}
	var bias matrix
	if g.Bias != 0 {
		var err error
		if bias, err = view(mem, uint64(g.Bias), g.M, 1, max(g.M, 1), g.Type); err != nil {
			return fmt.Errorf("bias: %v", err)
		}
	}
	for b := 0; b < g.Batch; b++ {
		a, err := view(mem, uint64(g.A)+uint64(int64(b)*g.StrideA*int64(sizeA)), rowsA, colsA, g.LDA, g.TypeA())
		if err != nil {
			return fmt.Errorf("A of batch %d: %v", b, err)
		}
		bm, err := view(mem, uint64(g.B)+uint64(int64(b)*g.StrideB*int64(sizeB)), rowsB, colsB, g.LDB, g.TypeB())
		if err != nil {
			return fmt.Errorf("B of batch %d: %v", b, err)
		}
		c, err := view(mem, uint64(g.C)+uint64(int64(b)*g.StrideC*int64(esize)), g.M, g.N, g.LDC, g.Type)
		if err != nil {
			return fmt.Errorf("C of batch %d: %v", b, err)
		}
		for i := 0; i < g.M; i++ {
			for j := 0; j < g.N; j++ {
				s := 0.0
				for p := 0; p < g.K; p++ {
					var av, bv float64
					if g.TransA {
						av = a.at(p, i)
					} else {
						av = a.at(i, p)
					}
					if g.TransB {
						bv = bm.at(j, p)
					} else {
						bv = bm.at(p, j)
					}
					if g.TF32 {
						av, bv = tf32(av), tf32(bv)
					}
					s += av * bv
				}
				v := g.Alpha * s
				if g.Beta != 0 {
					v += g.Beta * c.at(i, j)
				}
				if g.Epilogue() {
					v = epilogue(v, g.Type == cu.Float64, bias, i, g.Relu)
				}
				c.set(i, j, v)
			}
		}
		if g.BiasGradA != 0 { // op(A)'s sums over K, rounded once
			grad, err := view(mem, uint64(g.BiasGradA), g.M, 1, max(g.M, 1), g.Type)
			if err != nil {
				return fmt.Errorf("bias gradient: %v", err)
			}
			for i := 0; i < g.M; i++ {
				s := 0.0
				for p := 0; p < g.K; p++ {
					if g.TransA {
						s += a.at(p, i)
					} else {
						s += a.at(i, p)
					}
				}
				grad.set(i, 0, s)
			}
		}
	}
	return nil
}

// epilogue is the bias's entry i added to v and Relu where relu is set,
// each rounded to the element type as a kernel computing in it would.
func epilogue(v float64, f64 bool, bias matrix, i int, relu bool) float64 {
	round := func(v float64) float64 { // the epilogue computes in float32 but for Float64 GEMMs
		if !f64 {
			return float64(float32(v))
		}
		return v
	}
	v = round(v)
	if bias.data != nil {
		v = round(v + bias.at(i, 0))
	}
	if relu && !(v > 0) && !math.IsNaN(v) {
		v = 0
	}
	return v
}

// tf32 rounds a float32 value to TF32's 10 mantissa bits (to nearest).
func tf32(v float64) float64 {
	b := math.Float32bits(float32(v))
	b = (b + 0xfff + (b>>13)&1) &^ 0x1fff
	return float64(math.Float32frombits(b))
}
