"""A pre-norm transformer block as nanoGPT writes it, in PyTorch, float64,
from the weights eagerflow's nn.TransformerBlock holds (its Dense kernels
are [in, out]: x @ W): the reference of transformer_test.go.

Each case on standard input (JSON, see runScript): the input x [N, T, C],
the heads, whether causal, the loss weights w and the block's weights by
name; the output line holds the block's output, the gradients of
sum(out * w) for x and every weight, in the order given, and the
gradients of sum(v * d/dx sum(out * w)) for the same."""
import json
import math
import sys

import torch
import torch.nn.functional as F

from torch_eval import dec, enc  # float64 arrays as the Go side encodes them

torch.set_default_dtype(torch.float64)


def block(x, p, heads, causal):
    n, t, c = x.shape
    h = F.layer_norm(x, (c,), p["ln1/gamma"], p["ln1/beta"], 1e-5)
    q, k, v = (h @ p["attn/qkv/kernel"] + p["attn/qkv/bias"]).split(c, 2)
    q, k, v = (y.view(n, t, heads, c // heads).transpose(1, 2) for y in (q, k, v))
    s = (q @ k.transpose(-2, -1)) / math.sqrt(c // heads)
    if causal:
        s = s.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    y = (s.softmax(-1) @ v).transpose(1, 2).reshape(n, t, c)
    x = x + (y @ p["attn/out/kernel"] + p["attn/out/bias"])
    m = F.gelu(F.layer_norm(x, (c,), p["ln2/gamma"], p["ln2/beta"], 1e-5) @ p["mlp_up/kernel"] + p["mlp_up/bias"], approximate="tanh")
    return x + (m @ p["mlp_down/kernel"] + p["mlp_down/bias"])


def main():
    for case in json.load(sys.stdin)["cases"]:
        x = dec(case["x"]).requires_grad_()
        names = case["names"]
        p = {name: dec(a).requires_grad_() for name, a in zip(names, case["weights"])}
        out = block(x, p, case["heads"], case["causal"])
        params = [x] + [p[n] for n in names]
        grads = torch.autograd.grad((out * dec(case["w"])).sum(), params, create_graph=True)
        # The gradient of v . dloss/dx with respect to x and every weight.
        second = torch.autograd.grad((grads[0] * dec(case["v"])).sum(), params, allow_unused=True)
        print(json.dumps({"id": case["id"], "out": enc(out), "grads": [enc(g) for g in grads],
                          "second": [enc(g) for g in second]}), flush=True)


if __name__ == "__main__":
    main()
