package tensor

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eagerflow/eagerflow/device"
)

func TestLayoutIndexRoundTrip(t *testing.T) {
	shape := Shape{4, 2, 3}
	for _, l := range []Layout{nil, {2, 1, 0}, {0, 1, 2}, {1, 0, 2}} {
		seen := map[int]bool{}
		idx := make([]int, 3)
		for i := 0; i < 4; i++ {
			for j := 0; j < 2; j++ {
				for k := 0; k < 3; k++ {
					lin := LinearIndex(shape, l, []int{i, j, k})
					if seen[lin] || lin < 0 || lin >= 24 {
						t.Fatalf("layout %v: index %v maps to %d twice or out of range", l, []int{i, j, k}, lin)
					}
					seen[lin] = true
					if got := MultiIndex(shape, l, lin, idx); !cmp.Equal(got, []int{i, j, k}) {
						t.Fatalf("layout %v: MultiIndex(%d) = %v, want %v", l, lin, got, []int{i, j, k})
					}
				}
			}
		}
	}
	// XLA's Shape/Layout text: for {0, 1} (column-major) of a 2x3 array,
	// element (1, 2) sits at 1 + 2*2 = 5, and at 1*3 + 2 = 5 row-major too;
	// (1, 0) differs: 1 column-major, 3 row-major.
	if got := LinearIndex(Shape{2, 3}, Layout{0, 1}, []int{1, 0}); got != 1 {
		t.Errorf("column-major (1,0) = %d, want 1", got)
	}
	if got := LinearIndex(Shape{2, 3}, nil, []int{1, 0}); got != 3 {
		t.Errorf("row-major (1,0) = %d, want 3", got)
	}
}

func TestTransposeAsLayoutView(t *testing.T) {
	x := FromSlice([]int32{1, 2, 3, 4, 5, 6}, 2, 3)
	// The transpose [3 2] of a row-major [2 3] buffer is column-major.
	v := x.View(Shape{3, 2}, Layout{0, 1})
	if v.IsRowMajor() {
		t.Fatal("view should not be row-major")
	}
	if got, want := ToSlice[int32](v), []int32{1, 4, 2, 5, 3, 6}; !cmp.Equal(got, want) {
		t.Errorf("transposed view = %v, want %v", got, want)
	}
	if got := ToSlice[int32](v.Contiguous()); !cmp.Equal(got, []int32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("Contiguous = %v", got)
	}
}

func TestConstructors(t *testing.T) {
	if got := ToSlice[float32](Arange[float32](0, 1, 0.25)); !cmp.Equal(got, []float32{0, 0.25, 0.5, 0.75}) {
		t.Errorf("Arange = %v", got)
	}
	if got := ToSlice[int64](Arange[int64](5, 0, -2)); !cmp.Equal(got, []int64{5, 3, 1}) {
		t.Errorf("Arange down = %v", got)
	}
	if got := ToSlice[float64](Linspace(0.0, 1.0, 5)); !cmp.Equal(got, []float64{0, 0.25, 0.5, 0.75, 1}) {
		t.Errorf("Linspace = %v", got)
	}
	if got := Scalar(int32(7)).Item(); got != int32(7) {
		t.Errorf("Scalar Item = %v", got)
	}
	if e := Eye(Float32, 3); !e.Shape().Equal(Shape{3, 3}) || !cmp.Equal(ToSlice[float32](e), []float32{1, 0, 0, 0, 1, 0, 0, 0, 1}) {
		t.Errorf("Eye(Float32, 3) = %v", e)
	}
	if got := ToSlice[bool](Eye(Bool, 2)); !cmp.Equal(got, []bool{true, false, false, true}) {
		t.Errorf("Eye(Bool, 2) = %v", got)
	}
	if got := ToSlice[BF16](Eye(BFloat16, 2)); !cmp.Equal(got, []BF16{ToBF16(1), 0, 0, ToBF16(1)}) {
		t.Errorf("Eye(BFloat16, 2) = %v", got)
	}
	if e := Eye(Int64, 0); e.NumElements() != 0 || !e.Shape().Equal(Shape{0, 0}) {
		t.Errorf("Eye(Int64, 0) = %v", e)
	}
	for what, f := range map[string]func(){"a negative size": func() { Eye(Float32, -1) }, "an invalid dtype": func() { Eye(DType(99), 2) }} {
		if err := Catch(f); err == nil || !strings.Contains(err.Error(), "tensor: Eye:") {
			t.Errorf("Eye of %s: %v", what, err)
		}
	}
	z := Zeros(Float64, 2, 0, 3)
	if z.NumElements() != 0 || z.Rank() != 3 {
		t.Errorf("zero-size tensor: %v", z)
	}
	if got := ToSlice[bool](Ones(Bool, 2)); !cmp.Equal(got, []bool{true, true}) {
		t.Errorf("Ones(Bool) = %v", got)
	}
}

func TestBadInputPanicsWithTypedError(t *testing.T) {
	cases := []struct {
		name string
		fn   func()
		kind error
		msg  string
	}{
		{"FromSlice wrong count", func() { FromSlice([]float32{1, 2, 3}, 2, 2) }, ErrShape, "tensor: FromSlice: shape [2 2] holds 4 elements, got 3"},
		{"negative dim", func() { Zeros(Float32, 2, -1) }, ErrShape, "negative dimension"},
		{"ToSlice dtype", func() { ToSlice[int32](Zeros(Float32, 2)) }, ErrDType, "asked for int32 elements of a float32 tensor"},
		{"Item of many", func() { Zeros(Float32, 2).Item() }, ErrShape, "exactly one element"},
		{"Arange step 0", func() { Arange[int32](0, 3, 0) }, ErrValue, "step is zero"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, ok := r.(*Error)
				if !ok {
					t.Fatalf("panic value %T %v, want *Error", r, r)
				}
				if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("error %q, want kind %v containing %q", err, c.kind, c.msg)
				}
				if !strings.Contains(err.Error(), "tensor_test.go:") {
					t.Errorf("error %q does not name the caller", err)
				}
			}()
			c.fn()
		})
	}
}

func TestRNGIsDeterministicAndSplitsDraws(t *testing.T) {
	a := ToSlice[float32](RandUniform(NewRNG(42), Float32, 0, 1, 1000))
	b := ToSlice[float32](RandUniform(NewRNG(42), Float32, 0, 1, 1000))
	if !cmp.Equal(a, b) {
		t.Fatal("same seed gave different numbers")
	}
	mean := 0.0
	for _, v := range a {
		if v < 0 || v >= 1 {
			t.Fatalf("uniform value %v outside [0, 1)", v)
		}
		mean += float64(v)
	}
	if mean /= 1000; mean < 0.45 || mean > 0.55 {
		t.Errorf("uniform mean %v far from 0.5", mean)
	}
	n := ToSlice[float64](RandNormal(NewRNG(1), Float64, 20000))
	m, v := 0.0, 0.0
	for _, x := range n {
		m += x
	}
	m /= float64(len(n))
	for _, x := range n {
		v += (x - m) * (x - m)
	}
	v /= float64(len(n))
	if m < -0.03 || m > 0.03 || v < 0.95 || v > 1.05 {
		t.Errorf("normal mean %v variance %v", m, v)
	}
	bern := ToSlice[bool](RandBernoulli(NewRNG(3), Bool, 0.25, 4000))
	k := 0
	for _, x := range bern {
		if x {
			k++
		}
	}
	if k < 900 || k > 1100 {
		t.Errorf("bernoulli(0.25) gave %d of 4000", k)
	}
}

// A Bernoulli draw made later from a reserved block (RandBernoulliAt)
// gives what the draw would have given then: two draws from one RNG, and
// their reservations made on a twin RNG, agree element for element; the
// reservations advance the stream as the draws do.
func TestRandBernoulliAtFollowsReservations(t *testing.T) {
	r, twin := NewRNG(9), NewRNG(9)
	for _, n := range []int{7, 12} {
		want := ToSlice[float32](RandBernoulli(r, Float32, 0.3, n))
		base := twin.Reserve(2 * n)
		got := ToSlice[float32](RandBernoulliAt(device.Host(), twin.Key(), base, Float32, 0.3, n))
		if !cmp.Equal(got, want) {
			t.Errorf("%d values from block %d: %v, want %v", n, base, got, want)
		}
	}
	if a, b := ToSlice[float32](RandUniform(r, Float32, 0, 1, 3)), ToSlice[float32](RandUniform(twin, Float32, 0, 1, 3)); !cmp.Equal(a, b) {
		t.Errorf("after the draws and their reservations the streams differ: %v, %v", a, b)
	}
	for _, bad := range []func(){
		func() { twin.Reserve(-1) },
		func() { RandBernoulliAt(device.Host(), twin.Key(), 0, Float32, 1.5, 2) },
		func() { (*RNG)(nil).Key() },
	} {
		if err := Catch(bad); err == nil {
			t.Error("a bad reservation or draw: no error")
		}
	}
}

func TestPrinting(t *testing.T) {
	cases := []struct {
		x    *Tensor
		want string
	}{
		// NumPy's str() of the same arrays (golden: numpy 1.24; the
		// differential suite compares thousands of random ones).
		{FromSlice([]int32{1, 2, 3, 40, 5, 6}, 2, 3), "[[ 1  2  3]\n [40  5  6]] int32[2 3]"},
		{FromSlice([]float32{1, 2.5, -3}), "[ 1.   2.5 -3. ] float32[3]"},
		{FromSlice([]float32{0.5, -1, 2}), "[ 0.5 -1.   2. ] float32[3]"},
		{FromSlice([]float32{1, -2, 4}), "[ 1. -2.  4.] float32[3]"},
		{FromSlice([]float64{1, 2}), "[1. 2.] float64[2]"},
		{nil, "<nil>"}, // a nil gradient, once "<nil> <nil>"
		{Scalar(true), "True bool[]"},
		{FromSlice([]bool{true, false}), "[ True False] bool[2]"},
		{FromSlice([]float64{1e-9, 1}), "[1.e-09 1.e+00] float64[2]"},
		{FromSlice([]float64{1e5, 1.5}), "[1.0e+05 1.5e+00] float64[2]"},
		{FromSlice([]float64{math.NaN(), 1.5, math.Inf(-1)}), "[ nan  1.5 -inf] float64[3]"},
		{FromSlice([]float64{0.1234567891, 2}), "[0.12345679 2.        ] float64[2]"},
		{Scalar(0.1), "0.1 float64[]"},
		{Scalar(-2.0), "-2.0 float64[]"},
		{Scalar(1e-5), "1e-05 float64[]"},
		{Zeros(Float32, 0), "[] float32[0]"},
		{Zeros(Float32, 2, 0), "[] float32[2 0]"},
		{Arange[float64](0, 30, 1), "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n" +
			" 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.] float64[30]"},
	}
	for _, c := range cases {
		if got := c.x.String(); got != c.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, c.want)
		}
		if got := fmt.Sprintf("%v", c.x); got != c.want {
			t.Errorf("%%v =\n%s\nwant\n%s", got, c.want)
		}
	}
	big := Arange[int32](0, 2000, 1)
	if got := big.String(); got != "[   0    1    2 ... 1997 1998 1999] int32[2000]" {
		t.Errorf("elided = %q", got)
	}
	cube := Zeros(Int32, 2, 2, 2).String()
	if want := "[[[0 0]\n  [0 0]]\n\n [[0 0]\n  [0 0]]] int32[2 2 2]"; cube != want {
		t.Errorf("rank 3 =\n%s\nwant\n%s", cube, want)
	}
}

// Every permutation of a ragged 3-d shape, copied by Contiguous (which
// takes the tiled path for swapped last dimensions), against index maths.
func TestContiguousPermutations(t *testing.T) {
	shape := Shape{3, 17, 33}
	x := Arange[int64](0, int64(shape.NumElements()), 1)
	for _, perm := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		out := make(Shape, 3)
		l := make(Layout, 3)
		inv := make([]int, 3)
		for i, p := range perm {
			out[i] = shape[p]
			inv[p] = i
		}
		for i := range l {
			l[i] = inv[2-i] // row-major source, seen through the permutation
		}
		got := ToSlice[int64](x.View(out, l).Contiguous())
		idx := make([]int, 3)
		for k, v := range got {
			MultiIndex(out, nil, k, idx)
			src := make([]int, 3)
			for i, p := range perm {
				src[p] = idx[i]
			}
			if want := int64(LinearIndex(shape, nil, src)); v != want {
				t.Fatalf("perm %v: element %v = %d, want %d", perm, idx, v, want)
			}
		}
	}
}

func TestScalarOfKeepsValuesExact(t *testing.T) {
	for _, c := range []struct {
		dt   DType
		v    any
		want any
		err  string
	}{
		{Float32, 0.1, float32(0.1), ""},
		{Float64, 3, float64(3), ""},
		{Int32, 2.0, int32(2), ""},
		{Int64, int64(1) << 62, int64(1) << 62, ""},
		{Uint8, 255, uint8(255), ""},
		{Bool, true, true, ""},
		{BFloat16, 0.1, ToBF16(0.1), ""}, // halves round to nearest
		{Float16, 70000, ToF16(70000), ""},
		{Float32, ToF16(2.5), float32(2.5), ""},
		{Int32, ToBF16(3), int32(3), ""},
		{Int32, 0.5, nil, "0.5 is not an integer"},
		{Uint8, 256, nil, "256 is outside uint8's range"},
		{Int32, int64(1) << 40, nil, "1099511627776 is outside int32's range"},
		{Float32, true, nil, "a bool is not a float32"},
		{Bool, 1, nil, "1 is not a bool"},
		{Int64, "1", nil, "string is not a number or bool"},
	} {
		got, err := ScalarOf(c.dt, c.v)
		if c.err != "" {
			if err == nil || err.Error() != c.err || !errors.Is(err, ErrDType) {
				t.Errorf("ScalarOf(%v, %v): error %v, want %q wrapping ErrDType", c.dt, c.v, err, c.err)
			}
			continue
		}
		if err != nil || got.DType() != c.dt || got.Item() != c.want || got.IsWeak() {
			t.Errorf("ScalarOf(%v, %v) = %v, %v", c.dt, c.v, got, err)
		}
	}
}

// A long attribute list is cut in the message (issue 31: an index's whole
// mask was printed).
func TestErrorKeepsLongAttrsShort(t *testing.T) {
	e := &Error{Pkg: "ops", Op: "Pad", Kind: ErrAttr, Detail: "bad", Attrs: strings.Repeat("x", 10000)}
	if msg := e.Error(); len(msg) > 400 || !strings.Contains(msg, "(9760 bytes more)") {
		t.Errorf("a %d-byte message: %.120s", len(msg), msg)
	}
}

// Float and Item on a tensor of more or fewer than one element name the
// method called, and say how to get one element from many.
func TestOneElementReadsNameTheirMethod(t *testing.T) {
	m := FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	for _, c := range []struct {
		name string
		read func()
		want string
	}{
		{"Float", func() { m.Float() }, "tensor: Float: Float needs exactly one element, the tensor has 4 (reduce it to one first: ops.Sum, ops.Mean)"},
		{"Item", func() { m.Item() }, "tensor: Item: Item needs exactly one element, the tensor has 4 (reduce"},
		{"Float of none", func() { Zeros(Float32, 0).Float() }, "tensor: Float: Float needs exactly one element, the tensor has 0 (inputs"},
	} {
		err := Catch(c.read)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, ErrShape) {
			t.Errorf("%s: %v; want an ErrShape starting %q", c.name, err, c.want)
		}
	}
}

// RandInt draws integers uniform in [lo, hi) of each integer dtype: every
// value in range, every value of a small range drawn about equally often,
// the same numbers from the same seed, ranges at the dtypes' limits and
// beyond int64's half; bad dtypes, empty ranges and bounds a dtype cannot
// hold are errors.
func TestRandInt(t *testing.T) {
	r := NewRNG(4)
	counts := map[int64]int{}
	for _, v := range ToSlice[int32](RandInt(r, Int32, -3, 4, 7000)) {
		counts[int64(v)]++
	}
	for v := int64(-3); v < 4; v++ {
		// 1000 expected a value; a binomial's deviation is about 30.
		if c := counts[v]; c < 850 || c > 1150 {
			t.Errorf("value %d drawn %d times in 7000 draws of 7 values", v, c)
		}
	}
	if len(counts) != 7 {
		t.Errorf("values drawn: %v, want -3 to 3", counts)
	}
	a, b := ToSlice[int64](RandInt(NewRNG(5), Int64, 0, 1<<40, 6)), ToSlice[int64](RandInt(NewRNG(5), Int64, 0, 1<<40, 6))
	if !cmp.Equal(a, b) {
		t.Errorf("one seed, two draws: %v and %v", a, b)
	}
	for _, c := range []struct {
		dt     DType
		lo, hi int64
	}{
		{Uint8, 0, 256}, {Int32, math.MinInt32, math.MaxInt32 + 1}, {Int64, math.MinInt64, math.MaxInt64}, {Int64, -1 << 62, 1 << 62},
	} {
		x := RandInt(r, c.dt, c.lo, c.hi, 200)
		var vs []int64
		switch c.dt {
		case Uint8:
			vs = mapSlice(ToSlice[uint8](x), func(v uint8) int64 { return int64(v) })
		case Int32:
			vs = mapSlice(ToSlice[int32](x), func(v int32) int64 { return int64(v) })
		default:
			vs = ToSlice[int64](x)
		}
		low, high := false, false // draws in the range's lower and upper halves
		for _, v := range vs {
			if v < c.lo || v > c.hi-1 {
				t.Errorf("%v in [%d, %d): drew %v", c.dt, c.lo, c.hi, v)
			}
			mid := c.lo/2 + c.hi/2
			low, high = low || v < mid, high || v >= mid
		}
		if !low || !high {
			t.Errorf("%v in [%d, %d): 200 draws all in one half", c.dt, c.lo, c.hi)
		}
	}
	for name, bad := range map[string]func(){
		"float32":        func() { RandInt(r, Float32, 0, 5, 2) },
		"an empty range": func() { RandInt(r, Int32, 5, 5, 2) },
		"beyond uint8":   func() { RandInt(r, Uint8, 0, 257, 2) },
		"below int32":    func() { RandInt(r, Int32, math.MinInt32-1, 0, 2) },
		"a nil RNG":      func() { RandInt(nil, Int32, 0, 5, 2) },
		"a bad shape":    func() { RandInt(r, Int32, 0, 5, -1) },
	} {
		if err := Catch(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
