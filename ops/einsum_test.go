package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// naiveEinsum evaluates an explicit spec of letters only ("ij,jk->ik") by
// visiting every assignment of the letters' values.
func naiveEinsum(spec string, xs []*tensor.Tensor) ([]float64, []int) {
	lhs, rhs, _ := strings.Cut(spec, "->")
	terms := strings.Split(lhs, ",")
	size := map[rune]int{}
	var letters []rune
	for k, term := range terms {
		for d, l := range term {
			size[l] = xs[k].Dim(d)
			if !slices.Contains(letters, l) {
				letters = append(letters, l)
			}
		}
	}
	var shape []int
	for _, l := range rhs {
		shape = append(shape, size[l])
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	out := make([]float64, n)
	vals := make([][]float64, len(xs))
	for k, x := range xs {
		vals[k] = tensor.ToSlice[float64](x)
	}
	at := map[rune]int{}
	var visit func(i int)
	visit = func(i int) {
		if i == len(letters) {
			p := 1.0
			for k, term := range terms {
				off := 0
				for d, l := range term {
					off = off*xs[k].Dim(d) + at[l]
				}
				p *= vals[k][off]
			}
			off := 0
			for d, l := range rhs {
				off = off*shape[d] + at[l]
			}
			out[off] += p
			return
		}
		for v := range size[letters[i]] {
			at[letters[i]] = v
			visit(i + 1)
		}
	}
	visit(0)
	return out, shape
}

func TestEinsum(t *testing.T) {
	r := tensor.NewRNG(7)
	rnd := func(shape ...int) *tensor.Tensor { return tensor.RandUniform(r, tensor.Float64, -1, 1, shape...) }
	for _, c := range []struct {
		spec   string
		shapes [][]int
	}{
		{"ij,jk->ik", [][]int{{2, 3}, {3, 4}}},
		{"ij,kj->ik", [][]int{{2, 3}, {4, 3}}},
		{"bij,bjk->bik", [][]int{{2, 3, 4}, {2, 4, 5}}},
		{"bhqd,bhkd->bhqk", [][]int{{2, 2, 3, 4}, {2, 2, 5, 4}}},
		{"ij->ji", [][]int{{2, 3}}},
		{"ij->j", [][]int{{2, 3}}},
		{"ijk->", [][]int{{2, 3, 2}}},
		{"i,i->", [][]int{{5}, {5}}},
		{"i,j->ij", [][]int{{3}, {4}}},
		{"ij,jk,kl->il", [][]int{{2, 3}, {3, 4}, {4, 2}}},
		{"ijk,ik->j", [][]int{{2, 3, 4}, {2, 4}}},
		{"abc,cd->dba", [][]int{{2, 1, 3}, {3, 2}}},
		{"ij,kl->", [][]int{{2, 3}, {2, 2}}},
		{"ab,bc,ca->", [][]int{{2, 3}, {3, 4}, {4, 2}}},
		{"i,i,i->i", [][]int{{3}, {3}, {3}}},
		{"ij,ij->ij", [][]int{{2, 3}, {2, 3}}},
		{"ij,jk->", [][]int{{0, 3}, {3, 2}}},
	} {
		xs := make([]*tensor.Tensor, len(c.shapes))
		for i, s := range c.shapes {
			xs[i] = rnd(s...)
		}
		want, shape := naiveEinsum(c.spec, xs)
		check(t, c.spec, ops.Einsum(c.spec, xs...), shape, want)
	}

	// Implicit results, spaces, ellipses (broadcast from the right, size
	// 1 stretched, summed where the result has none).
	a, b := rnd(2, 3), rnd(3, 4)
	same := func(name string, got, want *tensor.Tensor) {
		t.Helper()
		check(t, name, got, want.Shape(), tensor.ToSlice[float64](want))
	}
	same("implicit matmul", ops.Einsum("ij,jk", a, b), ops.MatMul(a, b))
	same("implicit, alphabetical", ops.Einsum("ba", a), ops.Transpose(a, 1, 0))
	v := rnd(4)
	same("implicit dot", ops.Einsum("i,i", v, tensor.Ones(tensor.Float64, 4)), ops.Sum(v))
	same("spaces", ops.Einsum(" ij , jk -> ik ", a, b), ops.MatMul(a, b))
	x, y := rnd(2, 1, 3, 4), rnd(5, 4, 2)
	same("ellipsis broadcast", ops.Einsum("...ij,...jk->...ik", x, y), ops.MatMul(x, y))
	same("ellipsis implicit", ops.Einsum("...ij,...jk", x, y), ops.Einsum("...ij,...jk->...ik", x, y))
	m := rnd(2, 3, 4)
	same("ellipsis in the middle", ops.Einsum("i...j->j...i", m), ops.Transpose(m, 2, 1, 0))
	s := rnd(2, 3, 4)
	same("ellipsis summed", ops.Einsum("...ij->ij", s), ops.Sum(s, 0))
	same("empty ellipsis", ops.Einsum("...ij,...jk->...ik", a, b), ops.MatMul(a, b))
	f := ops.Einsum("ij,jk->ik", ops.Cast(a, tensor.Float32), ops.Cast(b, tensor.Float32))
	if f.DType() != tensor.Float32 {
		t.Errorf("float32 operands give %v", f.DType())
	}
}

// Random specs of one to three operands against the naive sum.
func TestEinsumRandomSpecs(t *testing.T) {
	r := tensor.NewRNG(11)
	g := rand.New(rand.NewPCG(11, 0))
	pick := g.IntN
	letters := []rune("abcdef")
	for trial := range 300 {
		size := map[rune]int{}
		for _, l := range letters {
			size[l] = 1 + pick(3)
		}
		k := 1 + pick(3)
		terms := make([]string, k)
		var used []rune
		xs := make([]*tensor.Tensor, k)
		for i := range k {
			perm := slices.Clone(letters)
			for j := len(perm) - 1; j > 0; j-- {
				q := pick(j + 1)
				perm[j], perm[q] = perm[q], perm[j]
			}
			term := perm[:pick(4)]
			var shape []int
			for _, l := range term {
				shape = append(shape, size[l])
				if !slices.Contains(used, l) {
					used = append(used, l)
				}
			}
			terms[i], xs[i] = string(term), tensor.RandUniform(r, tensor.Float64, -1, 1, shape...)
		}
		var out []rune
		for _, l := range used {
			if pick(2) == 0 {
				out = append(out, l)
			}
		}
		spec := strings.Join(terms, ",") + "->" + string(out)
		want, shape := naiveEinsum(spec, xs)
		got := ops.Einsum(spec, xs...)
		if !got.Shape().Equal(shape) {
			t.Fatalf("trial %d, %s: shape %v, want %v", trial, spec, got.Shape(), shape)
		}
		for i, g := range tensor.ToSlice[float64](got) {
			if math.Abs(g-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("trial %d, %s: element %d is %v, want %v", trial, spec, i, g, want[i])
			}
		}
	}
}

func TestEinsumGradients(t *testing.T) {
	runGradients(t, []gradCase{
		{"Einsum matmul", func(x []T) T { return ops.Einsum("ij,jk->ik", x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 3, 2)}},
		{"Einsum three", func(x []T) T { return ops.Einsum("ab,bc,ca->b", x[0], x[1], x[2]) }, []T{rnd(3, -1, 1, 2, 3), rnd(4, -1, 1, 3, 2), rnd(5, -1, 1, 2, 2)}},
		{"Einsum ellipsis", func(x []T) T { return ops.Einsum("...ij,...jk->...ki", x[0], x[1]) }, []T{rnd(6, -1, 1, 2, 1, 2, 3), rnd(7, -1, 1, 2, 3, 2)}},
		{"Einsum summed", func(x []T) T { return ops.Einsum("ijk->ki", x[0]) }, []T{rnd(8, -1, 1, 2, 3, 2)}},
	}, nil, nil)
}

func TestEinsumBadInput(t *testing.T) {
	a, b := tensor.Zeros(tensor.Float32, 2, 3), tensor.Zeros(tensor.Float32, 4, 5)
	var cases []badInput
	for _, c := range []struct {
		spec string
		xs   []*tensor.Tensor
		msg  string
	}{
		{"ij,jk->ik", []*tensor.Tensor{a}, "names 2 operands, got 1"},
		{"ijk->i", []*tensor.Tensor{a}, "operand 0 (\"ijk\", [2 3]): 3 letters for 2 dims"},
		{"ij,jk->ik", []*tensor.Tensor{a, b}, "'j' has size 3 in operand 0 and 4 in operand 1"},
		{"ii->i", []*tensor.Tensor{tensor.Zeros(tensor.Float32, 2, 2)}, "repeats 'i' (a diagonal"},
		{"ij->ii", []*tensor.Tensor{a}, "the result repeats 'i'"},
		{"ij->k", []*tensor.Tensor{a}, "the result's 'k' names no operand's dim"},
		{"i1->i", []*tensor.Tensor{a}, "'1' is not a letter"},
		{"ij->i->j", []*tensor.Tensor{a}, `"->" appears twice`},
		{"......ij", []*tensor.Tensor{a}, `"..." appears twice`},
		{"ijk...->ijk", []*tensor.Tensor{a}, "3 letters and \"...\" for 2 dims"},
		{"...ij,...jk->...ik", []*tensor.Tensor{tensor.Zeros(tensor.Float32, 2, 2, 3), tensor.Zeros(tensor.Float32, 3, 3, 2)}, "the ellipsis dim 1 from the right has size 2 in operand 0 and 3 in operand 1"},
	} {
		xs := c.xs
		cases = append(cases, badInput{fmt.Sprintf("%q", c.spec), func() { ops.Einsum(c.spec, xs...) }, tensor.ErrAttr, "Einsum: spec"})
		cases = append(cases, badInput{fmt.Sprintf("%q says", c.spec), func() { ops.Einsum(c.spec, xs...) }, tensor.ErrAttr, c.msg})
	}
	cases = append(cases, badInput{"dtypes", func() { ops.Einsum("ij,jk", a, tensor.Zeros(tensor.Float64, 3, 2)) }, tensor.ErrDType, "Einsum"})
	runBadInput(t, cases)
}
