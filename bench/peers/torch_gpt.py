"""PyTorch twin of examples/gpt's model (package examples/gpt/model), on
any device (the GPU twins in torch_gpu.py use it too).

The same shape and parts as eagerflow's: token and position embeddings,
pre-norm blocks (LayerNorm, causal multi-head attention through one joint
query-key-value projection, LayerNorm, a 4x MLP with the tanh GELU),
a last LayerNorm and a bias-free head to 256 byte logits; AdamW (decay 0.1
on the matrices only, as nanoGPT's groups) with a warm-up over a tenth of
the steps and a cosine decay from 3e-3 to 3e-4, gradients clipped to norm
1. Initialisation is Glorot-uniform for the kernels and embeddings, zeros
for the biases, as eagerflow's layers.

Dropout (0 unless asked: of the embeddings, the attention weights and
the residual branches, as eagerflow's model.Config.Dropout) is off in
the benchmarks but the GPU's dropout figure.

Attention is F.scaled_dot_product_attention where this PyTorch has it
(2.0 and later), else written out with the causal mask (Debian's 1.13).
Generation keeps each block's keys and values (a KV cache).

torch_bench.py imports it for BenchmarkTorchGPTStep and
BenchmarkTorchGPTGenerate; run it alone to train on Go's source tree for
the loss comparison of bench/README.md:

    python3 bench/peers/torch_gpt.py --steps 500 --seed 1
"""
import argparse
import math
import os
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 256
SDPA = getattr(F, "scaled_dot_product_attention", None)


class Block(nn.Module):
    def __init__(self, dim, heads, dropout=0.0):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.drop = nn.Dropout(dropout)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def attend(self, x, cache):
        n, t, c = x.shape
        q, k, v = (y.view(n, t, self.heads, c // self.heads).transpose(1, 2) for y in self.qkv(x).split(c, 2))
        past = 0
        if cache is not None:
            if cache:
                past = cache[0].shape[2]
                k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
            cache[:] = [k, v]
        mask = None  # query i (position past+i) sees keys up to past+i
        if past > 0 and t > 1:
            mask = torch.ones(t, past + t, dtype=torch.bool, device=x.device).tril(past)
        causal = past == 0 and t > 1
        p = self.dropout if self.training else 0.0
        if SDPA is not None:
            y = SDPA(q, k, v, attn_mask=mask, is_causal=causal, dropout_p=p)
        else:
            s = (q @ k.transpose(-2, -1)) * (1 / math.sqrt(q.shape[-1]))
            if causal:
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            y = F.dropout(s.softmax(-1), p) @ v
        return self.out(y.transpose(1, 2).reshape(n, t, c))

    def forward(self, x, cache=None):
        x = x + self.drop(self.attend(self.ln1(x), cache))
        return x + self.drop(self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh")))


class GPT(nn.Module):
    def __init__(self, layers=4, heads=4, dim=128, context=128, dropout=0.0):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, dim), nn.Embedding(context, dim)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(dim, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.xavier_uniform_(m.weight)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, ids, caches=None):
        past = caches[0][0].shape[2] if caches and caches[0] else 0
        x = self.drop(self.tok(ids) + self.pos(torch.arange(past, past + ids.shape[1], device=ids.device)))
        for i, b in enumerate(self.blocks):
            x = b(x, None if caches is None else caches[i])
        return self.head(self.ln(x))


def optimizer(model, steps):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    keep = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": keep, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.999), eps=1e-7)
    warm = max(steps // 10, 1)

    def rate(step):  # eagerflow's nn.Warmup(nn.Cosine(3e-3, steps, 3e-4), warm), as a factor of 3e-3
        if step < warm:
            return (step + 1) / warm
        s = step - warm
        return (3e-4 + (3e-3 - 3e-4) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))) / 3e-3

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, rate)


def train_step(model, opt, sched, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if sched is not None:
        sched.step()
    return loss.item()


def generate(model, context, first=ord("f")):
    caches = [[] for _ in model.blocks]
    nxt = torch.tensor([[first]], device=model.head.weight.device)
    with torch.no_grad():
        for _ in range(context):
            nxt = model(nxt, caches).argmax(-1)
    return nxt


def benches(report):
    """BenchmarkTorchGPTStep and BenchmarkTorchGPTGenerate: eagerflow's
    BenchmarkGPTStep and BenchmarkGPTGenerate (bench/nn_test.go)."""
    torch.manual_seed(1)
    model = GPT()
    opt, _ = optimizer(model, 1000)
    x, y = torch.randint(32, 122, (16, 128)), torch.randint(32, 122, (16, 128))
    report("BenchmarkTorchGPTStep", lambda: train_step(model, opt, None, x, y))
    torch.manual_seed(1)
    dropped = GPT(dropout=0.1)
    dopt, _ = optimizer(dropped, 1000)
    report("BenchmarkTorchGPTStep/dropout", lambda: train_step(dropped, dopt, None, x, y))
    report("BenchmarkTorchGPTGenerate", lambda: generate(model, 128))


def go_source(limit=4 << 20):
    """Up to limit bytes of the .go files under GOROOT/src in path order,
    as examples/gpt reads them (testdata and vendor skipped)."""
    root = os.path.join(subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True).stdout.strip(), "src")
    out = bytearray()

    def walk(d):
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if len(out) >= limit:
                return
            if os.path.isdir(p) and not os.path.islink(p):
                if name not in ("testdata", "vendor"):
                    walk(p)
            elif name.endswith(".go"):
                with open(p, "rb") as f:
                    out.extend(f.read())

    walk(root)
    return bytes(out[:limit])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    text = torch.frombuffer(bytearray(go_source()), dtype=torch.uint8).long()
    split = len(text) * 9 // 10
    train, val = text[:split], text[split:]
    model = GPT()
    opt, sched = optimizer(model, a.steps)
    g = torch.Generator().manual_seed(a.seed)

    def batch(src, n=16, t=128):
        at = torch.randint(0, len(src) - t - 1, (n,), generator=g)
        return torch.stack([src[i:i + t] for i in at]), torch.stack([src[i + 1:i + t + 1] for i in at])

    for step in range(a.steps):
        loss = train_step(model, opt, sched, *batch(train))
        if step % 100 == 0 or step == a.steps - 1:
            print(f"step {step + 1} loss {loss:.3f}", flush=True)
    with torch.no_grad():
        vl = sum(F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1)).item() for x, y in (batch(val) for _ in range(4))) / 4
    print(f"validation {vl:.3f}")


if __name__ == "__main__":
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    main()
