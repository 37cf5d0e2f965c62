package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Printing follows NumPy's str() with its default options: tensors with
// more than printThreshold elements show only printEdge items at each end
// of each dimension, lines wrap at printWidth characters, floats print at
// most printPrecision digits after the point (the fewest that tell each
// value apart, points aligned), in scientific notation when the values'
// magnitudes call for it.
const (
	printThreshold = 1000
	printEdge      = 3
	printWidth     = 75
	printPrecision = 8
)

// String formats t like NumPy's str() followed by its dtype and shape:
//
//	[[1 2 3]
//	 [4 5 6]] int32[2 3]
//	[ 0.5 -1.   2. ] float32[3]
func (t *Tensor) String() string {
	if t == nil {
		return "<nil>"
	}
	return t.format(-1) + " " + Describe(t)
}

// Format implements fmt.Formatter: %v and %s print as String; a precision
// (%.3v) prints every float with that many digits after the point
// (NumPy's floatmode "fixed"); %#v prints the values alone.
func (t *Tensor) Format(f fmt.State, verb rune) {
	prec, ok := f.Precision()
	if !ok {
		prec = -1
	}
	s := t.format(prec)
	if !f.Flag('#') && t != nil {
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
	p := printer{shape: t.shape, summarize: t.NumElements() > printThreshold}
	if len(t.shape) == 0 {
		if t.dtype.IsFloat() && prec < 0 {
			return scalarString(floatOf(t.item()), t.dtype)
		}
		return t.elementStrings(prec, nil, false)[0]
	}
	if t.NumElements() == 0 {
		return "[]" // NumPy's, whatever the shape
	}
	p.elems = t.elementStrings(prec, p.shownFlat(), true)
	var b strings.Builder
	p.write(&b, 0, 0, " ", printWidth)
	return b.String()
}

type printer struct {
	shape     Shape
	elems     []string // every element (row-major); only the shown ones are set
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

// shownFlat returns the row-major positions of the elements the printer
// shows.
func (p *printer) shownFlat() []int {
	var out []int
	var walk func(dim, base int)
	walk = func(dim, base int) {
		if dim == len(p.shape) {
			out = append(out, base)
			return
		}
		stride := p.shape[dim+1:].NumElements()
		for _, i := range p.indices(p.shape[dim]) {
			if i >= 0 {
				walk(dim+1, base+i*stride)
			}
		}
	}
	walk(0, 0)
	return out
}

// write writes the sub-tensor at dim starting at element base as NumPy's
// _formatArray does: the last dimension's elements wrap at width (the
// hanging indent starting each continued line), the others are rows
// separated by as many newlines as dimensions remain below them.
func (p *printer) write(b *strings.Builder, dim, base int, indent string, width int) {
	stride := p.shape[dim+1:].NumElements()
	idx := p.indices(p.shape[dim])
	var s strings.Builder
	if dim == len(p.shape)-1 {
		// "]" (or the separator) must fit after the last element.
		elemWidth := width - 1
		line := indent
		add := func(word string, last bool) {
			if len(line)+len(word) > elemWidth && len(line) > len(indent) {
				s.WriteString(strings.TrimRight(line, " ") + "\n")
				line = indent
			}
			line += word
			if !last {
				line += " "
			}
		}
		for k, i := range idx {
			word := "..."
			if i >= 0 {
				word = p.elems[base+i*stride]
			}
			add(word, k == len(idx)-1)
		}
		s.WriteString(line)
	} else {
		sep := strings.Repeat("\n", len(p.shape)-dim-1)
		for k, i := range idx {
			s.WriteString(indent)
			if i < 0 {
				s.WriteString("...")
			} else {
				p.write(&s, dim+1, base+i*stride, indent+" ", width-1)
			}
			if k < len(idx)-1 {
				s.WriteString(sep)
			}
		}
	}
	b.WriteByte('[')
	b.WriteString(s.String()[len(indent):])
	b.WriteByte(']')
}

// elementStrings formats the elements, row-major, with one format for the
// elements at shown (nil: all) as NumPy builds it from the elements it
// shows; pad aligns them as NumPy does in an array (the points of floats
// in one column), unpadded they are each element alone. Elements not
// shown are "" when pad.
func (t *Tensor) elementStrings(prec int, shown []int, pad bool) []string {
	n := t.NumElements()
	if shown == nil {
		shown = make([]int, n)
		for i := range shown {
			shown[i] = i
		}
	}
	out := make([]string, n)
	switch t.dtype {
	case Float32, Float64, BFloat16, Float16, Float8E4M3, Float8E5M2:
		v := floatValues(t)
		sv := make([]float64, len(shown))
		for k, i := range shown {
			sv[k] = v[i]
		}
		f := newFloatFormat(sv, t.dtype, prec)
		for i := range out {
			if !pad || len(shown) == n {
				out[i] = f.format(v[i], pad)
			}
		}
		if pad && len(shown) < n {
			for _, i := range shown {
				out[i] = f.format(v[i], true)
			}
		}
		return out
	case Bool:
		for i, x := range toSlice[bool](t) {
			switch {
			case !x:
				out[i] = "False"
			case pad: // in an array, True takes False's width (NumPy's)
				out[i] = " True"
			default:
				out[i] = "True"
			}
		}
		return out
	}
	var ints []int64
	switch t.dtype {
	case Int32:
		ints = mapSlice(toSlice[int32](t), func(x int32) int64 { return int64(x) })
	case Int64:
		ints = toSlice[int64](t)
	case Uint8:
		ints = mapSlice(toSlice[uint8](t), func(x uint8) int64 { return int64(x) })
	}
	width := 0
	for _, i := range shown {
		width = max(width, len(strconv.FormatInt(ints[i], 10)))
	}
	for i, x := range ints {
		out[i] = strconv.FormatInt(x, 10)
		if pad {
			out[i] = strings.Repeat(" ", width-len(out[i])) + out[i]
		}
	}
	return out
}

// scalarString formats one float as NumPy prints a 0-d array (as Python's
// repr of the value): the fewest digits that identify it, positional for
// magnitudes in [1e-4, 1e16) with at least one digit after the point
// ("2.0"), scientific beyond ("1e-05", "1.5e+16").
func scalarString(x float64, dt DType) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return floatFormat{}.format(x, false)
	}
	s := formatFloat(x, 'e', -1, dt)
	exp, _ := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:])
	if x == 0 || (exp >= -4 && exp < 16) {
		s = formatFloat(x, 'f', -1, dt)
		if dt.IsHalf() || dt.IsFloat8() { // the shortest significant digits, written out ("14380.0" for 14384, as NumPy)
			v, _ := strconv.ParseFloat(formatFloat(x, 'e', -1, dt), 64)
			s = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if !strings.Contains(s, ".") {
			s += ".0"
		}
	}
	return s
}

// formatFloat is strconv.FormatFloat of x, a value of float dtype dt:
// with prec -1, the fewest digits that identify x among dt's values (for
// the half types, the fewest whose decimal rounds back to x).
func formatFloat(x float64, verb byte, prec int, dt DType) string {
	if dt == Float64 {
		return strconv.FormatFloat(x, verb, prec, 64)
	}
	if prec >= 0 || !(dt.IsHalf() || dt.IsFloat8()) || math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, verb, prec, 32)
	}
	for p := range 48 {
		s := strconv.FormatFloat(x, verb, p, 32)
		if v, err := strconv.ParseFloat(s, 32); err == nil && roundHalf(dt, float32(v)) == float32(x) {
			return s
		}
	}
	return strconv.FormatFloat(x, verb, -1, 32)
}

// floatFormat is NumPy's FloatingFormat for a set of values: the notation
// (positional or scientific), the digits after the point, and the widths
// that align the points.
type floatFormat struct {
	dt        DType // the values' dtype, whose shortest digits they take
	exp       bool  // scientific notation
	digits    int   // digits after the point: the most a value needs, or fixed
	fixed     bool  // every value with digits digits, not its own fewest
	expDigits int   // digits of the exponent (at least 2)
	padLeft   int   // width of the sign and integer part
	padRight  int   // width after the point (positional); of the rest (scientific)
}

// newFloatFormat chooses the format for v, values of float dtype dt. prec
// >= 0 fixes the digits after the point (NumPy's floatmode "fixed");
// otherwise each value takes the fewest that identify it, at most
// printPrecision ("maxprec").
func newFloatFormat(v []float64, dt DType, prec int) floatFormat {
	f := floatFormat{dt: dt, fixed: prec >= 0}
	maxAbs, minAbs, finite := 0.0, math.Inf(1), 0
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		finite++
		if a := math.Abs(x); a > 0 {
			maxAbs, minAbs = max(maxAbs, a), min(minAbs, a)
		}
	}
	if maxAbs > 0 {
		f.exp = maxAbs >= 1e8 || minAbs < 1e-4 || maxAbs/minAbs > 1e3
	}
	limit := printPrecision
	if f.fixed {
		limit = prec
	}
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		mant, exp := f.shortest(x, limit)
		whole, frac, _ := strings.Cut(mant, ".")
		f.padLeft = max(f.padLeft, len(whole))
		f.digits = max(f.digits, len(frac))
		f.expDigits = max(f.expDigits, len(exp))
	}
	if finite == 0 { // NumPy sizes nothing but the non-finite words then
		f.exp, f.digits, f.expDigits = false, 0, 0
	} else if f.fixed {
		f.digits = prec
	}
	f.padRight = f.digits
	if f.exp {
		f.expDigits = max(f.expDigits, 2)
		f.padRight = f.digits + 2 + f.expDigits // digits, "e", sign, exponent
	}
	if finite < len(v) {
		neg := 0
		for _, x := range v {
			if math.IsInf(x, -1) {
				neg = 1
			}
		}
		f.padLeft = max(f.padLeft, len("nan")-(f.padRight+1), len("inf")+neg-(f.padRight+1))
	}
	return f
}

// shortest returns x's mantissa with the fewest digits after the point
// that identify it, at most limit ("1." for a whole number), and, in
// scientific notation, its exponent's digits.
func (f floatFormat) shortest(x float64, limit int) (mant, exp string) {
	verb := byte('f')
	if f.exp {
		verb = 'e'
	}
	s := formatFloat(x, verb, -1, f.dt)
	if !f.exp && math.Abs(x) >= 1<<24 && x == math.Trunc(x) {
		// Beyond float32's exact integers the shortest digits end in
		// zeros ("54685410"); positional notation prints the value
		// itself, as NumPy does ("54685408.").
		s = strconv.FormatFloat(x, 'f', 0, 64)
	}
	if f.fixed {
		s = formatFloat(x, verb, limit, f.dt)
	}
	mant, exp, _ = strings.Cut(s, "e")
	if _, frac, ok := strings.Cut(mant, "."); ok && len(frac) > limit {
		s = formatFloat(x, verb, limit, f.dt)
		mant, exp, _ = strings.Cut(s, "e")
		if !f.fixed && strings.Contains(mant, ".") {
			mant = strings.TrimRight(mant, "0")
		}
	}
	if !strings.Contains(mant, ".") {
		mant += "."
	}
	if exp != "" {
		exp = exp[1:] // the sign goes
	}
	return mant, exp
}

// format formats x; pad aligns it with the other values of the format.
func (f floatFormat) format(x float64, pad bool) string {
	var s string
	switch {
	case math.IsNaN(x):
		s = "nan"
	case math.IsInf(x, 1):
		s = "inf"
	case math.IsInf(x, -1):
		s = "-inf"
	}
	if s != "" {
		if pad {
			s = strings.Repeat(" ", max(f.padLeft+f.padRight+1-len(s), 0)) + s
		}
		return s
	}
	var mant, exp string
	if f.exp {
		// Every mantissa with the same digits, the exponent with the
		// same width (NumPy pads it with zeros).
		m, e, _ := strings.Cut(formatFloat(x, 'e', f.digits, f.dt), "e")
		mant, exp = m, "e"+e[:1]+strings.Repeat("0", max(f.expDigits-len(e[1:]), 0))+e[1:]
		if !strings.Contains(mant, ".") {
			mant += "."
		}
	} else {
		mant, _ = f.shortest(x, f.digits)
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if !pad {
		return mant + exp
	}
	s = strings.Repeat(" ", max(f.padLeft-len(whole), 0)) + mant + exp
	if !f.exp {
		s += strings.Repeat(" ", max(f.padRight-len(frac), 0))
	}
	return s
}
