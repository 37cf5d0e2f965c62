package difftest

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

type halfCase struct {
	ID   int      `json:"id"`
	Bits []uint32 `json:"bits"`
}

type halfResult struct {
	ID   int      `json:"id"`
	BF16 []uint16 `json:"bf16"`
	F16  []uint16 `json:"f16"`
}

// tensor.ToBF16 rounds float32 values as PyTorch's bfloat16 conversion
// does and tensor.ToF16 as NumPy's float16 one: random bit patterns,
// halfway cases, the edges of both ranges (overflow to infinity,
// subnormals, underflow to zero); NaN to a NaN (PyTorch's drops the sign
// and payload, which ToBF16 keeps).
func TestHalfConversionsAgainstTorch(t *testing.T) {
	needTorch(t)
	r := rand.New(rand.NewPCG(7, 11))
	var cases []halfCase
	for id := range 40 {
		c := halfCase{ID: id}
		for i := range 1000 {
			b := r.Uint32()
			switch i % 5 {
			case 1: // halfway between two bfloat16 values, or one bit off it
				b = b&^0xffff | 0x8000 | uint32(r.IntN(2))
			case 2: // halfway between two float16 normals
				b = b&^0x1fff | 0x1000
			case 3: // float16's subnormal and overflow range
				e := []uint32{102, 103, 112, 113, 142, 143}[r.IntN(6)]
				b = b&0x807fffff | e<<23
			}
			c.Bits = append(c.Bits, b)
		}
		cases = append(cases, c)
	}
	want := runCases(t, "half_convert.py", cases, func(r *halfResult) int { return r.ID })
	for _, c := range cases {
		w := want[c.ID]
		if w == nil || len(w.BF16) != len(c.Bits) || len(w.F16) != len(c.Bits) {
			t.Fatalf("case %d: no result", c.ID)
		}
		for i, b := range c.Bits {
			f := math.Float32frombits(b)
			bf, h := tensor.ToBF16(f), tensor.ToF16(f)
			if f != f {
				if v, u := bf.Float32(), h.Float32(); v == v || u == u {
					t.Fatalf("NaN %#08x -> bfloat16 %#04x, float16 %#04x", b, uint16(bf), uint16(h))
				}
				continue
			}
			if uint16(bf) != w.BF16[i] {
				t.Fatalf("ToBF16(%g = %#08x) = %#04x, PyTorch %#04x", f, b, uint16(bf), w.BF16[i])
			}
			if uint16(h) != w.F16[i] {
				t.Fatalf("ToF16(%g = %#08x) = %#04x, NumPy %#04x", f, b, uint16(h), w.F16[i])
			}
		}
	}
}

type checkpointCase struct {
	ID    int    `json:"id"`
	Read  string `json:"read,omitempty"`
	Write string `json:"write,omitempty"`
}

type checkpointResult struct {
	ID      int `json:"id"`
	Tensors map[string]struct {
		DType string  `json:"dtype"`
		Shape []int   `json:"shape"`
		Bits  []int32 `json:"bits"` // the values' float32 bit patterns
	} `json:"tensors"`
}

// Half variables saved by nn.SaveCheckpoint read in PyTorch as the same
// bfloat16 and float16 values, and a file PyTorch's tensors were written
// to loads in eagerflow with PyTorch's values.
func TestHalfCheckpointsWithTorch(t *testing.T) {
	needTorch(t)
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.safetensors")
	bf := tensor.FromFloat32s(tensor.BFloat16, []float32{0.1, -2.5, 3e38, 1e-40, float32(math.Inf(-1)), 7}, 2, 3)
	h := tensor.FromFloat32s(tensor.Float16, []float32{0.1, 65504, 6e-8, -0.0, 1000.5}, 5)
	vars := []*tape.Variable{tape.NewVariable("bf", bf), tape.NewVariable("h", h)}
	if err := nn.SaveCheckpoint(ours, vars, nil, nil); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.safetensors")
	res := runCases(t, "safetensors_half.py", []checkpointCase{{ID: 0, Read: ours}, {ID: 1, Write: theirs}},
		func(r *checkpointResult) int { return r.ID })
	for name, x := range map[string]*tensor.Tensor{"bf": bf, "h": h} {
		got := res[0].Tensors[name]
		if got.DType != map[tensor.DType]string{tensor.BFloat16: "BF16", tensor.Float16: "F16"}[x.DType()] || !tensor.Shape(got.Shape).Equal(x.Shape()) {
			t.Fatalf("PyTorch read %s as %s%v", name, got.DType, got.Shape)
		}
		want := tensor.ToSlice[float32](ops.Cast(x, tensor.Float32))
		for i, b := range got.Bits {
			if v := math.Float32frombits(uint32(b)); math.Float32bits(want[i]) != uint32(b) {
				t.Errorf("PyTorch read %s[%d] as %g, eagerflow wrote %g", name, i, v, want[i])
			}
		}
	}
	loaded, _, err := nn.LoadCheckpoint(theirs)
	if err != nil {
		t.Fatal(err)
	}
	for name, dt := range map[string]tensor.DType{"w_bf16": tensor.BFloat16, "w_f16": tensor.Float16} {
		x := loaded[name]
		if x == nil || x.DType() != dt {
			t.Fatalf("%s loaded as %v", name, x)
		}
		got := tensor.ToSlice[float32](ops.Cast(x, tensor.Float32))
		for i, b := range res[1].Tensors[name].Bits {
			if math.Float32bits(got[i]) != uint32(b) {
				t.Errorf("%s[%d] loaded as %g, PyTorch wrote %g", name, i, got[i], math.Float32frombits(uint32(b)))
			}
		}
	}
}
