#!/usr/bin/env bash
# Runs on the GPU machine from the bundle scripts/gpu-confirm builds:
# .gpu/run.sh OUTDIR. See scripts/gpu-confirm.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: run.sh OUTDIR [all|figures|tests]}"
part="${2:-all}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# A lent GPU is short of time, not memory: each stage gets at most its
# cap and never more than what is left of EAGERFLOW_GPU_BUDGET seconds
# (default 540), so every stage reports before the device tool's limit.
# The figures (benchmarks beside PyTorch, the CNN step's profiles) come
# first, the tests after; "figures" or "tests" runs one half alone.
deadline=$((SECONDS + ${EAGERFLOW_GPU_BUDGET:-540}))
# within CAP: the seconds a stage may take, at least 5.
within() {
	local left=$((deadline - SECONDS))
	[ "$left" -lt "$1" ] && set -- "$left"
	[ "$1" -lt 5 ] && set -- 5
	echo "$1"
}
# The test binaries travel compressed (the device tool carries 64 MiB).
if [ -f "$here/tests.tgz" ]; then
	tar xzf "$here/tests.tgz" -C "$here" || { echo "run.sh: cannot unpack $here/tests.tgz" >&2; exit 1; }
fi
sum="$out/summary.md"

# cuBLAS from pip's nvidia wheels where the Python there has them.
if command -v python3 >/dev/null; then
	extra=$(python3 - <<'PY' 2>/dev/null
import glob, site
dirs = []
for s in site.getsitepackages():
    dirs += glob.glob(s + "/nvidia/*/lib")
print(":".join(dirs))
PY
)
	export EAGERFLOW_CUDA_PATH="${EAGERFLOW_CUDA_PATH:+$EAGERFLOW_CUDA_PATH:}$extra"
fi

{
	echo "# eagerflow GPU confirmation"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "- commit: $(cat "$here/commit" 2>/dev/null)"
	echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
	echo "- CUDA (driver): $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
	if command -v python3 >/dev/null; then
		echo "- PyTorch: $(python3 -c 'import torch;print(torch.__version__, "CUDA", torch.version.cuda)' 2>&1 | tail -1)"
	fi
	echo "- library search path: ${EAGERFLOW_CUDA_PATH:-}"
} >"$sum"

export EAGERFLOW_REQUIRE_GPU=1

# section TITLE CMD...: a heading in the summary and, fenced, what CMD
# prints.
section() {
	local title="$1"
	shift
	{
		echo
		echo "## $title"
		echo
		echo '```'
		"$@"
		echo '```'
	} >>"$sum"
}

# Every embedded PTX module through ptxas first, where the machine has it:
# the driver compiles a module when its first kernel is used, so a module
# it refuses fails only the ops that reach it; this names each at once.
ptxcheck() {
	[ "${EAGERFLOW_GPU_PTXCHECK:-1}" = 0 ] && return 0
	command -v ptxas >/dev/null || PATH="$PATH:/usr/local/cuda/bin"
	command -v ptxas >/dev/null || return 0
	[ -d "$here/ptx" ] || return 0
	local bad
	bad=$(ls "$here"/ptx/*.ptx | timeout "$(within 90)" xargs -P 16 -I{} sh -c 'ptxas -arch=sm_90 {} -o /dev/null 2>&1 | head -5 | sed "s|^|$(basename {}): |"')
	{
		echo
		echo "## ptxas -arch=sm_90 over the embedded modules ($(ls "$here"/ptx/*.ptx | wc -l))"
		echo
		if [ -z "$bad" ]; then echo "all accepted"; else echo '```'; echo "$bad"; echo '```'; fi
	} >>"$sum"
}

# The figures: eagerflow's GPU benchmarks (the issues' figures first, so
# a short lease still brings them), their PyTorch and JAX twins, one table
# of both, and the CNN step's profiles.
figures() {
	local first='^Benchmark(EagerAddGPU|AddBandwidthGPU|CopyBandwidthGPU|MatMulGPU|MLPTrainStepGPU|FashionCNNTrainStepGPU)$'
	# EAGERFLOW_GPU_BENCH, a -test.bench pattern, times those benchmarks alone
	# (a second lease's rerun of what the first could not time).
	if [ -n "${EAGERFLOW_GPU_BENCH:-}" ]; then
		timeout "$(within 150)" "$here/cuda.test" -test.run '^$' -test.bench "$EAGERFLOW_GPU_BENCH" -test.benchtime 0.5s >"$out/bench.log" 2>&1
	else
		timeout "$(within 150)" "$here/cuda.test" -test.run '^$' -test.bench "$first" -test.benchtime 0.5s >"$out/bench.log" 2>&1
		# The clocks and power a sustained GEMM left (tensor-core GEMMs
		# draw the card to its power limit, which lowers the clocks).
		nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >>"$out/bench.log" 2>&1
		timeout "$(within 90)" "$here/cuda.test" -test.run '^$' -test.bench 'GPU' -test.skip "$first|^BenchmarkOpStepGPU$" -test.benchtime 0.5s >>"$out/bench.log" 2>&1
		# One op's training step, a sweep of seventeen (the CPU's sweep at
		# a GPU's sizes): ten steps each, beside PyTorch's.
		timeout "$(within 40)" "$here/cuda.test" -test.run '^$' -test.bench '^BenchmarkOpStepGPU$' -test.benchtime 10x >>"$out/bench.log" 2>&1
	fi
	if [ -x "$here/nccl.test" ] && [ -z "${EAGERFLOW_GPU_BENCH:-}" ]; then
		timeout "$(within 20)" "$here/nccl.test" -test.run '^$' -test.bench GPU -test.benchtime 0.5s >>"$out/bench.log" 2>&1
	fi
	section "Benchmarks" grep -E '^(Benchmark|goos|cpu|FAIL|panic|clocks|[0-9]+ MHz)' "$out/bench.log"

	if [ -f "$here/torch_gpu.py" ] && command -v python3 >/dev/null; then
		PYTHONUNBUFFERED=1 timeout "$(within 110)" python3 "$here/torch_gpu.py" >"$out/torch.log" 2>&1
		{
			echo
			echo "## eagerflow beside PyTorch and JAX on the same GPU"
			echo
			python3 "$here/gpu_table.py" "$out/bench.log" "$out/torch.log"
		} >>"$sum"
		section "PyTorch's and JAX's lines" cat "$out/torch.log"
	fi

	# The CNN step's kernels: eagerflow's profile (package profile: each
	# op's host and device time), Nsight Compute's time per kernel (two
	# steps and the set-up), and PyTorch's own profile of its step.
	EAGERFLOW_GPU_PROFILE=1 timeout "$(within 60)" "$here/cuda.test" -test.run '^TestStepProfilesGPU$' -test.v >"$out/profile.log" 2>&1
	profiles() { sed -n '/three .* steps on/,/^--- /p' "$out/profile.log" | head -160; }
	section "eagerflow's profiles of three steps: the NHWC CNN, GPT, the charrnn LSTM (package profile)" profiles
	if command -v ncu >/dev/null; then
		timeout "$(within 70)" ncu --clock-control none --csv --metrics gpu__time_duration.sum \
			"$here/cuda.test" -test.run '^$' -test.bench 'FashionCNNTrainStepGPU/NHWC/eager' -test.skip mixed -test.benchtime 2x \
			>"$out/ncu.log" 2>&1
		kernels() { python3 "$here/ncu_summary.py" "$out/ncu.log" 2>&1 | head -40; }
		section "Kernel time, NHWC CNN step (ncu, gpu__time_duration; the steps and the set-up)" kernels
		# The window ops furthest behind PyTorch on the H200 (depthwise
		# NHWC by the GPU's own kernels 2.19 ms, cuDNN's 1.50, PyTorch's
		# 0.38; BatchNorm NHWC 0.71x): which kernel takes the time.
		timeout "$(within 40)" ncu --clock-control none --csv --metrics gpu__time_duration.sum \
			"$here/cuda.test" -test.run '^$' -test.bench 'WindowOpsGPU/(Depthwise3x3s2OwnKernels|Depthwise3x3s2|BatchNorm)/NHWC' -test.benchtime 1x \
			>"$out/ncu-window.log" 2>&1
		windows() { python3 "$here/ncu_summary.py" "$out/ncu-window.log" 2>&1 | head -30; }
		section "Kernel time, depthwise and BatchNorm NHWC (ncu, gpu__time_duration; three calls each)" windows
		# Attention in bfloat16 at 4096 on the tensor-core flash kernels
		# (flash_*_bf16_64 and _128, new since the H200's run): each pass's
		# time.
		timeout "$(within 30)" ncu --clock-control none --csv --metrics gpu__time_duration.sum \
			"$here/cuda.test" -test.run '^$' -test.bench 'AttentionGPU/4096/bfloat16(/heads128)?$' -test.benchtime 1x \
			>"$out/ncu-attention.log" 2>&1
		attention() { python3 "$here/ncu_summary.py" "$out/ncu-attention.log" 2>&1 | head -20; }
		section "Kernel time, bfloat16 attention at 4096 (ncu, gpu__time_duration)" attention
	fi
	if [ -f "$here/torch_gpu.py" ] && command -v python3 >/dev/null; then
		EAGERFLOW_TORCH_PROFILE=1 timeout "$(within 40)" python3 "$here/torch_gpu.py" >"$out/torch-profile.log" 2>&1
		section "PyTorch's CNN step (torch.profiler)" tail -40 "$out/torch-profile.log"
	fi
}

# The tests: the conformance suite and the GPU tests, NCCL with one rank,
# and the random programs against the CPU. A skipped GPU test fails
# (EAGERFLOW_REQUIRE_GPU); a stage cut short by the budget fails too.
tests() {
	local rc=0
	"$here/cuda.test" -test.v -test.count=1 -test.timeout="$(within 240)s" >"$out/tests.log" 2>&1 || rc=1
	if [ -x "$here/nccl.test" ]; then
		echo "=== NCCL (backend/cuda/nccl) ===" >>"$out/tests.log"
		"$here/nccl.test" -test.v -test.count=1 -test.timeout="$(within 40)s" >>"$out/tests.log" 2>&1 || rc=1
	fi
	if [ -x "$here/difftest.test" ]; then
		# The random op and control-flow programs and the half ops on the GPU against the CPU,
		# the float32 programs at size (the kernels' tiled paths) against the CPU's float64,
		# and the ops at special values against PyTorch (skipped where python3 lacks torch).
		echo "=== op programs on the GPU (internal/difftest) ===" >>"$out/tests.log"
		(cd "$here" && EAGERFLOW_PYTHON="$(command -v python3 || echo /usr/bin/python3)" ./difftest.test -test.v -test.count=1 -test.run '^(TestOpsAgreeOnGPU|TestControlFlowAgreesOnGPU|TestHalfOpsAgreeOnGPU|TestOpsFloat32AtSizeOnGPU|TestSpecialValuesAgreeOnGPU)$' -test.timeout="$(within 120)s" \
			-difftest.gpuseeds 1,2,3,4 -difftest.gpucases 200 -difftest.sizeseeds 1,2,3,4 -difftest.gpusizecases 100) >>"$out/tests.log" 2>&1 || rc=1
	fi
	local pass fail skip
	pass=$(grep -c -- '--- PASS' "$out/tests.log")
	fail=$(grep -c -- '--- FAIL' "$out/tests.log")
	skip=$(grep -c -- '--- SKIP' "$out/tests.log")
	{
		echo
		echo "## Tests (exit $rc)"
		echo
		echo "passed $pass, failed $fail, skipped $skip"
		grep -m1 'gpu:0: ' "$out/tests.log" | sed 's/^ */- device: /'
		grep -m1 'nccl_test.go.*gpu:0: ' "$out/tests.log" | sed 's/^ */- NCCL: /'
		# Loops and Conds as conditional nodes: the driver's first run of them.
		grep -E -- '--- (PASS|FAIL): (TestRecordedLoop[A-Za-z]*|TestRecordedScanGradient|TestRecordedTrainStepWithALoop|TestGPTGenerationRecordedOnGPU|TestLoopQueuedCalls) ' "$out/tests.log" | sed 's/^ */- conditional nodes: /'
		if [ "$fail" != 0 ] || [ "$rc" != 0 ]; then
			echo
			echo '```'
			grep -B2 -A12 -- '--- FAIL' "$out/tests.log" | head -150
			grep -A8 -m1 '^panic: ' "$out/tests.log"
			tail -30 "$out/tests.log"
			echo '```'
		fi
	} >>"$sum"
	return $rc
}

rc=0
ptxcheck
case "$part" in
all) figures; tests || rc=1 ;;
figures) figures ;;
tests) tests || rc=1 ;;
*) echo "run.sh: the part is all, figures or tests, not $part" >&2; exit 2 ;;
esac
cat "$sum"
exit $rc
