#!/usr/bin/env bash
# Runs on the GPU machine from the bundle scripts/gpu-confirm builds:
# .gpu/run.sh OUTDIR. See scripts/gpu-confirm.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: run.sh OUTDIR}"
mkdir -p "$out"
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
"$here/cuda.test" -test.v -test.count=1 -test.timeout=8m >"$out/tests.log" 2>&1
rc=$?
if [ -x "$here/nccl.test" ]; then
	echo "=== NCCL (backend/cuda/nccl) ===" >>"$out/tests.log"
	"$here/nccl.test" -test.v -test.count=1 -test.timeout=3m >>"$out/tests.log" 2>&1 || rc=1
fi
if [ -x "$here/difftest.test" ]; then
	# The random op and control-flow programs and the half ops on the GPU against the CPU,
	# and the float32 programs at size (the kernels' tiled paths) against the CPU's float64.
	echo "=== op programs on the GPU (internal/difftest) ===" >>"$out/tests.log"
	"$here/difftest.test" -test.v -test.count=1 -test.run '^(TestOpsAgreeOnGPU|TestControlFlowAgreesOnGPU|TestHalfOpsAgreeOnGPU|TestOpsFloat32AtSizeOnGPU)$' -test.timeout=4m \
		-difftest.gpuseeds 1,2,3,4 -difftest.gpucases 200 -difftest.sizeseeds 1,2,3,4 -difftest.gpusizecases 100 >>"$out/tests.log" 2>&1 || rc=1
fi
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
		tail -30 "$out/tests.log"
		echo '```'
	fi
} >>"$sum"

"$here/cuda.test" -test.run '^$' -test.bench GPU -test.benchtime 1s -test.count 3 >"$out/bench.log" 2>&1
if [ -x "$here/nccl.test" ]; then
	"$here/nccl.test" -test.run '^$' -test.bench GPU -test.benchtime 1s -test.count 3 >>"$out/bench.log" 2>&1
fi
{
	echo
	echo "## Benchmarks"
	echo
	echo '```'
	grep -E '^(Benchmark|goos|cpu)' "$out/bench.log"
	echo '```'
} >>"$sum"

if [ -f "$here/torch_gpu.py" ] && command -v python3 >/dev/null; then
	timeout 300 python3 "$here/torch_gpu.py" >"$out/torch.log" 2>&1
	{
		echo
		echo "## eagerflow beside PyTorch and JAX on the same GPU"
		echo
		python3 "$here/gpu_table.py" "$out/bench.log" "$out/torch.log"
		echo
		echo '```'
		cat "$out/torch.log"
		echo '```'
	} >>"$sum"
fi

# The CNN step's kernels: eagerflow's profile (package profile: each op's
# host and device time), Nsight Compute's time per kernel (three steps
# and the set-up), and PyTorch's own profile of its step.
EAGERFLOW_GPU_PROFILE=1 timeout 120 "$here/cuda.test" -test.run '^TestFashionCNNStepProfileGPU$' -test.v >"$out/profile.log" 2>&1
{
	echo
	echo "## eagerflow's profile of three NHWC CNN steps (package profile)"
	echo
	echo '```'
	sed -n '/three NHWC steps/,/^--- /p' "$out/profile.log" | head -60
	echo '```'
} >>"$sum"
if command -v ncu >/dev/null; then
	timeout 240 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
		"$here/cuda.test" -test.run '^$' -test.bench 'FashionCNNTrainStepGPU/NHWC/eager' -test.benchtime 3x \
		>"$out/ncu.log" 2>&1
	{
		echo
		echo "## Kernel time, NHWC CNN step (ncu, gpu__time_duration; three steps and the set-up)"
		echo
		echo '```'
		python3 "$here/ncu_summary.py" "$out/ncu.log" 2>&1 | head -40
		echo '```'
	} >>"$sum"
fi
if [ -f "$here/torch_gpu.py" ] && command -v python3 >/dev/null; then
	EAGERFLOW_TORCH_PROFILE=1 timeout 120 python3 "$here/torch_gpu.py" >"$out/torch-profile.log" 2>&1
	{
		echo
		echo "## PyTorch's CNN step (torch.profiler)"
		echo
		echo '```'
		tail -40 "$out/torch-profile.log"
		echo '```'
	} >>"$sum"
fi
cat "$sum"
exit $rc
