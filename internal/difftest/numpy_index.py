"""Evaluates the indexing cases of index_test.go with NumPy: reads
{"cases": [...]} on stdin, writes one JSON line per case with the result's
shape and values, and the gradient of sum(result * w) for w = 1, 2, ...
(np.add.at over the same index), or the error NumPy raised."""
import json
import sys

import numpy as np


def item(it):
    if "int" in it:
        return it["int"]
    if "slice" in it:
        return slice(*it["slice"])
    if "ellipsis" in it:
        return Ellipsis
    if "newaxis" in it:
        return None
    if "mask" in it or "array" not in it:
        return np.array(it.get("mask", []), dtype=bool).reshape(it["shape"])
    return np.array(it["array"], dtype=np.int64).reshape(it["shape"])


for case in json.load(sys.stdin)["cases"]:
    shape = case["shape"]
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    idx = tuple(item(it) for it in case["items"] or [])
    out = {"id": case["id"]}
    try:
        y = x[idx]
        w = np.arange(1, y.size + 1, dtype=np.float64).reshape(y.shape)
        g = np.zeros_like(x)
        np.add.at(g, idx, w)
        out.update(shape=list(y.shape), values=y.ravel().tolist(), grad=g.ravel().tolist())
    except IndexError as e:
        out["error"] = str(e)
    print(json.dumps(out))
