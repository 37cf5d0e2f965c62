package cuda

import (
	"fmt"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Copies that the tiled transpose kernels do (their source contiguous
// along another dimension than the destination) agree with the CPU:
// sizes that are and are not multiples of the tile, batches, the layout
// changes between NHWC and NCHW, views with offsets, every element size.
func TestTransposeKernels(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(3)
	cases := []struct {
		shape []int
		perm  []int
	}{
		{[]int{64, 32}, []int{1, 0}},
		{[]int{33, 70}, []int{1, 0}},
		{[]int{1, 5}, []int{1, 0}},
		{[]int{3, 40, 17}, []int{0, 2, 1}},
		{[]int{2, 5, 6, 7}, []int{0, 3, 1, 2}}, // NHWC -> NCHW
		{[]int{2, 7, 5, 6}, []int{0, 2, 3, 1}}, // NCHW -> NHWC
		{[]int{4, 3, 2}, []int{2, 1, 0}},       // three axes move: the strided kernel
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Uint8} {
		for _, c := range cases {
			x := ops.Cast(tensor.RandUniform(r, tensor.Float32, 0, 100, c.shape...), dt)
			name := fmt.Sprintf("%v %v perm %v", dt, c.shape, c.perm)
			agree(t, name, ops.Transpose(onGPU(t, d, x), c.perm...).Contiguous(), ops.Transpose(x, c.perm...).Contiguous())
		}
		// A transposed view of a slice: the source starts past its buffer's start.
		x := ops.Cast(tensor.RandUniform(r, tensor.Float32, 0, 100, 9, 40), dt)
		sl := func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Transpose(ops.Slice(x, []int{2, 3}, []int{9, 38}, nil), 1, 0).Contiguous()
		}
		agree(t, fmt.Sprintf("%v slice", dt), sl(onGPU(t, d, x)), sl(x))
	}
}

// planTranspose takes the copies it should and only those.
func TestPlanTranspose(t *testing.T) {
	cases := []struct {
		shape, dst, src []int
		want            transposePlan
	}{
		{[]int{4, 6}, []int{6, 1}, []int{1, 4}, transposePlan{batch: 1, rows: 4, cols: 6, drow: 6, scol: 4, name: "transpose_b32", planned: true}},
		{[]int{2, 4, 6}, []int{24, 6, 1}, []int{24, 1, 4}, transposePlan{batch: 2, rows: 4, cols: 6, dbatch: 24, drow: 6, sbatch: 24, scol: 4, name: "transpose_b32", planned: true}},
		{[]int{4, 6}, []int{6, 1}, []int{6, 1}, transposePlan{}},                      // contiguous both
		{[]int{4, 6}, []int{6, 1}, []int{0, 1}, transposePlan{}},                      // a broadcast row
		{[]int{4, 3, 2}, []int{6, 2, 1}, []int{1, 4, 12}, transposePlan{}},            // a full reversal: rank 3, source not contiguous along the middle
		{[]int{2, 3, 4, 5}, []int{60, 20, 5, 1}, []int{7, 40, 1, 4}, transposePlan{}}, // rank 4 after merging
		{[]int{2, 3, 4, 5}, []int{60, 20, 5, 1}, []int{60, 1, 15, 3}, transposePlan{batch: 2, rows: 3, cols: 20, dbatch: 60, drow: 20, sbatch: 60, scol: 3, name: "transpose_b32", planned: true}}, // NCHW from NHWC
	}
	for _, c := range cases {
		if got := planTranspose(c.shape, c.dst, c.src, 4); got != c.want {
			t.Errorf("shape %v dst %v src %v: %+v, want %+v", c.shape, c.dst, c.src, got, c.want)
		}
	}
}

// A strided copy whose innermost runs are contiguous on both sides moves
// them in elements of up to 8 bytes (widenRuns) where the runs, strides,
// offsets and addresses allow, and in the elements' own size where they
// do not; its values agree with the CPU's either way.
func TestStridedCopiesMoveWholeRuns(t *testing.T) {
	d := testGPU(t)
	ctx, _ := d.ctx.(*emu.Context)
	r := tensor.NewRNG(4)
	for _, c := range []struct {
		what   string
		dt     tensor.DType
		shape  []int
		view   func(x *tensor.Tensor) *tensor.Tensor
		kernel string
	}{
		{"a head split in bfloat16", tensor.BFloat16, []int{2, 8, 4, 16},
			func(x *tensor.Tensor) *tensor.Tensor { return ops.Transpose(x, 0, 2, 1, 3) }, "copy_b64"},
		{"whole float32 rows from column 8", tensor.Float32, []int{6, 40},
			func(x *tensor.Tensor) *tensor.Tensor { return ops.Slice(x, []int{0, 8}, []int{6, 40}, nil) }, "copy_b64"},
		{"float16 runs of six", tensor.Float16, []int{5, 3, 6},
			func(x *tensor.Tensor) *tensor.Tensor { return ops.Transpose(x, 1, 0, 2) }, "copy_b32"},
		{"bfloat16 runs of three", tensor.BFloat16, []int{5, 4, 3},
			func(x *tensor.Tensor) *tensor.Tensor { return ops.Transpose(x, 1, 0, 2) }, "copy_b16"},
		{"bfloat16 rows from an odd column", tensor.BFloat16, []int{6, 40},
			func(x *tensor.Tensor) *tensor.Tensor { return ops.Slice(x, []int{0, 3}, []int{6, 39}, nil) }, "copy_b16"},
		{"bytes in runs of eight", tensor.Uint8, []int{3, 5, 8},
			func(x *tensor.Tensor) *tensor.Tensor { return ops.Transpose(x, 1, 0, 2) }, "copy_b64"},
	} {
		x := ops.Cast(tensor.RandUniform(r, tensor.Float32, 0, 100, c.shape...), c.dt)
		var kernels []string
		if ctx != nil {
			waitGPU(t, d)
			ctx.SetProfiler(func(p emu.Profile) { kernels = append(kernels, p.Kernel) })
		}
		got := c.view(onGPU(t, d, x)).Contiguous()
		waitGPU(t, d)
		if ctx != nil {
			ctx.SetProfiler(nil)
			if !slices.Contains(kernels, c.kernel) {
				t.Errorf("%s: kernels %v, want %s", c.what, kernels, c.kernel)
			}
		}
		agree(t, c.what, got, c.view(x).Contiguous())
	}
}
