package ops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/tensor"
)

// Einsum evaluates Einstein summation over xs, as np.einsum and
// torch.einsum: spec names each operand's dims by letters, comma
// separated, and the result's after "->" ("ij,jk->ik" is MatMul,
// "bhqd,bhkd->bhqk" attention's scores, "ij->ji" a transpose, "i,i->" a
// dot product, "i,j->ij" an outer product). A letter in two operands pairs
// their dims (sizes equal); one missing from the result is summed over.
// Without "->" the result holds the letters that appear once, in
// alphabetical order. "..." stands for the dims a letter does not name
// (each operand's leading dims beyond its letters, aligned from the right
// as broadcasting aligns them; a size of 1 stretches to the others'); the
// result puts them where its "..." is, or first without "->" (a result
// with "->" but no "..." sums them, as torch.einsum does). Spaces are
// ignored. Operands contract two at a time from the left (DotGeneral, the
// letters no later operand or the result needs summed first), so the
// result is differentiable as those ops are. Panics with a *tensor.Error
// for a malformed spec, a letter repeated in one operand (a diagonal) or in
// the result, a result letter no operand has, an operand count or rank
// that differs from the spec, or paired dims of different sizes.
func Einsum(spec string, xs ...*tensor.Tensor) *tensor.Tensor {
	needInputs("Einsum", xs...)
	defer asOp("Einsum")
	e, err := parseEinsum(spec, xs)
	if err != "" {
		fail("Einsum", tensor.ErrAttr, xs, "spec %q: %s", spec, err)
	}
	acc, labels := xs[0], e.in[0]
	for k := 1; k < len(xs); k++ {
		acc, labels = contractPair(acc, labels, xs[k], e.in[k], e.neededAfter(k))
	}
	acc, labels = sumOut(acc, labels, e.out)
	perm := make([]int, len(e.out))
	for i, l := range e.out {
		perm[i] = slices.Index(labels, l)
	}
	if !slices.IsSorted(perm) {
		acc = Transpose(acc, perm...)
	}
	return acc
}

// einsum is a parsed spec: each operand's labels and the result's, an
// ellipsis dim labelled by a rune above the letters (ellipsisLabel).
type einsum struct {
	in  [][]rune
	out []rune
}

// ellipsisLabel labels the ellipsis dim i places from the right.
func ellipsisLabel(i int) rune { return rune(0x10000 + i) }

// parseEinsum parses spec for operands xs, or says what is wrong.
func parseEinsum(spec string, xs []*tensor.Tensor) (*einsum, string) {
	spec = strings.ReplaceAll(spec, " ", "")
	lhs, rhs, explicit := strings.Cut(spec, "->")
	if strings.Contains(rhs, "->") {
		return nil, `"->" appears twice`
	}
	terms := strings.Split(lhs, ",")
	if len(terms) != len(xs) {
		return nil, fmt.Sprintf("names %d operands, got %d", len(terms), len(xs))
	}
	e := &einsum{in: make([][]rune, len(xs))}
	ellipsis := 0 // the most ellipsis dims of an operand
	count := map[rune]int{}
	for k, term := range terms {
		labels, dots, why := einsumTerm(term, xs[k].Rank())
		if why != "" {
			return nil, fmt.Sprintf("operand %d (%q, %v): %s", k, term, xs[k].Shape(), why)
		}
		for i, l := range labels {
			if slices.Contains(labels[:i], l) {
				return nil, fmt.Sprintf("operand %d (%q) repeats %q (a diagonal, which Einsum does not take)", k, term, l)
			}
			count[l]++
		}
		e.in[k] = labels
		ellipsis = max(ellipsis, dots)
	}
	dots := make([]rune, ellipsis) // the result's ellipsis dims, leftmost first
	for i := range dots {
		dots[i] = ellipsisLabel(ellipsis - 1 - i)
	}
	if !explicit {
		var once []rune
		for l, n := range count {
			if n == 1 && l < ellipsisLabel(0) {
				once = append(once, l)
			}
		}
		slices.Sort(once)
		e.out = append(dots, once...)
	} else {
		before, after, hasDots := strings.Cut(rhs, "...")
		if strings.Contains(after, "...") {
			return nil, `the result has "..." twice`
		}
		for _, part := range []string{before, after} {
			for _, l := range part {
				if !isEinsumLetter(l) {
					return nil, fmt.Sprintf("the result has %q, not a letter", l)
				}
			}
		}
		e.out = []rune(before)
		if hasDots {
			e.out = append(e.out, dots...)
		}
		e.out = append(e.out, []rune(after)...)
		for i, l := range e.out {
			if slices.Contains(e.out[:i], l) {
				return nil, fmt.Sprintf("the result repeats %q", l)
			}
			if count[l] == 0 {
				return nil, fmt.Sprintf("the result's %q names no operand's dim", l)
			}
		}
	}
	if why := e.checkSizes(xs); why != "" {
		return nil, why
	}
	return e, ""
}

// einsumTerm returns the labels of an operand of rank r named by term,
// and how many dims its "..." stands for, or says what is wrong.
func einsumTerm(term string, r int) (labels []rune, dots int, why string) {
	before, after, hasDots := strings.Cut(term, "...")
	if strings.Contains(after, "...") {
		return nil, 0, `"..." appears twice`
	}
	letters := []rune(before + after)
	for _, l := range letters {
		if !isEinsumLetter(l) {
			return nil, 0, fmt.Sprintf("%q is not a letter", l)
		}
	}
	switch {
	case !hasDots && len(letters) != r:
		return nil, 0, fmt.Sprintf("%d letters for %d dims", len(letters), r)
	case hasDots && len(letters) > r:
		return nil, 0, fmt.Sprintf("%d letters and \"...\" for %d dims", len(letters), r)
	}
	labels = []rune(before)
	if hasDots {
		dots = r - len(letters)
		for i := range dots {
			labels = append(labels, ellipsisLabel(dots-1-i))
		}
	}
	return append(labels, []rune(after)...), dots, ""
}

func isEinsumLetter(l rune) bool { return l >= 'a' && l <= 'z' || l >= 'A' && l <= 'Z' }

// checkSizes says where two dims a letter pairs differ in size (an
// ellipsis dim of size 1 stretches).
func (e *einsum) checkSizes(xs []*tensor.Tensor) string {
	size, from := map[rune]int{}, map[rune]int{}
	for k, labels := range e.in {
		for d, l := range labels {
			n := xs[k].Dim(d)
			m, seen := size[l]
			switch {
			case !seen || m == n:
			case l >= ellipsisLabel(0) && (m == 1 || n == 1):
				n = max(m, n)
			default:
				return fmt.Sprintf("%s has size %d in operand %d and %d in operand %d", labelName(l), m, from[l], n, k)
			}
			size[l], from[l] = n, k
		}
	}
	return ""
}

// labelName names a label in a message.
func labelName(l rune) string {
	if l >= ellipsisLabel(0) {
		return fmt.Sprintf("the ellipsis dim %d from the right", int(l-ellipsisLabel(0))+1)
	}
	return fmt.Sprintf("%q", l)
}

// neededAfter returns the labels the operands after k and the result
// hold.
func (e *einsum) neededAfter(k int) []rune {
	need := slices.Clone(e.out)
	for _, labels := range e.in[k+1:] {
		need = append(need, labels...)
	}
	return need
}

// contractPair multiplies a (labels la) by b (lb), summing the labels that
// need does not hold: each side's own first, the shared ones by
// DotGeneral, which pairs the shared labels need holds as batch dims
// (stretching a side's ellipsis dims of size 1 to the other's).
func contractPair(a *tensor.Tensor, la []rune, b *tensor.Tensor, lb []rune, need []rune) (*tensor.Tensor, []rune) {
	a, la = sumOut(a, la, append(slices.Clone(need), lb...))
	b, lb = sumOut(b, lb, append(slices.Clone(need), la...))
	a, b = stretchShared(a, la, b, lb)
	var d DotDims
	var batch, freeA, freeB []rune
	for i, l := range la {
		j := slices.Index(lb, l)
		switch {
		case j < 0:
			freeA = append(freeA, l)
		case slices.Contains(need, l):
			d.LhsBatch, d.RhsBatch = append(d.LhsBatch, i), append(d.RhsBatch, j)
			batch = append(batch, l)
		default:
			d.LhsContract, d.RhsContract = append(d.LhsContract, i), append(d.RhsContract, j)
		}
	}
	for _, l := range lb {
		if !slices.Contains(la, l) {
			freeB = append(freeB, l)
		}
	}
	return DotGeneral(a, b, d), slices.Concat(batch, freeA, freeB)
}

// sumOut sums x (labels) over the labels keep does not hold.
func sumOut(x *tensor.Tensor, labels, keep []rune) (*tensor.Tensor, []rune) {
	var dims []int
	var kept []rune
	for i, l := range labels {
		if slices.Contains(keep, l) {
			kept = append(kept, l)
		} else {
			dims = append(dims, i)
		}
	}
	if len(dims) == 0 {
		return x, labels
	}
	return Sum(x, dims...), kept
}

// stretchShared broadcasts a's and b's dims of size 1 where the other
// operand has the same label at a larger size (ellipsis dims: checkSizes
// allowed no other difference).
func stretchShared(a *tensor.Tensor, la []rune, b *tensor.Tensor, lb []rune) (*tensor.Tensor, *tensor.Tensor) {
	sa, sb := a.Shape().Clone(), b.Shape().Clone()
	for i, l := range la {
		if j := slices.Index(lb, l); j >= 0 {
			n := max(sa[i], sb[j])
			sa[i], sb[j] = n, n
		}
	}
	if !sa.Equal(a.Shape()) {
		a = BroadcastTo(a, sa...)
	}
	if !sb.Equal(b.Shape()) {
		b = BroadcastTo(b, sb...)
	}
	return a, b
}
