package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
)

// transposePlan is a strided copy the transpose kernels do: batch x rows x
// cols elements where the source runs along the rows (stride 1) and the
// destination along the columns.
type transposePlan struct {
	batch, rows, cols int
	dbatch, drow      int // destination strides
	sbatch, scol      int // source strides
	name              string
	planned           bool
}

// planTranspose returns the plan for a copy of shape with destination
// strides dSt and source strides sSt, where one applies: after merging,
// at most three dimensions; the destination contiguous along the last,
// the source along the one before (and not along the last). Such a copy
// done by the strided kernel reads one element per 32-byte sector.
func planTranspose(shape, dSt, sSt []int, esize int) transposePlan {
	name := map[int]string{1: "transpose_b8", 2: "transpose_b16", 4: "transpose_b32", 8: "transpose_b64"}[esize]
	merged, st := kernels.MergeDims(shape, [][]int{dSt, sSt})
	r := len(merged)
	if name == "" || r < 2 || r > 3 {
		return transposePlan{}
	}
	d, s := st[0], st[1]
	if d[r-1] != 1 || s[r-2] != 1 || s[r-1] == 1 {
		return transposePlan{}
	}
	p := transposePlan{batch: 1, rows: merged[r-2], cols: merged[r-1], drow: d[r-2], scol: s[r-1], name: name, planned: true}
	if r == 3 {
		p.batch, p.dbatch, p.sbatch = merged[0], d[0], s[0]
	}
	if p.batch > 65535 || p.rows >= 1<<31 || p.cols >= 1<<31 {
		return transposePlan{}
	}
	return p
}

// transpose queues the plan's kernel.
func (d *Device) transpose(p transposePlan, dst, src cu.Ptr, dOff, sOff int) error {
	f, err := d.function("copy", p.name)
	if err != nil {
		return err
	}
	const t = kernels.TransposeTile
	grid := cu.Dim3{X: (p.cols + t - 1) / t, Y: (p.rows + t - 1) / t, Z: p.batch}
	block := cu.Dim3{X: t, Y: kernels.TransposeRows, Z: 1}
	args := newArgs().Ptr(dst).Ptr(src).U32(uint32(p.rows)).U32(uint32(p.cols)).
		U64(uint64(p.dbatch)).U64(uint64(p.drow)).U64(uint64(p.sbatch)).U64(uint64(p.scol)).
		U64(uint64(dOff)).U64(uint64(sOff))
	err = d.ctx.Do(func() error { return d.ctx.Launch(f, grid, block, 0, d.s, args) })
	freeArgs(args)
	return err
}
