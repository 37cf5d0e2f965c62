"""Checks safetensors files of half tensors with PyTorch, without the
safetensors package: reads {"cases": [{"id", "read": path, "write": path}]}
on stdin; for "read", parses the file (8-byte header length, JSON header,
data) and prints each tensor's float32 values (as bit patterns) as PyTorch reads its
bfloat16 or float16 bytes; for "write", writes a file of two tensors
PyTorch makes (bfloat16 and float16) the same way and prints their
values."""
import json
import struct
import sys

import torch

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


def bits(t):
    """The float32 bit patterns of t's values (JSON has no infinities)."""
    return t.float().flatten().view(torch.int32).tolist()


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        t = torch.frombuffer(bytearray(body[lo:hi]), dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = {"dtype": e["dtype"], "shape": e["shape"], "bits": bits(t)}
    return out


def write(path):
    g = torch.Generator().manual_seed(3)
    ts = {"w_bf16": torch.randn(3, 4, generator=g).to(torch.bfloat16),
          "w_f16": (torch.randn(5, generator=g) * 1000).to(torch.float16)}
    header, body = {}, b""
    for name, t in ts.items():
        data = t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16" if t.dtype == torch.bfloat16 else "F16", "shape": list(t.shape),
                        "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + body)
    return {name: {"bits": bits(t)} for name, t in ts.items()}


for case in json.load(sys.stdin)["cases"]:
    if case.get("read"):
        print(json.dumps({"id": case["id"], "tensors": read(case["read"])}))
    else:
        print(json.dumps({"id": case["id"], "tensors": write(case["write"])}))
