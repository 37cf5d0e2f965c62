"""Clips gradients by their global norm as torch.nn.utils.clip_grad_norm_
does: reads {"cases": [{"id", "max": bound, "grads": [[float64 values]]}]}
on stdin and writes one JSON line per case with the norm and the clipped
gradients (float64)."""
import json
import sys

import torch

torch.set_default_dtype(torch.float64)
for case in json.load(sys.stdin)["cases"]:
    params = []
    for g in case["grads"]:
        p = torch.zeros(len(g), requires_grad=True)
        p.grad = torch.tensor(g)
        params.append(p)
    norm = torch.nn.utils.clip_grad_norm_(params, case["max"])
    print(json.dumps({"id": case["id"], "norm": norm.item(), "grads": [p.grad.tolist() for p in params]}))
