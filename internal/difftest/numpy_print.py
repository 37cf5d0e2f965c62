"""Prints the arrays of print_test.go as NumPy's str() does: reads
{"cases": [...]} on stdin (dtype, shape, values as strings, an optional
fixed precision) and writes one JSON line per case with the text."""
import json
import sys

import numpy as np

DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int32": np.int32,
          "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}

for case in json.load(sys.stdin)["cases"]:
    dt = DTYPES[case["dtype"]]
    case["values"] = case["values"] or []
    if dt is np.bool_:
        vals = [v == "true" for v in case["values"]]
    elif dt in (np.float16, np.float32, np.float64):
        vals = [float(v) for v in case["values"]]
    else:
        vals = [int(v) for v in case["values"]]
    a = np.array(vals, dtype=dt).reshape(case["shape"])
    if case.get("precision", -1) >= 0:
        with np.printoptions(precision=case["precision"], floatmode="fixed"):
            text = str(a)
    else:
        text = str(a)
    print(json.dumps({"id": case["id"], "text": text}))
