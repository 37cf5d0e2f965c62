package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/tensor"
)

// emuEnv runs a family's kernels on the emulator, for tests of the index
// arithmetic the generator writes.
type emuEnv struct {
	t   *testing.T
	ctx cu.Context
	s   cu.Stream
}

func newEmuEnv(t *testing.T) *emuEnv {
	t.Helper()
	ctx, err := emu.New(emu.DefaultConfig).Retain(0)
	if err != nil {
		t.Fatal(err)
	}
	e := &emuEnv{t: t, ctx: ctx}
	e.do(func() (err error) { e.s, err = ctx.StreamCreate(); return })
	return e
}

func (e *emuEnv) do(fn func() error) {
	e.t.Helper()
	if err := e.ctx.Do(fn); err != nil {
		e.t.Fatal(err)
	}
}

// kernel loads family's module and returns kernel name.
func (e *emuEnv) kernel(family, name string) cu.Function {
	e.t.Helper()
	var f cu.Function
	for _, fam := range Families() {
		if fam.Name != family {
			continue
		}
		e.do(func() error {
			m, err := e.ctx.ModuleLoad(fam.Module())
			if err != nil {
				return err
			}
			f, err = e.ctx.Function(m, name)
			return err
		})
	}
	return f
}

// upload copies v to a new device buffer (synchronously).
func (e *emuEnv) upload(v []uint32) cu.Ptr {
	e.t.Helper()
	var p cu.Ptr
	e.do(func() error {
		host, err := e.ctx.MemAllocHost(4 * max(len(v), 1))
		if err != nil {
			return err
		}
		for i, x := range v {
			binary.LittleEndian.PutUint32(host[4*i:], x)
		}
		if p, err = e.ctx.MemAlloc(4*max(len(v), 1), e.s); err != nil {
			return err
		}
		if err := e.ctx.MemcpyHtoD(p, host, e.s); err != nil {
			return err
		}
		if err := e.ctx.StreamSynchronize(e.s); err != nil {
			return err
		}
		return e.ctx.MemFreeHost(host)
	})
	return p
}

// download reads n 32-bit words at p.
func (e *emuEnv) download(p cu.Ptr, n int) []uint32 {
	e.t.Helper()
	out := make([]uint32, n)
	e.do(func() error {
		host, err := e.ctx.MemAllocHost(4 * n)
		if err != nil {
			return err
		}
		if err := e.ctx.MemcpyDtoH(host, p, e.s); err != nil {
			return err
		}
		if err := e.ctx.StreamSynchronize(e.s); err != nil {
			return err
		}
		for i := range out {
			out[i] = binary.LittleEndian.Uint32(host[4*i:])
		}
		return e.ctx.MemFreeHost(host)
	})
	return out
}

// launch runs f on grid x block threads and waits.
func (e *emuEnv) launch(f cu.Function, grid, block cu.Dim3, args *cu.Args) {
	e.t.Helper()
	e.do(func() error {
		if err := e.ctx.Launch(f, grid, block, 0, e.s, args); err != nil {
			return err
		}
		return e.ctx.StreamSynchronize(e.s)
	})
}

// divisorArgs appends a divisor parameter: v with Divisor's constants, or
// with zeros (the 64-bit path) where narrow is false.
func divisorArgs(a *cu.Args, v, limit int, narrow bool) *cu.Args {
	m, s := Divisor(v, limit)
	if !narrow {
		m, s = 0, 0
	}
	return a.U64(uint64(v)).U32(m).U32(s)
}

// Gather (cells: two divisions per element) and scatter (columns: one per
// column) put every element where the CPU would, with the 32-bit
// divisions and with the 64-bit ones.
func TestDivisorPathsAgree(t *testing.T) {
	e := newEmuEnv(t)
	const outer, n, inner = 3, 5, 7
	idx := []uint32{4, 0, 2, 2, 1, 3}
	params := make([]uint32, outer*n*inner)
	for i := range params {
		params[i] = uint32(100 + i)
	}
	for _, narrow := range []bool{true, false} {
		pp, pi := e.upload(params), e.upload(idx)
		total := outer * len(idx) * inner
		out := e.upload(make([]uint32, total))
		errSlot := e.upload([]uint32{0xffffffff, 0xffffffff})
		args := new(cu.Args).Ptr(out).Ptr(pp).Ptr(pi).Ptr(errSlot).U64(outer).U64(n).U64(uint64(len(idx)))
		args = divisorArgs(divisorArgs(args, inner, total, narrow), len(idx)*inner, total, narrow)
		e.launch(e.kernel("index", "gather_b32_s32"), cu.Dim3{X: 2, Y: 1, Z: 1}, cu.Dim3{X: 64, Y: 1, Z: 1}, args)
		got := e.download(out, total)
		for o := range outer {
			for j, ix := range idx {
				for b := range inner {
					if w, g := params[(o*n+int(ix))*inner+b], got[(o*len(idx)+j)*inner+b]; g != w {
						t.Fatalf("narrow %v: gather out[%d,%d,%d] = %d, want %d", narrow, o, j, b, g, w)
					}
				}
			}
		}
		// Scatter the gathered rows back into zeros: the last update wins.
		back := e.upload(make([]uint32, outer*n*inner))
		args = divisorArgs(new(cu.Args).Ptr(back).Ptr(pi).Ptr(out).Ptr(errSlot).U64(outer).U64(n).U64(uint64(len(idx))), inner, outer*inner, narrow)
		e.launch(e.kernel("index", "scatter_b32_s32"), cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: 32, Y: 1, Z: 1}, args)
		gotBack := e.download(back, outer*n*inner)
		if slot := e.download(errSlot, 2); slot[0] != 0xffffffff || slot[1] != 0xffffffff {
			t.Fatalf("narrow %v: good indices left %x in the check slot", narrow, slot)
		}
		for o := range outer {
			for r := range n {
				for b := range inner {
					want := uint32(0)
					for _, ix := range idx {
						if int(ix) == r {
							want = params[(o*n+r)*inner+b]
						}
					}
					if g := gotBack[(o*n+r)*inner+b]; g != want {
						t.Fatalf("narrow %v: scatter back[%d,%d,%d] = %d, want %d", narrow, o, r, b, g, want)
					}
				}
			}
		}
	}
}

// The window kernels give the same results on the narrow path and on the
// 64-bit one (forced by clearing the flag), over a window with strides,
// dilations of both kinds and padding on both sides; the conformance
// tests hold the narrow path to the CPU.
func TestWindowPathsAgree(t *testing.T) {
	e := newEmuEnv(t)
	// Operand [2, 7, 6]: a window [1, 3, 2], strides [1, 2, 1], window
	// dilation [1, 2, 1], base dilation [1, 1, 2], low padding [0, 1, 1].
	dims := []WindowDim{
		{N: 2, Out: 2, Win: 1, Stride: 1, WindowDilation: 1, PadLow: 0, BaseDilation: 1, XStride: 42},
		{N: 7, Out: 3, Win: 3, Stride: 2, WindowDilation: 2, PadLow: 1, BaseDilation: 1, XStride: 6},
		{N: 6, Out: 11, Win: 2, Stride: 1, WindowDilation: 1, PadLow: 1, BaseDilation: 2, XStride: 1},
	}
	windows, taps, elems := 2*3*11, 3*2, 2*7*6
	x := make([]uint32, elems)
	for i := range x {
		x[i] = uint32((i*7919)%97 + 1)
	}
	src := make([]uint32, windows)
	for i := range src {
		src[i] = uint32(i%13 + 1)
	}
	run := func(narrow bool) map[string][]uint32 {
		g := WindowGeometry(dims)
		if !narrow {
			binary.LittleEndian.PutUint64(g[wgNarrow:], 0)
		}
		px, psrc, pinit := e.upload(x), e.upload(src), e.upload([]uint32{0})
		out := map[string][]uint32{}
		launch := func(name string, n, words int, args func(o cu.Ptr) *cu.Args) {
			o := e.upload(make([]uint32, words))
			e.launch(e.kernel("window", name), cu.Dim3{X: 3, Y: 1, Z: 1}, cu.Dim3{X: 64, Y: 1, Z: 1}, args(o).U64(uint64(n)).Bytes(g, 8))
			out[name] = e.download(o, words)
		}
		launch("window_patches_b32", windows*taps, windows*taps, func(o cu.Ptr) *cu.Args { return new(cu.Args).Ptr(o).Ptr(px).Ptr(pinit) })
		patches := e.upload(out["window_patches_b32"])
		launch("window_scatter_s32", elems, elems, func(o cu.Ptr) *cu.Args { return new(cu.Args).Ptr(o).Ptr(patches) })
		launch("window_reduce_max_s32", windows, windows, func(o cu.Ptr) *cu.Args { return new(cu.Args).Ptr(o).Ptr(px).Ptr(pinit) })
		launch("window_select_ge_s32", windows, 2*windows, func(o cu.Ptr) *cu.Args { return new(cu.Args).Ptr(o).Ptr(px) })
		sel := e.upload(out["window_select_ge_s32"])
		launch("window_select_scatter_s32", elems, elems, func(o cu.Ptr) *cu.Args { return new(cu.Args).Ptr(o).Ptr(sel).Ptr(psrc).Ptr(pinit) })
		return out
	}
	narrow, wide := run(true), run(false)
	for name, want := range wide {
		got := narrow[name]
		nonzero := false
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: element %d is %d on the narrow path, %d on the 64-bit one", name, i, got[i], want[i])
			}
			nonzero = nonzero || want[i] != 0
		}
		if !nonzero {
			t.Errorf("%s wrote only zeros: the case tests nothing", name)
		}
	}
}

// The elementwise kernels of full operands give every element the same
// value through their three paths: 16-byte vectors with a tail of n mod 4
// (aligned pointers), and one element at a time (pointers off 16-byte
// alignment).
func TestVectorizedElementwise(t *testing.T) {
	e := newEmuEnv(t)
	f := e.kernel("binary", "add_s32_vv")
	for _, n := range []int{1, 3, 4, 37, 64} {
		for _, skew := range []int{0, 1} { // elements the pointers start past a 16-byte boundary
			a, b := make([]uint32, n+skew), make([]uint32, n+skew)
			for i := range a {
				a[i], b[i] = uint32(i*7), uint32(1000+i)
			}
			pa, pb, po := e.upload(a), e.upload(b), e.upload(make([]uint32, n+skew))
			off := cu.Ptr(4 * skew)
			e.launch(f, cu.Dim3{X: 2, Y: 1, Z: 1}, cu.Dim3{X: 32, Y: 1, Z: 1}, new(cu.Args).Ptr(po+off).Ptr(pa+off).Ptr(pb+off).U64(uint64(n)))
			got := e.download(po, n+skew)
			for i := skew; i < n+skew; i++ {
				if got[i] != a[i]+b[i] {
					t.Fatalf("n %d, skew %d: element %d = %d, want %d", n, skew, i, got[i], a[i]+b[i])
				}
			}
		}
	}
}

// The elementwise kernels whose operands differ in size (compare to
// bools, select on a bool, casts between widths, bool ops sixteen a
// thread) agree with a reference on every element through the grouped
// path and its tail (aligned pointers) and the element-by-element one
// (pointers off alignment).
func TestVectorizedMixedSizes(t *testing.T) {
	e := newEmuEnv(t)
	f32 := func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }
	f64 := func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }
	put32 := func(b []byte, v float64) { binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v))) }
	put64 := func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) }
	value := func(i, j int) float64 { return float64((i*7+j*3)%11) - 5 } // input j's element i
	for _, c := range []struct {
		family, name string
		ins          []int // element sizes of the inputs
		out          int
		make         func(in, i int, b []byte) // writes input in's element i
		want         func(ins [][]byte, o []byte)
	}{
		{"compare", "lt_f32_vv", []int{4, 4}, 1, func(in, i int, b []byte) { put32(b, value(i, in)) },
			func(ins [][]byte, o []byte) { o[0] = boolByte(f32(ins[0]) < f32(ins[1])) }},
		{"compare", "select_f64_vv", []int{1, 8, 8}, 8, func(in, i int, b []byte) {
			if in == 0 {
				b[0] = byte(i % 3 % 2)
			} else {
				put64(b, value(i, in))
			}
		}, func(ins [][]byte, o []byte) {
			if ins[0][0] != 0 {
				copy(o, ins[1])
			} else {
				copy(o, ins[2])
			}
		}},
		{"cast", "cast_b_f64", []int{1}, 8, func(_, i int, b []byte) { b[0] = byte(i % 3 % 2) },
			func(ins [][]byte, o []byte) { put64(o, float64(ins[0][0])) }},
		{"cast", "cast_f64_u8", []int{8}, 1, func(_, i int, b []byte) { put64(b, float64(i*37%256)+0.5) },
			func(ins [][]byte, o []byte) { o[0] = byte(f64(ins[0])) }},
		{"unary", "not_b", []int{1}, 1, func(_, i int, b []byte) { b[0] = byte(i % 5 % 2) },
			func(ins [][]byte, o []byte) { o[0] = boolByte(ins[0][0] == 0) }},
	} {
		f := e.kernel(c.family, c.name)
		for _, n := range []int{1, 3, 15, 16, 17, 37, 64} {
			for _, skew := range []int{0, 1} { // elements the pointers start past a 16-byte boundary
				var in [][]byte
				args := new(cu.Args)
				for j, size := range c.ins {
					b := make([]byte, (n+skew)*size)
					for i := range n {
						c.make(j, i, b[(skew+i)*size:])
					}
					in = append(in, b)
				}
				po := e.uploadBytes(make([]byte, (n+skew)*c.out))
				args.Ptr(po + cu.Ptr(skew*c.out))
				for j, b := range in {
					args.Ptr(e.uploadBytes(b) + cu.Ptr(skew*c.ins[j]))
				}
				e.launch(f, cu.Dim3{X: 2, Y: 1, Z: 1}, cu.Dim3{X: 32, Y: 1, Z: 1}, args.U64(uint64(n)))
				got := e.downloadBytes(po, (n+skew)*c.out)
				for i := range n {
					ins := make([][]byte, len(in))
					for j, b := range in {
						ins[j] = b[(skew+i)*c.ins[j]:][:c.ins[j]]
					}
					want := make([]byte, c.out)
					c.want(ins, want)
					if g := got[(skew+i)*c.out:][:c.out]; string(g) != string(want) {
						t.Fatalf("%s, n %d, skew %d: element %d is % x, want % x", c.name, n, skew, i, g, want)
					}
				}
			}
		}
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// uploadBytes copies b (padded to whole words) to the device.
func (e *emuEnv) uploadBytes(b []byte) cu.Ptr {
	words := make([]uint32, (len(b)+3)/4)
	for i, x := range b {
		words[i/4] |= uint32(x) << (8 * (i % 4))
	}
	return e.upload(words)
}

// downloadBytes copies n bytes from the device.
func (e *emuEnv) downloadBytes(p cu.Ptr, n int) []byte {
	words := e.download(p, (n+3)/4)
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(words[i/4] >> (8 * (i % 4)))
	}
	return out
}

// The narrow casts' integer arithmetic rounds as tensor.ToBF16, ToF16,
// ToF8E4M3 and ToF8E5M2 do (random float32 patterns, halfway cases, binary16's
// subnormal and overflow range, NaN, infinities, saturation), and widens
// every pattern of each to its exact float32 value.
func TestHalfCasts(t *testing.T) {
	e := newEmuEnv(t)
	r := rand.New(rand.NewPCG(5, 9))
	in := make([]uint32, 20000)
	for i := range in {
		b := r.Uint32()
		switch i % 6 {
		case 1:
			b = b&^0xffff | 0x8000 | uint32(r.IntN(2))
		case 2:
			b = b&^0x1fff | 0x1000
		case 3:
			b = b&0x807fffff | []uint32{0, 101, 102, 103, 112, 113, 142, 143, 255}[r.IntN(9)]<<23
		}
		in[i] = b
	}
	run := func(name string, src []uint32, srcSize, dstSize int) []byte {
		buf := make([]byte, len(src)*srcSize)
		for i, v := range src {
			for j := range srcSize {
				buf[i*srcSize+j] = byte(v >> (8 * j))
			}
		}
		po := e.uploadBytes(make([]byte, len(src)*dstSize))
		f := e.kernel("cast", name)
		e.launch(f, cu.Dim3{X: 8, Y: 1, Z: 1}, cu.Dim3{X: 128, Y: 1, Z: 1},
			new(cu.Args).Ptr(po).Ptr(e.uploadBytes(buf)).U64(uint64(len(src))))
		return e.downloadBytes(po, len(src)*dstSize)
	}
	same := func(a, b float32) bool {
		return a == b && math.Signbit(float64(a)) == math.Signbit(float64(b)) || a != a && b != b
	}
	for _, c := range []struct {
		to    string
		size  int
		round func(float32) (uint16, float32)
		value func(uint16) float32
	}{
		{"bf16", 2, func(f float32) (uint16, float32) { h := tensor.ToBF16(f); return uint16(h), h.Float32() },
			func(b uint16) float32 { return tensor.BF16(b).Float32() }},
		{"f16", 2, func(f float32) (uint16, float32) { h := tensor.ToF16(f); return uint16(h), h.Float32() },
			func(b uint16) float32 { return tensor.F16(b).Float32() }},
		{"f8e4m3", 1, func(f float32) (uint16, float32) { h := tensor.ToF8E4M3(f); return uint16(h), h.Float32() },
			func(b uint16) float32 { return tensor.F8E4M3(b).Float32() }},
		{"f8e5m2", 1, func(f float32) (uint16, float32) { h := tensor.ToF8E5M2(f); return uint16(h), h.Float32() },
			func(b uint16) float32 { return tensor.F8E5M2(b).Float32() }},
	} {
		got := run("cast_f32_"+c.to, in, 4, c.size)
		for i, b := range in {
			f := math.Float32frombits(b)
			want, wv := c.round(f)
			g := uint16(got[c.size*i])
			if c.size == 2 {
				g |= uint16(got[2*i+1]) << 8
			}
			if g != want && !(f != f && wv != wv) {
				t.Fatalf("cast_f32_%s(%g = %#08x) = %#04x, want %#04x", c.to, f, b, g, want)
			}
		}
		all := make([]uint32, 1<<(8*c.size))
		for i := range all {
			all[i] = uint32(i)
		}
		wide := run("cast_"+c.to+"_f32", all, c.size, 4)
		for i := range all {
			g := math.Float32frombits(binary.LittleEndian.Uint32(wide[4*i:]))
			if w := c.value(uint16(i)); !same(g, w) {
				t.Fatalf("cast_%s_f32(%#04x) = %g, want %g", c.to, i, g, w)
			}
		}
	}
}
