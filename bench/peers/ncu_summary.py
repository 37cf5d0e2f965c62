"""Kernel time per kernel from Nsight Compute's CSV (ncu --csv --metrics
gpu__time_duration.sum ...): total microseconds, launches and name,
heaviest first. Lines that are not the CSV (the program's own output,
ncu's notes) are passed over; where there is no CSV at all, the log's
last lines say why.

    python3 ncu_summary.py ncu.log
"""
import csv
import sys
from collections import defaultdict

SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def main(path):
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if '"Kernel Name"' in l and '"Metric Value"' in l), None)
    if start is None:
        print("no ncu CSV in", path)
        print("\n".join(lines[-15:]))
        return
    rows = csv.reader(l for l in lines[start:] if l.startswith('"'))
    header = next(rows)
    col = {name: i for i, name in enumerate(header)}
    total, count = defaultdict(float), defaultdict(int)
    for r in rows:
        if len(r) < len(header) or r[col["Metric Name"]] != "gpu__time_duration.sum":
            continue
        name = r[col["Kernel Name"]].split("(")[0]
        try:
            v = float(r[col["Metric Value"]].replace(",", ""))
        except ValueError:
            continue
        total[name] += v * SCALE.get(r[col["Metric Unit"]], 1.0)
        count[name] += 1
    for name in sorted(total, key=total.get, reverse=True):
        print(f"{total[name]:10.1f} us {count[name]:5d}  {name}")
    print(f"{sum(total.values()):10.1f} us {sum(count.values()):5d}  (all)")


if __name__ == "__main__":
    main(sys.argv[1])
