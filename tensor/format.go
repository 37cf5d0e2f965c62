package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Printing thresholds, as NumPy's defaults: tensors with more than
// printThreshold elements show only printEdge items at each end of each
// dimension.
const (
	printThreshold = 1000
	printEdge      = 3
)

// String formats t like NumPy's str() followed by its dtype and shape:
//
//	[[1 2 3]
//	 [4 5 6]] int32[2 3]
func (t *Tensor) String() string { return t.format(-1) + " " + Describe(t) }

// Format implements fmt.Formatter: %v and %s print as String; a precision
// (%.3v) fixes the digits after the point for floats; %#v prints the values
// alone.
func (t *Tensor) Format(f fmt.State, verb rune) {
	prec, ok := f.Precision()
	if !ok {
		prec = -1
	}
	s := t.format(prec)
	if !f.Flag('#') {
		s += " " + Describe(t)
	}
	fmt.Fprint(f, s)
}

func (t *Tensor) format(prec int) string {
	if t == nil {
		return "<nil>"
	}
	if t.buf == nil {
		return "<released>"
	}
	elems := t.elementStrings(prec)
	width := 0
	for _, e := range elems {
		width = max(width, len(e))
	}
	p := printer{shape: t.shape, elems: elems, width: width, summarize: t.NumElements() > printThreshold}
	var b strings.Builder
	if len(t.shape) == 0 {
		return elems[0]
	}
	p.write(&b, 0, 0)
	return b.String()
}

type printer struct {
	shape     Shape
	elems     []string
	width     int
	summarize bool
}

// indices returns the positions to print along a dimension of size n, with
// -1 standing for the elision mark.
func (p *printer) indices(n int) []int {
	if !p.summarize || n <= 2*printEdge {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := []int{0, 1, 2, -1}
	for i := n - printEdge; i < n; i++ {
		idx = append(idx, i)
	}
	return idx
}

func (p *printer) write(b *strings.Builder, dim, base int) {
	stride := 1
	for _, d := range p.shape[dim+1:] {
		stride *= d
	}
	b.WriteByte('[')
	last := dim == len(p.shape)-1
	sep := " "
	if !last {
		sep = strings.Repeat("\n", len(p.shape)-dim-1) + strings.Repeat(" ", dim+1)
	}
	for k, i := range p.indices(p.shape[dim]) {
		if k > 0 {
			b.WriteString(sep)
		}
		switch {
		case i < 0:
			b.WriteString("...")
		case last:
			fmt.Fprintf(b, "%*s", p.width, p.elems[base+i*stride])
		default:
			p.write(b, dim+1, base+i*stride)
		}
	}
	b.WriteByte(']')
}

// elementStrings formats every element, row-major. Floats share one notation
// and precision so that columns line up.
func (t *Tensor) elementStrings(prec int) []string {
	switch t.dtype {
	case Float32, Float64:
		var v []float64
		bitSize := 64
		if t.dtype == Float32 {
			bitSize = 32
			for _, x := range ToSlice[float32](t) {
				v = append(v, float64(x))
			}
		} else {
			v = ToSlice[float64](t)
		}
		return formatFloats(v, bitSize, prec)
	case Bool:
		return mapSlice(ToSlice[bool](t), strconv.FormatBool)
	case Int32:
		return mapSlice(ToSlice[int32](t), func(x int32) string { return strconv.FormatInt(int64(x), 10) })
	case Int64:
		return mapSlice(ToSlice[int64](t), func(x int64) string { return strconv.FormatInt(x, 10) })
	case Uint8:
		return mapSlice(ToSlice[uint8](t), func(x uint8) string { return strconv.FormatUint(uint64(x), 10) })
	}
	return nil
}

func formatFloats(v []float64, bitSize, prec int) []string {
	maxAbs, minAbs, integral := 0.0, math.Inf(1), true
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		a := math.Abs(x)
		maxAbs = max(maxAbs, a)
		if a > 0 {
			minAbs = min(minAbs, a)
		}
		if x != math.Trunc(x) {
			integral = false
		}
	}
	scientific := maxAbs >= 1e8 || (minAbs < 1e-4 && !integral)
	out := make([]string, len(v))
	if prec < 0 && !integral {
		// The fewest digits that print every element exactly (shortest repr).
		prec = 0
		for _, x := range v {
			s := strconv.FormatFloat(x, 'e', -1, bitSize)
			if !scientific {
				s = strconv.FormatFloat(x, 'f', -1, bitSize)
			}
			mant := s
			if i := strings.IndexByte(mant, 'e'); i >= 0 {
				mant = mant[:i]
			}
			if i := strings.IndexByte(mant, '.'); i >= 0 {
				prec = max(prec, len(mant)-i-1)
			}
		}
	}
	for i, x := range v {
		switch {
		case math.IsNaN(x):
			out[i] = "nan"
		case math.IsInf(x, 1):
			out[i] = "inf"
		case math.IsInf(x, -1):
			out[i] = "-inf"
		case scientific:
			out[i] = strconv.FormatFloat(x, 'e', max(prec, 0), bitSize)
		case prec <= 0:
			out[i] = strconv.FormatFloat(x, 'f', 0, bitSize) + "."
		default:
			out[i] = strconv.FormatFloat(x, 'f', prec, bitSize)
		}
	}
	return out
}
