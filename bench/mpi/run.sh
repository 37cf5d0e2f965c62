#!/usr/bin/env bash
# AllReduce bandwidth of collective/mpi against MPI_Allreduce called from C
# (testdata/allreduce.c), in one run under mpirun on this machine: NP processes
# (default 2) on loopback, ROUNDS interleaved rounds (default 3); then the
# data-parallel training step (BenchmarkDataParallelStep) and the pipelined
# one (BenchmarkPipelineStep) on 1 process and on NP, interleaved, for the
# scaling. Needs Open MPI with its compiler wrapper:
# apt-get install openmpi-bin libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
np=${NP:-2}
rounds=${ROUNDS:-3}
out=bench/out
mkdir -p "$out"
mpicc -O2 -o "$out/allreduce-c" bench/mpi/testdata/allreduce.c
go test -c -o "$out/allreduce-go.test" ./bench/mpi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi_on() { # mpi_on NP COMMAND...: COMMAND on NP processes on loopback
  mpirun -np "$1" --oversubscribe --mca btl self,tcp,vader --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "${@:2}"
}
: > "$out/allreduce.txt"
for r in $(seq "$rounds"); do
  echo "== round $r of $rounds" >&2
  mpi_on "$np" "$out/allreduce-c" >> "$out/allreduce.txt"
  # Every rank runs the same fixed iteration counts (a calibrating
  # benchmark would make the ranks' counts differ and deadlock); rank 0
  # alone prints.
  mpi_on "$np" "$out/allreduce-go.test" -test.run '^$' -test.bench 'AllReduce(InPlace)?$' -test.benchtime 1x 2>&1 |
    grep '^BenchmarkAllReduce' >> "$out/allreduce.txt"
done
cat "$out/allreduce.txt"
# scaling NAME BENCH: BENCH on 1 process and on NP, ROUNDS rounds, into NAME.txt
scaling() {
  : > "$out/$1.txt"
  for r in $(seq "$rounds"); do
    echo "== $2, round $r of $rounds" >&2
    for p in 1 "$np"; do
      mpi_on "$p" "$out/allreduce-go.test" -test.run '^$' -test.bench "$2" -test.benchtime 1x 2>&1 |
        grep "^Benchmark$2" | sed "s/^/np=$p /" >> "$out/$1.txt"
    done
  done
  cat "$out/$1.txt"
}
scaling dpstep DataParallelStep
scaling pipeline PipelineStep
# A traced loop partitioned across two processes (ns per iteration).
for r in $(seq "$rounds"); do
  mpi_on 2 "$out/allreduce-go.test" -test.run '^$' -test.bench PartitionedLoopRanks -test.benchtime 1x 2>&1 |
    grep '^BenchmarkPartitionedLoopRanks'
done
