package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The plane fast path of ReduceWindow and SelectAndScatter against direct
// loops written from the definitions: every window's reduction, and each
// source value added at its window's first extreme (the first NaN if any),
// with ties, NaNs and -0 in the data.
func TestPlaneWindowsMatchDefinitions(t *testing.T) {
	const n, c, h, w = 2, 3, 6, 7
	vals := make([]float32, n*c*h*w)
	rng := tensor.ToSlice[float32](tensor.RandUniform(tensor.NewRNG(3), tensor.Float32, -2, 2, len(vals)))
	for i := range vals {
		vals[i] = float32(math.Round(float64(rng[i]) * 2)) // many ties
	}
	vals[5], vals[40] = float32(math.NaN()), float32(math.NaN())
	vals[41] = float32(math.Copysign(0, -1))
	x := tensor.FromSlice(vals, n, c, h, w)
	for _, win := range [][4]int{{2, 2, 2, 2}, {3, 2, 3, 2}, {2, 3, 1, 2}, {1, 1, 1, 1}, {3, 3, 2, 2}} {
		kh, kw, sh, sw := win[0], win[1], win[2], win[3]
		wd := ops.Window{Dims: []int{1, 1, kh, kw}, Strides: []int{1, 1, sh, sw}}
		oh, ow := (h-kh)/sh+1, (w-kw)/sw+1
		taps := func(pl, i, j int) []float32 {
			var out []float32
			for a := 0; a < kh; a++ {
				for b := 0; b < kw; b++ {
					out = append(out, vals[pl*h*w+(i*sh+a)*w+j*sw+b])
				}
			}
			return out
		}
		for _, kind := range []ops.ReduceKind{ops.ReduceMax, ops.ReduceMin, ops.ReduceSum} {
			init := map[ops.ReduceKind]float64{ops.ReduceMax: math.Inf(-1), ops.ReduceMin: math.Inf(1), ops.ReduceSum: 0}[kind]
			got := tensor.ToSlice[float32](ops.ReduceWindow(x, tensor.Scalar(float32(init)), kind, wd))
			for pl := 0; pl < n*c; pl++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						want := float32(init)
						for _, v := range taps(pl, i, j) {
							switch kind {
							case ops.ReduceMax:
								want = max(want, v)
							case ops.ReduceMin:
								want = min(want, v)
							default:
								want += v
							}
						}
						g := got[(pl*oh+i)*ow+j]
						if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
							t.Fatalf("window %v kind %d at %d,%d,%d: %v, want %v", win, kind, pl, i, j, g, want)
						}
					}
				}
			}
		}
		src := tensor.ToSlice[float32](tensor.RandUniform(tensor.NewRNG(4), tensor.Float32, 0, 1, n*c*oh*ow))
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			got := tensor.ToSlice[float32](ops.SelectAndScatter(x, tensor.FromSlice(src, n, c, oh, ow), tensor.Scalar(float32(0)), sel, wd))
			want := make([]float32, len(vals))
			for pl := 0; pl < n*c; pl++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						tv := taps(pl, i, j)
						at := 0
						for k, v := range tv {
							b := tv[at]
							if (sel == ops.SelectGE && v > b) || (sel == ops.SelectLE && v < b) || (v != v && b == b) {
								at = k
							}
						}
						want[pl*h*w+(i*sh+at/kw)*w+j*sw+at%kw] += src[(pl*oh+i)*ow+j]
					}
				}
			}
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-6 {
					t.Fatalf("%s: element %d = %v, want %v", fmt.Sprint("window ", win, " select ", sel), i, got[i], want[i])
				}
			}
		}
	}
}

// The 2x2, stride-2 max pool and its backward through the vector kernels
// (eight windows at a time, the last 1 to 7 through masks, float32) on
// rows of 1 to 21 windows: against the definitions, bit for bit, with
// ties, ±0 (Go's max ranks +0 above -0), NaNs in a full block and in a
// short last block (the Go loops take those), and an init of -0 (the
// backward's untouched taps keep it), 1.5 and -Inf.
func TestMaxPool2x2VectorPaths(t *testing.T) {
	for _, w := range []int{2, 4, 6, 8, 10, 12, 14, 16, 18, 22, 30, 38, 42} {
		t.Run(fmt.Sprint(w/2, " windows"), func(t *testing.T) { maxPool2x2Rows(t, w) })
	}
}

func maxPool2x2Rows(t *testing.T, w int) {
	const planes, h = 3, 4
	vals := tensor.ToSlice[float32](tensor.RandUniform(tensor.NewRNG(uint64(8+w)), tensor.Float32, -2, 2, planes*h*w))
	for i := range vals {
		vals[i] = float32(math.Round(float64(vals[i]) * 2)) // many ties, zeros among them
		if i%7 == 3 && vals[i] == 0 {
			vals[i] = float32(math.Copysign(0, -1))
		}
	}
	vals[w+w-1] = float32(math.NaN())           // plane 0, row 1: the last window of the first output row
	vals[2*h*w+2*w+1] = float32(math.NaN())     // plane 2, row 2: the first block
	vals[2*h*w+3*w+w-1] = float32(math.Inf(-1)) // the last column of a row
	x := tensor.FromSlice(vals, planes, h, w)
	oh, ow := h/2, w/2
	src := tensor.ToSlice[float32](tensor.RandUniform(tensor.NewRNG(9), tensor.Float32, -1, 1, planes*oh*ow))
	wd := ops.Window{Dims: []int{1, 2, 2}, Strides: []int{1, 2, 2}}
	for _, init := range []float32{float32(math.Copysign(0, -1)), 1.5, float32(math.Inf(-1))} {
		pooled := tensor.ToSlice[float32](ops.ReduceWindow(x, tensor.Scalar(init), ops.ReduceMax, wd))
		for k := range pooled {
			pl, i, j := k/(oh*ow), k%(oh*ow)/ow, k%ow
			base := pl*h*w + 2*i*w + 2*j
			want := max(init, vals[base], vals[base+1], vals[base+w], vals[base+w+1])
			if math.Float32bits(pooled[k]) != math.Float32bits(want) {
				t.Fatalf("max pool, init %v: window %d (plane %d, row %d, column %d) = %v, want %v", init, k, pl, i, j, pooled[k], want)
			}
		}
		got := tensor.ToSlice[float32](ops.SelectAndScatter(x, tensor.FromSlice(src, planes, oh, ow), tensor.Scalar(init), ops.SelectGE, wd))
		want := make([]float32, len(vals))
		for i := range want {
			want[i] = init
		}
		for pl := 0; pl < planes; pl++ {
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					base := pl*h*w + 2*i*w + 2*j
					offs := []int{base, base + 1, base + w, base + w + 1}
					at := offs[0]
					for _, o := range offs {
						if v, b := vals[o], vals[at]; v > b || (v != v && b == b) {
							at = o
						}
					}
					want[at] += src[(pl*oh+i)*ow+j]
				}
			}
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("init %v: element %d (plane %d, row %d, column %d) = %v, want %v",
					init, i, i/(h*w), i%(h*w)/w, i%w, got[i], want[i])
			}
		}
	}
}
