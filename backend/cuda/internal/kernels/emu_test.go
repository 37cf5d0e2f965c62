package kernels

import (
	"encoding/binary"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
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
		args := new(cu.Args).Ptr(out).Ptr(pp).Ptr(pi).U64(outer).U64(n).U64(uint64(len(idx)))
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
		args = divisorArgs(new(cu.Args).Ptr(back).Ptr(pi).Ptr(out).U64(outer).U64(n).U64(uint64(len(idx))), inner, outer*inner, narrow)
		e.launch(e.kernel("index", "scatter_b32_s32"), cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: 32, Y: 1, Z: 1}, args)
		gotBack := e.download(back, outer*n*inner)
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
