"""One table of the GPU benchmarks beside their twins: reads Go benchmark
output (eagerflow's, backend/cuda) and bench/peers/torch_gpu.py's, pairs
BenchmarkX with BenchmarkTorchX and BenchmarkJaxX, and prints markdown:
medians over repeats, and the ratio in eagerflow's favour (above 1:
eagerflow is faster, or moves more bytes or FLOPs per second).

    python3 gpu_table.py bench.log torch.log
"""
import re
import statistics
import sys
from collections import defaultdict

# Units where more is better; times otherwise.
RATES = {"MB/s", "TFLOP/s", "GFLOP/s"}
# The unit each benchmark is compared in (its first otherwise).
PREFER = ["TFLOP/s", "MB/s", "ns/op"]


def parse(paths):
    """name -> unit -> [values], names without the -N CPU suffix."""
    out = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path) as f:
            for raw in f:
                fields = raw.split()
                if len(fields) < 4 or not fields[0].startswith("Benchmark"):
                    continue
                name = re.sub(r"-\d+$", "", fields[0])
                rest = fields[2:]
                for value, unit in zip(rest[0::2], rest[1::2]):
                    try:
                        out[name][unit].append(float(value))
                    except ValueError:
                        pass
    return out


def fmt(v, unit):
    if unit == "ns/op":
        if v >= 1e6:
            return f"{v / 1e6:.3g} ms"
        if v >= 1e3:
            return f"{v / 1e3:.3g} µs"
        return f"{v:.3g} ns"
    if unit == "MB/s":
        return f"{v / 1e3:.4g} GB/s"
    return f"{v:.4g} {unit}"


def main(paths):
    runs = parse(paths)
    peers = ("Torch", "Jax")
    ours = sorted(n for n in runs if not any(n.startswith("Benchmark" + p) for p in peers))
    print("| benchmark | eagerflow | PyTorch | ratio | JAX | ratio | peak MB (eagerflow / PyTorch) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in ours:
        units = runs[name]
        unit = next((u for u in PREFER if u in units), next(iter(units)))
        mine = statistics.median(units[unit])
        cells = [name.removeprefix("Benchmark"), fmt(mine, unit)]
        for p in peers:
            twin = runs.get("Benchmark" + p + name.removeprefix("Benchmark"), {}).get(unit)
            if not twin:
                cells += ["", ""]
                continue
            theirs = statistics.median(twin)
            ratio = mine / theirs if unit in RATES else theirs / mine
            cells += [fmt(theirs, unit), f"{ratio:.2f}"]
        peak = units.get("peak-MB")
        tpeak = runs.get("BenchmarkTorch" + name.removeprefix("Benchmark"), {}).get("peak-MB")
        cells.append(f"{statistics.median(peak):.0f} / {statistics.median(tpeak):.0f}" if peak and tpeak else "")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
