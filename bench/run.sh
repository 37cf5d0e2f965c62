#!/usr/bin/env bash
# Runs eagerflow's benchmarks and its peers' in one go, on this machine, and
# leaves the raw outputs in bench/out/ (benchstat reads them).
#
#   bench/run.sh            # 10 rounds (3 samples each), then the table (bench/cmd/benchreport)
#   COUNT=6 bench/run.sh
#   WRITE=1 bench/run.sh    # also puts the table into bench/README.md and
#                           # draws bench/results.png
#
# Shared machines are noisy, so the libraries are interleaved: each round
# runs every eagerflow benchmark, then every Go peer, then PyTorch and
# NumPy, each giving three samples of about 0.3 s (the mean time per call
# over the sample, on every side alike), and benchstat takes the median of
# each over all the samples.
#
# Peers: gonum, Gorgonia and GoMLX's pure-Go backend (Go module bench/peers) always; PyTorch and NumPy
# when Debian's python3-torch and python3-numpy are installed, with OpenBLAS's
# OpenMP build (libopenblas0-openmp) and OPENBLAS_CORETYPE set to the CPU's
# kernel family (SkylakeX on AVX-512 machines, which OpenBLAS misdetects).
# To install them: apt-get install python3-torch python3-numpy libopenblas0-openmp
# glibc's malloc hands tensors above its mmap threshold back to the kernel
# on free, so a PyTorch step allocating 12 MB activations page-faults them
# in again on every step (the Fashion-MNIST CNN step: 120-170 ms against
# 25-36 ms, depending on what ran before); the MALLOC_* settings below
# keep them in the heap, as PyTorch at its best runs (jemalloc or
# tcmalloc do the same).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-10}
out=bench/out
mkdir -p "$out"
{
  echo "# $(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
  echo "# flags: $(grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f)$' | xargs)"
} > "$out/machine.txt"
cat "$out/machine.txt"

py=/usr/bin/python3
havepy=1
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  havepy=0
  echo "skipping PyTorch and NumPy: $py cannot import torch and numpy (see the comment at the top of bench/run.sh)" >&2
fi
kind=SkylakeX
grep -q avx512f /proc/cpuinfo || kind=Haswell

go test -c -o "$out/eagerflow.test" ./bench
(cd bench/peers && go test -c -o "../out/peers.test" .)
: > "$out/eagerflow.txt"
: > "$out/go-peers.txt"
: > "$out/python-peers.txt"
for round in $(seq "$count"); do
  echo "== round $round of $count" >&2
  (cd bench && ./out/eagerflow.test -test.run '^$' -test.bench . -test.benchmem -test.benchtime 0.3s -test.count 3) >> "$out/eagerflow.txt"
  (cd bench/peers && ../out/peers.test -test.run '^$' -test.bench . -test.benchmem -test.benchtime 0.3s -test.count 3) >> "$out/go-peers.txt"
  if [ "$havepy" = 1 ]; then
    OPENBLAS_CORETYPE=$kind OMP_NUM_THREADS=$(nproc) BENCH_THREADS=$(nproc) \
      MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 \
      "$py" bench/peers/torch_bench.py >> "$out/python-peers.txt"
  fi
done
for f in eagerflow go-peers python-peers; do
  [ -s "$out/$f.txt" ] && go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$out/$f.txt"
done
if [ "${WRITE:-0}" = 1 ]; then
  go run ./bench/cmd/benchreport -out "$out" -md bench/README.md -png bench/results.png
else
  go run ./bench/cmd/benchreport -out "$out"
fi
