"""Rounds float32 values to bfloat16 (PyTorch) and float16 (NumPy): reads
{"cases": [{"id", "bits": [float32 bit patterns]}]} on stdin and writes
one JSON line per case with the bit patterns of both conversions."""
import json
import sys

import numpy as np
import torch

for case in json.load(sys.stdin)["cases"]:
    f32 = np.array(case["bits"], dtype=np.uint32).view(np.float32)
    bf16 = torch.from_numpy(f32.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    f16 = f32.astype(np.float16).view(np.uint16)
    print(json.dumps({"id": case["id"], "bf16": bf16.tolist(), "f16": f16.tolist()}))
