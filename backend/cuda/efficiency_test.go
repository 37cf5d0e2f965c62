package cuda

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The emulator counts what each kernel does (package emu's Profile), so a
// slow kernel shows on every machine, before any GPU runs it. Each
// bandwidth-bound kernel is held to the targets below: a sector efficiency
// (the least 32-byte sectors its warps' distinct bytes fill, over those
// they touch) for its loads and for its stores; an instruction budget per
// element (instructions over the float32 elements of its larger side,
// loads or stores); no 64-bit division (sizes divide through constants
// the host computes, kernels.Divisor); and enough threads to fill a GPU
// (one for every 16 elements, or 32768). The budgets and the threads
// apply to launches of at least smallLaunch elements: below, a launch's
// time is its latency, whatever it runs. A kernel that trails a target
// has a debt naming why and a ceiling at what it does today, so that it
// gets no worse; a debt paid fails too, so that the entry goes.

// kernelBudget is a kernel's limits.
type kernelBudget struct {
	instr float64 // instructions per element, at most
	debt  string  // why the kernel trails the targets; empty where it meets them
	// For a debt: what it does today, at worst.
	efficiency float64 // sector efficiency, at least
	div64      bool    // 64-bit divisions allowed
	serial     bool    // fewer threads than the target allowed
}

// The targets.
const (
	targetEfficiency  = 0.9
	elementsPerThread = 16
	enoughThreads     = 32768
	smallLaunch       = 2048
)

// Instruction budgets per element by kind of kernel (float32, the shapes
// of efficiencyCases; parameter loads are not counted, as ptxas folds
// them): an elementwise kernel of full operands loads, computes and
// stores in about 14 (the grid-stride loop and 64-bit addresses
// included), or about 7 where full operands go 16 bytes a thread (vector
// loads and stores); a broadcast adds the coordinates' divisions by constants,
// about 10 for two dimensions; exp is a polynomial in float64; softmax
// reads each row three times. The window kernels are generic (any rank,
// dilations, padding): with no 64-bit division left they still spend
// 100-190 instructions per element on coordinates, where a 4-D NHWC/NCHW
// path would spend a few tens (issue 32).
const (
	reduceRowsBudget  = 80 // a row of 256 on a block of 256 pays the block-wide combine: shuffles, three barriers
	elementwiseBudget = 16
	vectorBudget      = 8 // full operands of 4 bytes: 16 bytes a thread by vector loads
	broadcastBudget   = 28
	copyBudget        = 40
	transcendental    = 26 // float32's exp by the carried ex2.approx (math32.go); float64's series took 52
)

// budgets are the kernels' limits, by name.
var budgets = map[string]kernelBudget{
	"add_f32_vv":    {instr: vectorBudget},
	"lt_f32_vv":     {instr: vectorBudget + 2}, // four bools packed into a word
	"select_f32_vv": {instr: vectorBudget + 4}, // three operands, the bools unpacked
	"not_b":         {instr: 44},               // per 4 bytes, so four bools, each unpacked, negated and packed
	"cast_b_f32":    {instr: elementwiseBudget},
	"cast_f32_b":    {instr: elementwiseBudget + 2},
	"abs_f32":       {instr: 2 * vectorBudget}, // one operand loaded where add loads two: the loop costs twice per element
	"cast_f32_f64":  {instr: elementwiseBudget - 4},
	// The half types: 16-bit values unpacked from words, widened, computed
	// in float32, rounded to nearest even by integer arithmetic, packed;
	// counted per 4 bytes, so per two values.
	"add_bf16_vv":                    {instr: 2 * elementwiseBudget},
	"lt_bf16_vv":                     {instr: 2 * elementwiseBudget},
	"tanh_bf16":                      {instr: 110}, // float32's tanh (math32.go) on each widened element, rounded
	"cast_f32_bf16":                  {instr: 2 * elementwiseBudget},
	"cast_f32_f16":                   {instr: 4 * elementwiseBudget}, // the rounding's NaN payload set apart (f32ToF16)
	"div_bf16_bc":                    {instr: 2 * broadcastBudget},
	"reduce_rows_sum_bf16":           {instr: 2 * reduceRowsBudget},
	"reduce_rows_sum_bf16_f32":       {instr: 2 * reduceRowsBudget}, // a half input's float32 sums
	"reduce_rows_sum_f32_bf16":       {instr: 2 * reduceRowsBudget},
	"copy_b16":                       {instr: 2 * copyBudget},
	"fill_b16":                       {instr: 2 * copyBudget},
	"gather_b16_s32":                 {instr: 2 * copyBudget},
	"pool2d_max_nhwc_bf16":           {instr: 2*36 + 8}, // each tap widened, the result rounded
	"pool2d_sum_nhwc_bf16":           {instr: 2*36 + 8},
	"pool2d_select_put_ge_nhwc_bf16": {instr: 2*50 + 8},
	"add_f32_bc":                     {instr: broadcastBudget},
	"eq_f32_bc":                      {instr: broadcastBudget}, // ReduceWindow's gradient where init is not known to be the identity
	"addrelu_f32_bc":                 {instr: broadcastBudget},
	"div_f32_bc":                     {instr: broadcastBudget + 4}, // average pooling's counts [1 OH OW 1] over NHWC sums: a kept dimension between two broadcast ones
	"select_f32_bc":                  {instr: broadcastBudget},
	"copy_b32":                       {instr: copyBudget},
	"dyn_copy_b32_s32":               {instr: copyBudget}, // copy_b32 and the starts read and clamped once a thread
	"transpose_b32":                  {instr: copyBudget},
	"gather_b32_s32":                 {instr: copyBudget},
	"exp_f32":                        {instr: transcendental},
	"softmax_f32":                    {instr: 75}, // e^(x−m) by one ex2.approx in float32 (a float64 series: 92)
	"reduce_rows_sum_f32":            {instr: reduceRowsBudget},
	"reduce_cols_sum_f32":            {instr: 14},
	"reduce_colsb_sum_f32":           {instr: 20}, // at most 16 rows a lane, then the eight warps' partials through shared memory
	// The global norm's multi-tensor kernels, four elements a thread: the
	// sum squares each in float64 and combines the block's threads by the
	// reduce kernels' tree; the norm's scalar steps after it (a fold of
	// the partials, its cast, root, bound and division) are latency.
	"sumsq_multi_8_f32": {instr: 50},
	"scale_multi_8_f32": {instr: 28},
	"copy_multi_8_b64":  {instr: 14}, // a unit loaded and stored, the table's slot found once a thread
	// The same of float16 (a loss scale's check), and Adam's step of
	// float16 gradients: per 4 bytes, two values, each widened (and the
	// product rounded) by the hardware's conversion with the NaN payload
	// set apart (about 13 and 10 instructions: cast.go's f16ToF32 and
	// f32ToF16; the bit routines they replaced took 19 and 35).
	"sumsq_multi_8_f16":                 {instr: 120},
	"scale_multi_8_f16":                 {instr: 88},
	"adam_multi_8_f32_gf16":             {instr: 26},
	"reduce_rows_sum_f64":               {instr: reduceRowsBudget},
	"cast_f64_f32":                      {instr: elementwiseBudget},
	"sqrt_f32":                          {instr: elementwiseBudget},
	"max_f32_vv":                        {instr: elementwiseBudget},
	"div_f32_vv":                        {instr: elementwiseBudget},
	"adam_multi_8_f32":                  {instr: 16}, // per element loaded: four an update
	"momentum_multi_8_f32":              {instr: 16},
	"nesterov_multi_8_f32":              {instr: 16},
	"rmsprop_multi_8_f32":               {instr: 16},
	"rmsprop_mom_multi_8_f32":           {instr: 16},
	"pool2d_max_nhwc_f32":               {instr: 36},
	"pool2d_sum_nhwc_f32":               {instr: 36},
	"pool2d_max_nchwband_f32":           {instr: 80}, // a band of output rows, its input rows staged: nine taps an output, each bounds-checked
	"pool2d_select_put_ge_nchwband_f32": {instr: 75},
	// Rows too wide for a band: bands split into column tiles, each row of
	// a tile a run of its own (kernels/tiles.go).
	"pool2d_max_nchwtile_f32":            {instr: 215}, // at a stride of 1 nine bounds-checked taps an input element (92 at a stride of 2)
	"pool2d_select_put_ge_nchwtile_f32":  {instr: 110},
	"pool2d_select_ge_nchwtile_f32":      {instr: 250},
	"pool2d_select_scatter_nchwtile_f32": {instr: 195},
	"pool2d_max_nchw2_f32":               {instr: 36}, // rows too wide for a band: pairs read whole sectors,
	"pool2d_max_nchw2x2_f32":             {instr: 20}, // a block stages row pairs in shared memory: 16-byte loads and stores
	"pool2d_select_put_ge_nchw2x2_f32":   {instr: 28},
	"pool2d_max_nchw2x2_bf16":            {instr: 42}, // per 4 bytes: two taps widened a float32 element
	"pool2d_select_put_ge_nchw2x2_bf16":  {instr: 56},
	"pool2d_select_put_ge_nchw2_f32":     {instr: 50},
	"pool2d_select_put_ge_nhwc_f32":      {instr: 50}, // walks its taps twice: the selection, then the block it writes
	"window_patches_b32":                 {instr: 200},
	"window_reduce_max_f32":              {instr: 190}, // eight taps of a 3-D window, each through the rank-8 geometry
	"window_reduce_sum_f32":              {instr: 155},
	"window_scatter_f32":                 {instr: 110},
	"window_select_ge_f32":               {instr: 215},
	"window_select_scatter_f32":          {instr: 110}, // every lane reads its windows' values, chosen or not (2-D pools take pool2d_select_scatter)
	"window_select_put_ge_f32":           {instr: 200},
	"pool2d_select_ge_nhwc_f32":          {instr: 40},
	"pool2d_select_ge_nchwband_f32":      {instr: 110},
	"pool2d_select_scatter_nhwc_f32":     {instr: 50},  // up to four windows over an element, each read
	"pool2d_spread_nhwc_f32":             {instr: 65},  // a thread an element: the windows over it found by two divisions by the strides, each read (a 2x2 window's one, a 3x3/2's up to four)
	"pool2d_spread_nchwband_f32":         {instr: 165}, // pool2d_select_scatter's bands without the selections
	"pool2d_spread_nchwtile_f32":         {instr: 160},
	"pool2d_sum_nchw2x2_f32":             {instr: 20},
	"pool2d_sum_nchwband_f32":            {instr: 80},
	"pool2d_sum_nchwtile_f32":            {instr: 100},
	// Max pooling keeping its choices (kernels/pool_argmax.go): a byte a
	// window beside the pooled value, then its gradient from those bytes.
	"pool2d_argmax_nhwc_f32":         {instr: 50}, // the selection's taps, the value and its byte stored
	"pool2d_argmax_nhwc_bf16":        {instr: 110},
	"pool2d_argmax_nchw2x2_f32":      {instr: 28},
	"pool2d_argmax_nchw2x2_bf16":     {instr: 56},
	"pool2d_argmax_nchwband_f32":     {instr: 160}, // small planes: a band's 49 windows, a warp's turns aligned for their bytes
	"pool2d_argmax_nchwtile_f32":     {instr: 260}, // at a stride of 1 nine bounds-checked taps an input element
	"pool2d_unpool_put_nhwc_f32":     {instr: 44},  // each tap's number compared with the byte
	"pool2d_unpool_put_nhwc_bf16":    {instr: 86},
	"pool2d_unpool_put_nchw2x2_f32":  {instr: 22},
	"pool2d_unpool_put_nchw2x2_bf16": {instr: 34},
	"pool2d_unpool_put_nchwband_f32": {instr: 175}, // as the argmax's band
	"pool2d_unpool_put_nchwtile_f32": {instr: 100},
	// A band's windows staged once, then a thread an element: its windows
	// found by four divisions through constants (the strides), each
	// window's tap number compared; loads count once where the NHWC kernel
	// reads a window's values for each element under it.
	"pool2d_select_scatter_nchwband_f32": {instr: 150},
	// The depthwise kernels read their taps in place; the filter gradient
	// gives a thread one filter element and the batch's sum behind it.
	// The depthwise kernels: nine taps an output, each bounds-checked; the
	// input gradient's taps also divide by the strides; the filter
	// gradient decomposes each position it sums. A thread an output reads
	// 18 elements (taps and filter values): short of the thread target by
	// counting alone, hence serial.
	"dw_fwd_nhwc_f32":           {instr: 22},
	"dw_input_nhwc_f32":         {instr: 38},
	"dw_filter_nhwc_f32":        {instr: 40},
	"dw_fwd_nchwband_f32":       {instr: 225}, // a band's rows and taps staged; per output (at a stride of 1, an input element an output): nine taps of some 9 instructions, the columns inside the image found once a window (a step a tap past an edge: dilations)
	"dw_input_nchwband_f32":     {instr: 225},
	"dw_input_nchwrows_f32":     {instr: 250}, // a band's dy rows and filter values staged; per element two divisions by the strides, then the taps that reach it (2.25 at a stride of 2) times the multiplier: some 165; dilated, a division a tap: some 240
	"dw_fwd_nchwtile_f32":       {instr: 185}, // the band kernels' per output, plus a run a tile row
	"dw_input_nchwtile_f32":     {instr: 185},
	"dw_input_nchwrowtiles_f32": {instr: 230},
	"dw_filter_nchwtile_f32":    {instr: 260},
	"dw_filter_nchwband_f32":    {instr: 330}, // 3x3: one walk over a band's windows, each tap's sum in shared memory, then a tree a tap across the block
	"reduce_cols_sum_f64":       {instr: 14},
	"reduce_colsb_sum_f64":      {instr: 20},
	// The transformer's kernels, float64 inside as the softmax's: the
	// norms read a row twice (three times forward, the statistics first);
	// GeluTanh's tanh is expm1's polynomial; attention's softmax takes
	// three passes and two block-wide combines over a row of 64 on a block
	// of 256 (longer rows share those better).
	// BatchNorm's kernels, float64 inside: the sums fold a part of each
	// feature, the forward's x and its square about a centre in one pass
	// (cols: 32 features a block, a row's features one load;
	// planes: a warp a part, its planes read by windows of 32 elements
	// aligned to 32, about 12 elements a lane, then a shuffle butterfly of
	// float64s), the reduce kernels fold the parts, a finishing kernel
	// writes each feature's coefficients (a division and a square root: a
	// thread a feature);
	// the elementwise kernels find an element's feature by two divisions
	// through constants and read its coefficients (counted as elements:
	// 8 bytes each).
	"batch_norm_sums_stats_cols_f32":   {instr: 23}, // 16 features: half of each warp idle (32 features: 17)
	"batch_norm_sums_grad_cols_f32":    {instr: 16},
	"batch_norm_sums_stats_planes_f32": {instr: 44}, // each lane's element clamped into the plane and masked, no branch; two sums
	"batch_norm_sums_grad_planes_f32":  {instr: 33},
	"batch_norm_stats_f32":             {instr: 40},
	"batch_norm_grad_coef_f32":         {instr: 9},
	"batch_norm_coef_f32":              {instr: 40},
	"batch_norm_apply_f32":             {instr: 10},
	"batch_norm_grad_f32":              {instr: 8.5},
	"layer_norm_f32":                   {instr: 52},
	"layer_norm_grad_f32":              {instr: 38}, // a third sum a row (the deviations' own mean, the float32 mean's δ): a tree more
	"rms_norm_f32":                     {instr: 54},
	"rms_norm_grad_f32":                {instr: 32},
	"sparse_xent_f32_s32":              {instr: 140}, // log Σ as log k + log1p(r/k): a second reduction (k) a row
	"sparse_xent_grad_f32_s32":         {instr: 51},  // its exponential's argument rounding carried (ex2Carried)
	"gelutanh_f32":                     {instr: 23},  // in float32: an ex2 and a rcp (gelu32.go), -0 at -∞
	"gelutanhgrad_f32_vv":              {instr: 17},
	"gelu_f32":                         {instr: 66}, // Φ in float32, the CPU's pieces (gelu32.go); float64's fraction and series took 915
	// The activations (units.go) over [64 256], four elements a thread:
	// the clamps and selects a few instructions over the load and store,
	// the smooth ones float32's exp, expm1 or sigmoid (two for Silu's
	// slope) and a division or two; Prelu's and its slope's alpha, one
	// value or a channel, by the broadcast kernel's coordinates, and
	// LeakyRelu's gradient (the slope times dy) one fused kernel.
	"relu6_f32":              {instr: 2*vectorBudget + 2},
	"hardsigmoid_f32":        {instr: 2*vectorBudget + 4},
	"hardswish_f32":          {instr: 2*vectorBudget + 6},
	"softsign_f32":           {instr: 2*vectorBudget + 4},
	"relu6grad_f32_vv":       {instr: 2*vectorBudget + 2},
	"hardsigmoidgrad_f32_vv": {instr: 2*vectorBudget + 3},
	"hardswishgrad_f32_vv":   {instr: 2*vectorBudget + 6},
	"elu_f32":                {instr: transcendental + 16},
	"selu_f32":               {instr: transcendental + 18},
	"elugrad_f32_vv":         {instr: transcendental + 6},
	"selugrad_f32_vv":        {instr: transcendental + 6},
	"silu_f32":               {instr: transcendental + 8},
	"silugrad_f32_vv":        {instr: 2*transcendental + 2},
	"mish_f32":               {instr: transcendental + 12},
	"mishgrad_f32_vv":        {instr: 2 * transcendental},
	"prelu_f32_bc":           {instr: broadcastBudget + 24},
	"prelu_f32_vs":           {instr: 2 * vectorBudget}, // LeakyRelu's one slope: the single-value kernel
	"div_f32_vs":             {instr: 2*vectorBudget + 2},
	"div_bf16_vs":            {instr: 2 * elementwiseBudget},
	"preluslope_f32_bc":      {instr: broadcastBudget + 24},
	"mul_f32_vv":             {instr: 2*vectorBudget - 2},
	"fused":                  {instr: 36},
	"gelugrad_f32_vv":        {instr: 34}, // (484 in float64)
	"attn_probs_f32":         {instr: 295},
	"attn_grad_f32":          {instr: 52},
	"attn_probs_f32_mask":    {instr: 295},
	"attn_grad_f32_mask":     {instr: 58},
	// The flash kernels are bound by arithmetic, not memory: four threads
	// a row, each tile element loaded once for the block's 64 rows (four
	// FMAs and a vector shared load per four, twice: the score, then the
	// sum), and the row's threads combined by shuffles at the end. Per
	// element of the tiles loaded, 40-60 at a sequence of 64; their
	// threads are four times the rows.
	"flash_fwd_f32_32":    {instr: 64, serial: true},
	"flash_bwd_q_f32_32":  {instr: 64, serial: true},
	"flash_bwd_dk_f32_32": {instr: 64, serial: true},
	"flash_bwd_dv_f32_32": {instr: 64, serial: true},
	// The LSTM and GRU sequence kernels are bound by their products' float64
	// FMAs, the recurrent kernel read from global memory (L2) each step:
	// per element of it loaded (a weight's four rows' FMAs, two vector
	// shared loads of the rows' states, two address increments, half
	// the loop's: two terms an iteration), 14.5-16 with the cells' work.
	"lstm_seq_f32":      {instr: 17, serial: true},
	"lstm_seq_grad_f32": {instr: 17, serial: true},
	"gru_seq_f32":       {instr: 17, serial: true},
	"gru_seq_grad_f32":  {instr: 17, serial: true},
	// The half types' flash kernels take the products on the tensor
	// cores (a warp's mma: 16x8x16 a step) and keep the scores in
	// registers, the operands read by ldmatrix, the tiles copied by
	// cp.async a tile ahead (counted as loads); per element of the tiles
	// loaded at a sequence of 64 (the softmax's and the tile moves'
	// instructions mostly), 26-35.
	"flash_fwd_bf16_32":    {instr: 40, serial: true},
	"flash_bwd_q_bf16_32":  {instr: 30, serial: true},
	"flash_bwd_kv_bf16_32": {instr: 36, serial: true},
	// Heads of 128 (one buffer of tiles): the products' share grows with
	// the width, 16-17 per element.
	"flash_fwd_bf16_128":    {instr: 20, serial: true},
	"flash_bwd_q_bf16_128":  {instr: 20, serial: true},
	"flash_bwd_kv_bf16_128": {instr: 20, serial: true},
	// Their mask tensor's twins stage each tile's mask as bits (a warp's
	// 32 neighbouring bytes, their ballot), then test a score's bit: 31-40.
	"flash_fwd_bf16_32_mask":    {instr: 45, serial: true},
	"flash_bwd_q_bf16_32_mask":  {instr: 35, serial: true},
	"flash_bwd_kv_bf16_32_mask": {instr: 40, serial: true},
	// The dropped twins draw their tiles' keep bits (Philox4x32-10, about
	// 180 instructions a block: a block a row's pair of neighbouring
	// weights in the forward and dQ kernels, a block a weight in the dK/dV
	// kernel, whose pairs are neighbouring queries): 101-217.
	"flash_fwd_bf16_32_drop":    {instr: 180, serial: true},
	"flash_bwd_q_bf16_32_drop":  {instr: 110, serial: true},
	"flash_bwd_kv_bf16_32_drop": {instr: 225, serial: true},
}

// efficiencyCases run each kernel family on float32 shapes of a few
// thousand elements.
func efficiencyCases(t *testing.T, d *Device) []struct {
	name string
	fn   func()
} {
	r := tensor.NewRNG(1)
	g := func(shape ...int) *tensor.Tensor {
		return onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -1, 1, shape...))
	}
	x, y := g(64, 256), g(64, 256)
	row, col := g(256), g(64, 1)
	img, imgc, imgOdd := g(2, 14, 14, 16), g(2, 16, 14, 14), g(2, 16, 15, 14)
	filt := g(3, 3, 16, 32)
	idx := onGPU(t, d, tensor.FromSlice([]int32{3, 1, 4, 1, 5, 9, 2, 6}, 8))
	pool := func(f ops.DataFormat) ops.PoolOpts { return ops.PoolOpts{Size: [2]int{2, 2}, Format: f} }
	grad := func(f func() *tensor.Tensor, xs ...*tensor.Tensor) {
		tp := tape.New()
		tp.Watch(xs...)
		tp.Gradient(ops.Sum(f()), xs...)
	}
	// ownKernels is grad with cuDNN off: the GPU's own convolution kernels.
	ownKernels := func(f func() *tensor.Tensor, xs ...*tensor.Tensor) {
		d.SetCuDNN(false)
		defer d.SetCuDNN(true)
		grad(f, xs...)
	}
	return []struct {
		name string
		fn   func()
	}{
		{"add", func() { ops.Add(x, y) }},
		// charrnn's LSTM at 8 steps: a sequence kernel each way.
		{"LSTM sequence [16 8] of 96", func() {
			xz, u, h := g(16, 8, 4*96), g(96, 4*96), g(16, 96)
			grad(func() *tensor.Tensor { ys, _, _ := ops.LSTMSequence(xz, u, h, h); return ys }, xz, u)
		}},
		{"GRU sequence [16 8] of 96", func() {
			xp, u, b, h := g(16, 8, 3*96), g(96, 3*96), g(3*96), g(16, 96)
			grad(func() *tensor.Tensor { ys, _ := ops.GRUSequence(xp, u, b, h); return ys }, xp, u)
		}},
		{"bfloat16 add, tanh and compare", func() {
			xh, yh := ops.Cast(x, tensor.BFloat16), ops.Cast(y, tensor.BFloat16)
			ops.Lt(ops.Tanh(ops.Add(xh, yh)), yh)
		}},
		{"add a row", func() { ops.Add(x, row) }},
		{"add a column", func() { ops.Add(x, col) }},
		{"exp", func() { ops.Exp(x) }},
		{"cast", func() { ops.Cast(x, tensor.Float64) }},
		{"where", func() { ops.Where(ops.Lt(x, y), x, row) }},
		{"where, full operands", func() { ops.Where(ops.Lt(x, y), x, y) }},
		{"casts through bool", func() { ops.Cast(ops.LogicalNot(ops.Cast(x, tensor.Bool)), tensor.Float32) }},
		{"sum", func() { ops.Sum(x) }},
		{"sum rows", func() { ops.Sum(x, 1) }},
		{"sum columns", func() { ops.Sum(x, 0) }},
		{"sum long columns (a bias gradient)", func() { ops.Sum(g(8, 28, 28, 32), 0, 1, 2) }},
		{"softmax", func() { ops.Softmax(x, 1) }},
		{"gather", func() { ops.Gather(x, idx, 0) }},
		{"dynamic slice and update (a KV cache's step)", func() {
			cache, pos := g(2, 4, 64, 32), onGPU(t, d, tensor.FromSlice([]int32{0, 0, 17, 0}, 4))
			ops.DynamicUpdateSlice(cache, g(2, 4, 1, 32), pos)
			ops.DynamicSlice(cache, pos, 2, 4, 8, 32)
		}},
		{"transpose", func() { ops.Transpose(x, 1, 0).Contiguous() }},
		{"max pool NHWC and its gradient", func() { grad(func() *tensor.Tensor { return ops.MaxPool2D(img, pool(ops.NHWC)) }, img) }},
		{"max pool NCHW and its gradient", func() { grad(func() *tensor.Tensor { return ops.MaxPool2D(imgc, pool(ops.NCHW)) }, imgc) }},
		{"bfloat16 max pool NCHW and its gradient", func() {
			ih := ops.Cast(g(2, 16, 16, 16), tensor.BFloat16)
			grad(func() *tensor.Tensor { return ops.MaxPool2D(ih, pool(ops.NCHW)) }, ih)
		}},
		{"max pool NCHW, rows too wide for a band (pairs)", func() {
			wide := g(1, 4, 5, 2176)
			grad(func() *tensor.Tensor { return ops.MaxPool2D(wide, pool(ops.NCHW)) }, wide)
		}},
		{"max pool NCHW, odd height (a band)", func() {
			grad(func() *tensor.Tensor { return ops.MaxPool2D(imgOdd, pool(ops.NCHW)) }, imgOdd)
		}},
		{"max pool NCHW 3x3 stride 2", func() {
			ops.MaxPool2D(imgc, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Format: ops.NCHW})
		}},
		{"max pool NCHW 3x3 stride 3 and its gradient", func() {
			grad(func() *tensor.Tensor {
				return ops.MaxPool2D(imgc, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{3, 3}, Format: ops.NCHW})
			}, imgc)
		}},
		{"a dilated window (the window kernels)", func() {
			w := ops.Window{Dims: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}, Padding: [][2]int{{0, 0}, {0, 1}, {0, 0}, {0, 0}},
				BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 2, 1, 1}}
			ops.ReduceWindow(img, onGPU(t, d, tensor.Scalar(float32(0))), ops.ReduceSum, w)
			ops.ReduceWindow(img, onGPU(t, d, tensor.Scalar(float32(math.Inf(-1)))), ops.ReduceMax, w)
		}},
		{"max over 3-D windows and its gradient (the window kernels)", func() {
			w := ops.Window{Dims: []int{1, 2, 1}, Strides: []int{1, 2, 1}, Padding: [][2]int{{0, 0}, {0, 0}, {0, 0}},
				BaseDilation: []int{1, 1, 1}, WindowDilation: []int{1, 1, 1}}
			x3 := g(8, 16, 32)
			grad(func() *tensor.Tensor {
				return ops.ReduceWindow(x3, onGPU(t, d, tensor.Scalar(float32(math.Inf(-1)))), ops.ReduceMax, w)
			}, x3)
		}},
		{"max pool 3x3 stride 2 and its gradient (overlapping)", func() {
			grad(func() *tensor.Tensor {
				return ops.MaxPool2D(img, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}})
			}, img)
		}},
		{"max pool NCHW 3x3 stride 2 and its gradient (overlapping)", func() {
			x := g(2, 4, 56, 56) // planes of 56 (ResNet's stem pools 112 to 56): a band a plane
			grad(func() *tensor.Tensor {
				return ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Format: ops.NCHW})
			}, x)
		}},
		{"max over overlapping 3-D windows and its gradient (the window kernels)", func() {
			x := g(2, 5, 5, 5, 32)
			w := ops.Window{Dims: []int{1, 2, 2, 2, 1}, Strides: []int{1, 1, 1, 1, 1}}
			grad(func() *tensor.Tensor {
				return ops.ReduceWindow(x, tensor.Scalar(float32(math.Inf(-1))), ops.ReduceMax, w)
			}, x)
		}},
		{"the poolings' gradients by SelectAndScatter (ReduceWindow)", func() {
			// MaxPool2D under a tape keeps its choices (pool2d_argmax);
			// ReduceWindow's gradient searches the windows again.
			window := func(nhwc bool, k, s int) ops.Window {
				if nhwc {
					return ops.Window{Dims: []int{1, k, k, 1}, Strides: []int{1, s, s, 1}}
				}
				return ops.Window{Dims: []int{1, 1, k, k}, Strides: []int{1, 1, s, s}}
			}
			for _, c := range []struct {
				x *tensor.Tensor
				w ops.Window
			}{
				{img, window(true, 2, 2)}, {imgc, window(false, 2, 2)}, {imgOdd, window(false, 2, 2)}, {g(1, 4, 5, 2176), window(false, 2, 2)},
				{imgc, window(false, 3, 3)}, {img, window(true, 3, 2)}, {g(2, 4, 56, 56), window(false, 3, 2)},
				{ops.Cast(g(2, 16, 16, 16), tensor.BFloat16), window(false, 2, 2)}, {ops.Cast(img, tensor.BFloat16), window(true, 2, 2)},
			} {
				grad(func() *tensor.Tensor { return ops.ReduceWindow(c.x, tensor.Scalar(math.Inf(-1)), ops.ReduceMax, c.w) }, c.x)
			}
		}},
		{"average pool NHWC", func() { ops.AvgPool2D(img, pool(ops.NHWC)) }},
		{"average pools' gradients (pool2d_spread; side by side, a broadcast copy)", func() {
			for _, c := range []struct {
				x *tensor.Tensor
				o ops.PoolOpts
			}{
				{img, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same}},
				{g(2, 4, 56, 56), ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same, Format: ops.NCHW}},
				{g(1, 2, 9, 1500), ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same, Format: ops.NCHW}},
				{img, pool(ops.NHWC)}, {imgc, pool(ops.NCHW)},
			} {
				grad(func() *tensor.Tensor { return ops.AvgPool2D(c.x, c.o) }, c.x)
			}
		}},
		{"bfloat16 max pool NHWC and its gradient, average pool", func() {
			ih := ops.Cast(img, tensor.BFloat16)
			grad(func() *tensor.Tensor { return ops.MaxPool2D(ih, pool(ops.NHWC)) }, ih)
			ops.AvgPool2D(ih, pool(ops.NHWC))
		}},
		{"float16 gather", func() { ops.Gather(ops.Cast(x, tensor.Float16), idx, 0) }},
		{"clip by global norm", func() { nn.ClipByGlobalNormTensor([]*tensor.Tensor{x, y, row}, 1) }},
		{"a concatenation of rows, one launch (copy_multi)", func() { ops.Concatenate(0, x, y, x, y) }},
		{"a loss scale's check and step of float16 gradients", func() {
			hs := []*tensor.Tensor{ops.Cast(y, tensor.Float16), ops.Cast(row, tensor.Float16)}
			ops.SumOfSquares(ops.ScaleEach(ops.ScalarLike(hs[0], 0), hs...)...)
			vs := func(name string, x *tensor.Tensor) []*tape.Variable {
				return []*tape.Variable{tape.NewVariable(name+"0", x), tape.NewVariable(name+"1", ops.Abs(row))}
			}
			tape.AdamUpdateAll(vs("w", x), vs("m", y), vs("v", ops.Abs(y)), hs,
				ops.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7, GradScale: 0x1p-15})
		}},
		{"adam step", func() {
			vs := func(name string, x *tensor.Tensor) []*tape.Variable {
				return []*tape.Variable{tape.NewVariable(name+"0", x), tape.NewVariable(name+"1", ops.Abs(row))}
			}
			tape.AdamUpdateAll(vs("w", x), vs("m", y), vs("v", ops.Abs(y)), []*tensor.Tensor{y, row},
				ops.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7})
		}},
		{"momentum and Nesterov steps", func() {
			for _, nesterov := range []bool{false, true} {
				tape.MomentumUpdateAll([]*tape.Variable{tape.NewVariable("w", x)}, []*tape.Variable{tape.NewVariable("vel", y)}, []*tensor.Tensor{y},
					ops.MomentumParams{LR: 1e-3, Momentum: 0.9, Nesterov: nesterov})
			}
		}},
		{"RMSProp steps", func() {
			for _, mu := range []float64{0, 0.5} {
				tape.RMSPropUpdateAll([]*tape.Variable{tape.NewVariable("w", x)}, []*tape.Variable{tape.NewVariable("s", ops.Abs(y))},
					[]*tape.Variable{tape.NewVariable("mom", y)}, []*tensor.Tensor{y}, ops.RMSPropParams{LR: 1e-3, Rho: 0.9, Eps: 1e-7, Momentum: mu})
			}
		}},
		{"layer norm, RMS norm and their gradients", func() {
			gamma, beta := g(256), g(256)
			grad(func() *tensor.Tensor { return ops.LayerNorm(x, gamma, beta, 1e-5) }, x, gamma, beta)
			grad(func() *tensor.Tensor { return ops.RMSNorm(x, gamma, 1e-5) }, x, gamma)
		}},
		{"batch norm NHWC and NCHW (planes of 14x14 and 28x28) and their gradients", func() {
			for _, c := range []struct {
				x    *tensor.Tensor
				axis int
			}{{img, -1}, {imgc, 1}, {g(8, 28, 28, 32), -1}, {g(8, 32, 28, 28), 1}} {
				gamma, beta := g(c.x.Dim(c.axis)), g(c.x.Dim(c.axis))
				grad(func() *tensor.Tensor { y, _, _ := ops.BatchNorm(c.x, gamma, beta, c.axis, 1e-3); return y }, c.x, gamma, beta)
			}
		}},
		{"GeluTanh and its gradient", func() { grad(func() *tensor.Tensor { return ops.GeluTanh(x) }, x) }},
		{"Gelu and its gradient", func() { grad(func() *tensor.Tensor { return ops.Gelu(x) }, x) }},
		{"the activations and their gradients", func() {
			for _, f := range []func(*tensor.Tensor) *tensor.Tensor{ops.Relu6, ops.HardSigmoid, ops.HardSwish, ops.Softsign,
				ops.Elu, ops.Selu, ops.Silu, ops.Mish} {
				grad(func() *tensor.Tensor { return f(x) }, x)
			}
			alpha := g(256)
			grad(func() *tensor.Tensor { return ops.Prelu(x, alpha) }, x, alpha)
			grad(func() *tensor.Tensor { return ops.LeakyRelu(x, 0.1) }, x)
		}},
		{"cross-entropy and its gradient", func() {
			labels := onGPU(t, d, tensor.FromSlice(make([]int32, 64), 64))
			grad(func() *tensor.Tensor { return ops.SparseSoftmaxCrossEntropy(x, labels) }, x)
		}},
		{"causal attention and its gradient", func() {
			q, k, v := g(2, 4, 64, 32), g(2, 4, 64, 32), g(2, 4, 64, 32)
			grad(func() *tensor.Tensor { return ops.Attention(q, k, v, nil, true, 0) }, q, k, v)
			d.SetFlashAttention(true) // and through the flash kernels
			defer d.flashMode.Store(flashAuto)
			grad(func() *tensor.Tensor { return ops.Attention(q, k, v, nil, true, 0) }, q, k, v)
		}},
		{"causal attention in bfloat16 and its gradient (the tensor-core flash kernels)", func() {
			h := func() *tensor.Tensor { return ops.Cast(g(2, 4, 64, 32), tensor.BFloat16) }
			q, k, v := h(), h(), h()
			grad(func() *tensor.Tensor { return ops.Attention(q, k, v, nil, true, 0) }, q, k, v)
			mask := onGPU(t, d, ops.Gt(tensor.RandUniform(tensor.NewRNG(4), tensor.Float32, 0, 1, 64, 64), tensor.Scalar(float32(0.2))))
			grad(func() *tensor.Tensor { return ops.Attention(q, k, v, mask, false, 0) }, q, k, v)
			grad(func() *tensor.Tensor {
				return ops.AttentionDropout(q, k, v, nil, true, 0, 0.2, nil, 0, 0, [2]uint32{1, 2})
			}, q, k, v)
			w := func() *tensor.Tensor { return ops.Cast(g(1, 2, 64, 128), tensor.BFloat16) } // heads of 128: one buffer
			q, k, v = w(), w(), w()
			grad(func() *tensor.Tensor { return ops.Attention(q, k, v, nil, true, 0) }, q, k, v)
		}},
		{"masked attention and its gradient (the row kernels)", func() {
			q, k, v := g(2, 4, 64, 32), g(2, 4, 64, 32), g(2, 4, 64, 32)
			mask := onGPU(t, d, ops.Gt(tensor.RandUniform(tensor.NewRNG(4), tensor.Float32, 0, 1, 64, 64), tensor.Scalar(float32(0.2))))
			grad(func() *tensor.Tensor { return ops.Attention(q, k, v, mask, false, 0) }, q, k, v)
		}},
		{"depthwise convolution and its gradients", func() {
			dw := g(3, 3, 16, 1)
			ownKernels(func() *tensor.Tensor { return ops.DepthwiseConv2D(img, dw, ops.Conv2DOpts{Padding: ops.Same}) }, img, dw)
		}},
		{"depthwise convolution NCHW, dilated, multiplier 2, stride 2", func() {
			x, dw := g(1, 8, 56, 56), g(3, 3, 8, 2)
			ownKernels(func() *tensor.Tensor {
				return ops.DepthwiseConv2D(x, dw, ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 2}, Dilations: [2]int{2, 2}, Format: ops.NCHW})
			}, x, dw)
		}},
		{"max pool NCHW 3x3 stride 2, rows too wide for a band, and its gradient (column tiles)", func() {
			x := g(1, 2, 9, 1500)
			grad(func() *tensor.Tensor {
				return ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Format: ops.NCHW})
			}, x)
		}},
		{"max pool NCHW 3x3 stride 1, rows too wide for a band, and its gradient (column tiles)", func() {
			x := g(1, 1, 9, 1500)
			grad(func() *tensor.Tensor {
				return ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{1, 1}, Padding: ops.Same, Format: ops.NCHW})
			}, x)
		}},
		{"max pool NCHW 3x3 stride 3, rows too wide for a band, and its gradient (column tiles)", func() {
			x := g(1, 2, 9, 1500)
			grad(func() *tensor.Tensor {
				return ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{3, 3}, Format: ops.NCHW})
			}, x)
		}},
		{"depthwise convolution NCHW, rows too wide for a band (column tiles)", func() {
			x, dw := g(1, 4, 8, 1500), g(3, 3, 4, 1)
			ownKernels(func() *tensor.Tensor {
				return ops.DepthwiseConv2D(x, dw, ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW})
			}, x, dw)
		}},
		{"depthwise convolution NCHW, multiplier 2, rows too wide for a band (column tiles of dx's rows)", func() {
			x, dw := g(1, 2, 8, 1500), g(3, 3, 2, 2)
			ownKernels(func() *tensor.Tensor {
				return ops.DepthwiseConv2D(x, dw, ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW})
			}, x, dw)
		}},
		{"depthwise convolution NCHW, multiplier 2, stride 2, and its gradients", func() {
			// Planes of 56x56 (MobileNet's are 112 to 7): a band's rows
			// of dy outweigh the filter values it gathers, C·M apart.
			x, dw := g(1, 8, 56, 56), g(3, 3, 8, 2)
			ownKernels(func() *tensor.Tensor {
				return ops.DepthwiseConv2D(x, dw, ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 2}, Format: ops.NCHW})
			}, x, dw)
		}},
		{"depthwise convolution NCHW and its gradients", func() {
			// Planes of 28x28: a block sums a filter element over 3136
			// positions, about 12 a thread, as real batches give it more.
			x, dw := g(4, 8, 28, 28), g(3, 3, 8, 1)
			ownKernels(func() *tensor.Tensor {
				return ops.DepthwiseConv2D(x, dw, ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW})
			}, x, dw)
		}},
		{"fused convolution's bias and Relu", func() {
			ops.FusedConv2D(img, filt, g(32), ops.Conv2DOpts{Padding: ops.Same}, ops.ReluActivation)
		}},
		{"conv NHWC and its gradients", func() {
			ownKernels(func() *tensor.Tensor { return ops.Conv2D(img, filt, ops.Conv2DOpts{Padding: ops.Same}) }, img, filt)
		}},
	}
}

func TestKernelEfficiency(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("the counts are the emulator's; on a GPU, Nsight Compute measures")
	}
	type launch struct {
		p    emu.Profile
		what string // the case that ran it
	}
	seen := map[string][]launch{}
	for _, c := range efficiencyCases(t, d) {
		ctx.SetProfiler(func(p emu.Profile) { seen[p.Kernel] = append(seen[p.Kernel], launch{p, c.name}) })
		c.fn()
		if err := d.Synchronize(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ctx.SetProfiler(nil)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b, ok := budgets[name]
		if !ok {
			t.Errorf("%s has no budget: add one to budgets (%s)", name, seen[name][0].p)
			continue
		}
		var misses []string // the targets some launch misses
		for _, l := range seen[name] {
			p := l.p
			t.Logf("%-26s %-32s %6.1f instr/element, loads %3.0f%%, stores %3.0f%%, %.1f elements/thread, div64 %.2f/element",
				name, l.what, perElement(p), 100*p.Loads.Efficiency(), 100*p.Stores.Efficiency(),
				elements(p)/float64(p.Threads), float64(p.Div64)/elements(p))
			errs, m := budgetErrors(p, b)
			for _, e := range errs {
				t.Errorf("%s (%s): %s: %s", name, l.what, e, p)
			}
			misses = append(misses, m...)
		}
		if b.debt != "" && len(misses) == 0 {
			t.Errorf("%s meets the targets now: drop its debt (%s)", name, b.debt)
		}
	}
}

// elements is the float32 elements of a profile's larger side.
func elements(p emu.Profile) float64 { return float64(max(p.Loads.Bytes, p.Stores.Bytes, 4)) / 4 }

func perElement(p emu.Profile) float64 { return float64(p.Instructions) / elements(p) }

// budgetErrors lists how p breaks b, and which targets it misses (a
// debt's allowance may cover them).
func budgetErrors(p emu.Profile, b kernelBudget) (errs, misses []string) {
	eff := min(p.Loads.Efficiency(), p.Stores.Efficiency())
	if eff < targetEfficiency {
		misses = append(misses, "efficiency")
		if b.debt == "" || eff < b.efficiency {
			errs = append(errs, fmt.Sprintf("sector efficiency %.0f%%, want at least %.0f%%", 100*eff, 100*max(targetEfficiency*boolf(b.debt == ""), b.efficiency)))
		}
	}
	if p.Div64 > 0 {
		misses = append(misses, "div64")
		if !b.div64 {
			errs = append(errs, fmt.Sprintf("%d 64-bit divisions", p.Div64))
		}
	}
	if elements(p) < smallLaunch {
		return errs, misses
	}
	if want := min(elements(p)/elementsPerThread, enoughThreads); float64(p.Threads) < want {
		misses = append(misses, "threads")
		if !b.serial {
			errs = append(errs, fmt.Sprintf("%d threads for %.0f elements, want at least %.0f", p.Threads, elements(p), want))
		}
	}
	if per := perElement(p); per > b.instr {
		errs = append(errs, fmt.Sprintf("%.1f instructions per element, budget %.1f", per, b.instr))
	}
	return errs, misses
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// EAGERFLOW_DEBUG=kernelcost has the emulator print every launch's counts.
func TestPrintCosts(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("the counts are the emulator's")
	}
	var b strings.Builder
	for _, debug := range []string{"", "kernels", "kernels,kernelcost"} {
		b.Reset()
		printCosts(ctx, d.Name(), debug, &b)
		x := onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3}, 3))
		ops.Exp(x)
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		ctx.SetProfiler(nil)
		got := b.String()
		if want := debug == "kernels,kernelcost"; strings.Contains(got, "exp_f32 grid [1 1 1] block [256 1 1]") != want {
			t.Errorf("EAGERFLOW_DEBUG=%q printed %q", debug, got)
		}
	}
}
