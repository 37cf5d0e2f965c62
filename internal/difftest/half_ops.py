"""Evaluates ops on half-precision arrays for half_ops_test.go: reads
{"cases": [{"id", "op", "dtype", "a": [bits], "b": [bits], "shape_a",
"shape_b"}]} on stdin and writes each result's bit patterns. bfloat16 is
computed by PyTorch's own bfloat16 ops; float16 (which PyTorch's CPU ops
mostly lack) in float32 by NumPy and rounded once, the semantics both
define for their half types."""
import json
import sys

import numpy as np
import torch

TORCH = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "exp": torch.exp, "log": torch.log, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "sqrt": torch.sqrt, "relu": torch.relu, "neg": torch.neg,
    "abs": torch.abs, "sum_rows": lambda a: a.sum(1), "sum_all": lambda a: a.sum(),
    "mean_rows": lambda a: a.mean(1), "amax_rows": lambda a: a.amax(1),
    "softmax_rows": lambda a: torch.softmax(a, 1),
    # PyTorch 1.13's CPU bfloat16 matmul sums in bfloat16 (its result is the
    # sequential bfloat16 sum, up to 16 units off the float32 one); the
    # product's definition here is float32 accumulation rounded once, as
    # its CUDA kernels and XLA compute it.
    "matmul": lambda a, b: (a.float() @ b.float()).to(torch.bfloat16),
    # Self-attention of a's rows in float32, rounded once (PyTorch 1.13's
    # CPU softmax and products in bfloat16 round at each step).
    "attention": lambda a: self_attention(a.float()).to(torch.bfloat16),
    "sum_squares": lambda a, b: sum_squares(a.double(), b.double()).float().to(torch.bfloat16),
    "scale_each": lambda a: a * torch.tensor(0.3).to(torch.bfloat16),
}
def sum_squares(a, b):
    """Σa² + Σb² in a's dtype (float64)."""
    return (a * a).sum() + (b * b).sum()

def self_attention(x):
    """softmax(x·xᵀ/√d)·x over x's rows, in x's dtype (float32)."""
    return torch.softmax(x @ x.T / x.shape[1] ** 0.5, 1) @ x


NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "exp": np.exp,
    "log": np.log, "tanh": np.tanh, "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "sqrt": np.sqrt,
    "relu": lambda a: np.maximum(a, 0), "neg": np.negative, "abs": np.abs,
    "sum_rows": lambda a: a.sum(1), "sum_all": lambda a: a.sum(), "mean_rows": lambda a: a.mean(1),
    "amax_rows": lambda a: a.max(1),
    "softmax_rows": lambda a: np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True),
    "matmul": np.matmul,
    "attention": lambda a: self_attention(torch.from_numpy(a)).numpy(),
    "sum_squares": lambda a, b: np.float32(sum_squares(a.astype(np.float64), b.astype(np.float64))),
    "scale_each": lambda a: a * np.float32(np.float16(0.3)),
}

for case in json.load(sys.stdin)["cases"]:
    args = []
    for name in ("a", "b"):
        if case.get(name) is not None:
            bits = np.array(case[name], dtype=np.uint16).reshape(case["shape_" + name])
            args.append(bits)
    if case["dtype"] == "bfloat16":
        ts = [torch.from_numpy(b.astype(np.int16)).view(torch.bfloat16) for b in args]
        out = TORCH[case["op"]](*ts).reshape(-1).view(torch.int16).numpy().astype(np.uint16)
    else:
        xs = [b.view(np.float16).astype(np.float32) for b in args]
        out = np.asarray(NUMPY[case["op"]](*xs), dtype=np.float32).astype(np.float16).reshape(-1).view(np.uint16)
    print(json.dumps({"id": case["id"], "bits": out.tolist()}))
