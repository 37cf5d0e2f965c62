"""PyTorch (and JAX, where installed) on the GPU: the twins of
backend/cuda's GPU benchmarks, run by scripts/gpu-run.sh on the same
machine. Each line is in Go's benchmark format, named after the eagerflow
benchmark it pairs with, Torch or Jax put before the name
(BenchmarkTorchMLPStepGPU pairs with BenchmarkMLPStepGPU), so that
bench/peers/gpu_table.py can set them side by side.

EAGERFLOW_GPU_DRYRUN=1 runs every twin a few times on the CPU, to check
the script where there is no GPU (its figures mean nothing then)."""
import os
import statistics
import sys
import time

import torch

DRY = os.environ.get("EAGERFLOW_GPU_DRYRUN") == "1"
if not DRY:
    assert torch.cuda.is_available(), "no CUDA device for PyTorch"
dev = torch.device("cpu" if DRY else "cuda")


def sync():
    if not DRY:
        torch.cuda.synchronize()


def reps(n):
    return 2 if DRY else n


def line(name, value, unit, extra=""):
    print(f"{name} 1 {value:.6g} {unit}{extra}", flush=True)


def host_ns(fn, n, warm=10):
    """Wall time per call in nanoseconds, the device drained before and after."""
    for _ in range(reps(warm)):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(reps(n)):
        fn()
    sync()
    return 1e9 * (time.perf_counter() - t0) / reps(n)


def median_ms(fn, n=50, warm=5):
    """The median of CUDA-event times (wall times in a dry run), in ms."""
    for _ in range(reps(warm)):
        fn()
    sync()
    times = []
    for _ in range(reps(n)):
        if DRY:
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
            continue
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def sustained_ms(fn, seconds=0.5):
    """Milliseconds a call of fn takes run back to back for about seconds,
    the device drained at the ends: how Go's benchmarks time eagerflow's
    GEMMs (-benchtime 0.5s), at the clocks a sustained load holds. A
    median of single calls each timed by events (median_ms) is several
    per cent faster for a large GEMM on the tensor cores, whose power
    draw lowers the clocks within a fraction of a second; the GEMMs are
    compared both ways timed alike."""
    for _ in range(reps(3)):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(reps(5)):
        fn()
    sync()
    n = max(reps(5), int(seconds / ((time.perf_counter() - t0) / reps(5))))
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return 1e3 * (time.perf_counter() - t0) / n


def gemm_lines(names, fn, flops):
    """The GEMM's TFLOP/s timed as Go times eagerflow's (a line for each
    eagerflow benchmark it pairs with) and as single calls timed by events
    (the first name's /burst, for the record)."""
    tflops = flops / sustained_ms(fn) / 1e9
    for n in names:
        line(n, tflops, "TFLOP/s")
    line(names[0] + "/burst", flops / median_ms(fn, n=20) / 1e9, "TFLOP/s")


name = "cpu (dry run)" if DRY else torch.cuda.get_device_name()
print(f"# torch {torch.__version__} CUDA {torch.version.cuda} on {name}", flush=True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

def train_step(model, opt, x, y, read=True, autocast=None):
    """One eager training step of model on (x, y) with cross-entropy,
    reading the loss on the host as nn.TrainStep does (unless read is
    false: BenchmarkMLPStepGPU's tape step reads nothing); under
    torch.autocast to the dtype autocast names, where it is set (the twin
    of a model whose nn.Policy is mixed_bfloat16)."""
    def step():
        opt.zero_grad(set_to_none=True)
        if autocast is None:
            loss = torch.nn.functional.cross_entropy(model(x), y)
        else:
            with torch.autocast(device_type="cpu" if DRY else "cuda", dtype=autocast):
                loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item() if read else None
    return step


def graph_step(model, x, y):
    """The training step of model on (x, y) with cross-entropy and
    capturable Adam (1e-3) captured as one CUDA graph, replayed each call,
    the loss read on the host: the twin of nn.RecordedTrainStep (whose
    graph holds the forward and backward pass, its Adam one fused launch
    after it). Raises where PyTorch cannot capture."""
    gadam = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm up on a side stream before capture
            gadam.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            gadam.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    gadam.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        gloss = torch.nn.functional.cross_entropy(model(x), y)
        gloss.backward()
        gadam.step()

    def step():
        graph.replay()
        return gloss.item()
    return step


# The Fashion-MNIST CNN of internal/benchmodels: conv 3x3x32 same relu,
# pool 2, conv 3x3x64 same relu, pool 2, dense 128 relu, dense 10; Adam
# 1e-3; a batch of 128 28x28 images; NCHW and NHWC (channels_last). Eager
# reads the loss each step (loss.item()); "recorded" is the step captured
# as a CUDA graph with capturable Adam (the loss read each step too), the
# twin of nn.RecordedTrainStep (whose graph holds the forward and backward
# pass, its Adam one fused launch after it).
def fashion(memory):
    fm = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10)).to(dev).to(memory_format=memory)
    xf = torch.rand(128, 1, 28, 28, device=dev).contiguous(memory_format=memory)
    yf = torch.arange(128, device=dev) % 10
    return fm, xf, yf


# benchmodels.FashionCNNNormed: the CNN above with BatchNorm after each
# convolution (before its ReLU) and dropout 0.25 after the dense layer;
# the twin of BenchmarkFashionCNNNormedTrainStepGPU.
def fashion_normed(memory):
    fm = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 128), torch.nn.ReLU(), torch.nn.Dropout(0.25),
        torch.nn.Linear(128, 10)).to(dev).to(memory_format=memory)
    xf = torch.rand(128, 1, 28, 28, device=dev).contiguous(memory_format=memory)
    yf = torch.arange(128, device=dev) % 10
    return fm, xf, yf


def peak_mb():
    return 0.0 if DRY else torch.cuda.max_memory_allocated() / (1 << 20)


def reset_peak():
    if not DRY:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()



if os.environ.get("EAGERFLOW_TORCH_PROFILE") == "1":
    # The CNN step's kernels by CUDA time (torch.profiler), NHWC, three
    # steps after three of warm-up.
    from torch.profiler import ProfilerActivity, profile
    fm, xf, yf = fashion(torch.channels_last)
    pstep = train_step(fm, torch.optim.Adam(fm.parameters(), lr=1e-3), xf, yf)
    for _ in range(3):
        pstep()
    acts = [ProfilerActivity.CPU] + ([] if DRY else [ProfilerActivity.CUDA])
    with profile(activities=acts) as prof:
        for _ in range(3):
            pstep()
    key = "self_cpu_time_total" if DRY else "self_cuda_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=30, max_name_column_width=70))
    sys.exit(0)

# Per-op cost of a small eager add.
x16 = torch.randn(16, device=dev)
line("BenchmarkTorchEagerAddGPU", host_ns(lambda: x16 + x16, 20000, warm=1000), "ns/op")

n = 1 << (20 if DRY else 26)
a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
line("BenchmarkTorchAddBandwidthGPU", 3 * 4 * n / median_ms(lambda: a + b) / 1e3, "MB/s")
src = torch.randn(2 * n, device=dev)
dst = torch.empty_like(src)
line("BenchmarkTorchCopyBandwidthGPU", 2 * 4 * 2 * n / median_ms(lambda: dst.copy_(src)) / 1e3, "MB/s")
del a, b, src, dst

m = 512 if DRY else 8192
p, q = torch.randn(m, m, device=dev), torch.randn(m, m, device=dev)
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    gemm_lines([f"BenchmarkTorchMatMulGPU/op/tf32={str(tf32).lower()}", f"BenchmarkTorchMatMulGPU/cublas/tf32={str(tf32).lower()}"],
               lambda: p @ q, 2 * m**3)
torch.backends.cuda.matmul.allow_tf32 = False
for half, name in ((torch.bfloat16, "bfloat16"), (torch.float16, "float16")):
    if DRY and half == torch.float16:
        continue  # PyTorch's CPU has no float16 product
    ph, qh = p.to(half), q.to(half)
    gemm_lines([f"BenchmarkTorchMatMulGPU/op/{name}"], lambda: ph @ qh, 2 * m**3)
    del ph, qh
# FP8 (e4m3 operands, per-tensor scales, bfloat16 out): torch._scaled_mm,
# its second operand column-major as it requires. Hopper and Ada only.
if not DRY and hasattr(torch, "float8_e4m3fn") and torch.cuda.get_device_capability() >= (8, 9):
    p8, q8 = p.to(torch.float8_e4m3fn), q.t().contiguous().to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=dev)
    # Its operand already column-major: the GEMM alone, as eagerflow's
    # cublas/float8_e4m3 (whose op/ turns b first).
    gemm_lines(["BenchmarkTorchMatMulGPU/op/float8_e4m3", "BenchmarkTorchMatMulGPU/cublas/float8_e4m3"],
               lambda: torch._scaled_mm(p8, q8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), 2 * m**3)
    del p8, q8
del p, q

# One training step of a 784-512-512-10 MLP, batch 256, Adam; the loss
# read each step, as nn.TrainStep reads it.
model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
xb, yb = torch.randn(256, 784, device=dev), torch.randint(0, 10, (256,), device=dev)
mlp_step = train_step(model, torch.optim.Adam(model.parameters(), lr=1e-3), xb, yb, read=False)
line("BenchmarkTorchMLPStepGPU", host_ns(mlp_step, 200), "ns/op")
# The same step reading the loss (nn.TrainStep's), eager and as one CUDA
# graph: the twins of BenchmarkMLPTrainStepGPU/eager and /recorded.
line("BenchmarkTorchMLPTrainStepGPU/eager", host_ns(train_step(model, torch.optim.Adam(model.parameters(), lr=1e-3), xb, yb), 200), "ns/op")
# Mixed bfloat16 (torch.autocast), the twin of a Policy of mixed_bfloat16.
line("BenchmarkTorchMLPTrainStepGPU/eager/mixed_bfloat16",
     host_ns(train_step(model, torch.optim.Adam(model.parameters(), lr=1e-3), xb, yb, autocast=torch.bfloat16), 200), "ns/op")
if not DRY:
    try:
        line("BenchmarkTorchMLPTrainStepGPU/recorded", host_ns(graph_step(model, xb, yb), 500), "ns/op")
    except Exception as e:
        print(f"# torch CUDA graph MLP: {type(e).__name__}: {e}", flush=True)

# The RNN loop gradient: 50 steps of h = tanh(h W + x_t), h [1 128], W
# [128 128], float32; forward and backward.
g = torch.Generator(device="cpu").manual_seed(11)
w = (0.08 * torch.randn(128, 128, generator=g)).to(dev).requires_grad_()
xs = torch.randn(50, 128, generator=g).to(dev)


def rnn_grad():
    h = torch.zeros(1, 128, device=dev)
    for t in range(50):
        h = torch.tanh(h @ w + xs[t])
    (gw,) = torch.autograd.grad(h.sum(), w)
    return gw


line("BenchmarkTorchRNNLoopGradGPU/eager", host_ns(rnn_grad, 100), "ns/op")


def graphed(fn):
    """fn captured as one CUDA graph after a warm-up on a side stream; the
    returned function replays it: the twin of a trace.Function with
    Record whose graph is recorded."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


# The loop's 50 steps and their gradient as one CUDA graph: the twin of
# /recorded (eagerflow's loop traced unrolled, its trip count fixed).
if not DRY:
    try:
        line("BenchmarkTorchRNNLoopGradGPU/recorded", host_ns(graphed(rnn_grad), 200), "ns/op")
    except Exception as e:
        print(f"# torch CUDA graph RNN loop: {type(e).__name__}: {e}", flush=True)


# BenchmarkConvergenceLoopGPU's twin: h = tanh(h W + x) until no element
# moves by more than 1e-5, at most 100 times, the predicate read on the
# host every iteration (PyTorch's eager loop; a CUDA graph cannot hold a
# loop the data decide). iters is its trip count.
w_conv = (0.06 * torch.randn(128, 128, generator=g)).to(dev)
x_conv = torch.randn(1, 128, generator=g).to(dev)


def converge():
    h, delta, n = torch.zeros(1, 128, device=dev), torch.ones((), device=dev), 0
    while n < 100 and (delta > 1e-5).item():
        nh = torch.tanh(h @ w_conv + x_conv)
        delta, h, n = (nh - h).abs().amax(), nh, n + 1
    return n


# PyTorch has no recorded form of such a loop: its eager loop stands
# beside each of eagerflow's modes.
conv_ns, conv_iters = host_ns(converge, 100), converge()
for mode in ("eager", "traced", "recorded"):
    line(f"BenchmarkTorchConvergenceLoopGPU/{mode}", conv_ns, "ns/op", f" {conv_iters} iters")


# BenchmarkLoopGradientGPU's twin: the gradient in w of sum(h^2) after
# h = tanh(h w) + h while sum(h^2) < 200, at most 16 times, the predicate
# read on the host each iteration, under autograd.
g_lg = torch.Generator(device="cpu").manual_seed(12)
w_lg = (0.05 * torch.randn(64, 64, generator=g_lg)).to(dev).requires_grad_()
x_lg = (0.2 * torch.randn(4, 64, generator=g_lg)).to(dev)


def loop_gradient():
    h, n = x_lg, 0
    while n < 16 and ((h * h).sum() < 200).item():
        h, n = torch.tanh(h @ w_lg) + h, n + 1
    (g,) = torch.autograd.grad((h * h).sum(), w_lg, allow_unused=True)
    return n


lg_ns, lg_iters = host_ns(loop_gradient, 50), loop_gradient()
for mode in ("eager", "traced", "recorded"):
    line(f"BenchmarkTorchLoopGradientGPU/{mode}", lg_ns, "ns/op", f" {lg_iters} iters")


# examples/charrnn's step (internal/benchmodels.CharLSTM): embedding 16
# of 65 characters, an LSTM of 96 over 32 steps, dense logits per step,
# Adam 0.01, batch 16; the loss read each step.
class CharLSTM(torch.nn.Module):
    def __init__(self, vocab=65):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, 16)
        self.lstm = torch.nn.LSTM(16, 96, batch_first=True)
        self.out = torch.nn.Linear(96, vocab)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return self.out(h.reshape(-1, 96))


ids = torch.tensor([(i * 7 + i // 5) % 65 for i in range(16 * 33)], device=dev).reshape(16, 33)
cx, cy = ids[:, :32].contiguous(), ids[:, 1:].reshape(-1).contiguous()
clstm = CharLSTM().to(dev)
char_step = train_step(clstm, torch.optim.Adam(clstm.parameters(), lr=0.01), cx, cy)
line("BenchmarkTorchCharRNNStepGPU/eager", host_ns(char_step, 200), "ns/op")
# As one CUDA graph: the twin of /recorded (eagerflow's LSTM traced step by
# step, its 32 steps in one graph).
if not DRY:
    try:
        line("BenchmarkTorchCharRNNStepGPU/recorded", host_ns(graph_step(clstm, cx, cy), 500), "ns/op")
    except Exception as e:  # cuDNN's LSTM refusing capture, say: say so, go on
        print(f"# torch CUDA graph LSTM: {type(e).__name__}: {e}", flush=True)

# examples/gpt's model in nanoGPT's small shape (torch_gpt.py, the CPU
# twin too; BenchmarkGPTStepGPU): a training step (gradients clipped, the
# loss read) and the whole context generated a byte at a time with the KV
# cache; then causal attention forward and backward at 1024 and 4096
# (batch 4, 8 heads of 64, and in bfloat16 4 heads of 128 too;
# BenchmarkAttentionGPU) through PyTorch's fused
# F.scaled_dot_product_attention.
import torch_gpt  # noqa: E402  (beside this file in the bundle)

gshape, gn = (dict(layers=1, heads=2, dim=16, context=8), 2) if DRY else (dict(layers=6, heads=6, dim=384, context=256), 64)
ctx = gshape["context"]
torch.manual_seed(1)
reset_peak()
gpt = torch_gpt.GPT(**gshape).to(dev)
gopt, _ = torch_gpt.optimizer(gpt, 1000)
gv = torch.tensor([32 + (i * 7 + i // 5) % 90 for i in range(gn * ctx)], device=dev)
gx, gy = gv.reshape(gn, ctx), torch.cat([gv[1:], gv[:1] * 0 + 32]).reshape(gn, ctx)
ns = host_ns(lambda: torch_gpt.train_step(gpt, gopt, None, gx, gy), 50)
line("BenchmarkTorchGPTStepGPU/eager", ns, "ns/op", f" {peak_mb():.1f} peak-MB")


def autocast_step():
    with torch.autocast(device_type="cpu" if DRY else "cuda", dtype=torch.bfloat16):
        return torch_gpt.train_step(gpt, gopt, None, gx, gy)


reset_peak()
ns = host_ns(autocast_step, 50)
line("BenchmarkTorchGPTStepGPU/eager/mixed_bfloat16", ns, "ns/op", f" {peak_mb():.1f} peak-MB")

# The same with nanoGPT's character model's dropout of 0.2 (the
# embeddings, the attention weights through SDPA's dropout_p, the
# residual branches), in mixed bfloat16.
torch.manual_seed(1)
dgpt = torch_gpt.GPT(dropout=0.2, **gshape).to(dev)
dopt, _ = torch_gpt.optimizer(dgpt, 1000)


def dropout_step():
    with torch.autocast(device_type="cpu" if DRY else "cuda", dtype=torch.bfloat16):
        return torch_gpt.train_step(dgpt, dopt, None, gx, gy)


reset_peak()
ns = host_ns(dropout_step, 50)
line("BenchmarkTorchGPTStepGPU/eager/mixed_bfloat16/dropout", ns, "ns/op", f" {peak_mb():.1f} peak-MB")
del dgpt, dopt
ns = host_ns(lambda: torch_gpt.generate(gpt, ctx), 5, warm=2)
# PyTorch's eager decoding loop stands beside both of eagerflow's modes
# (its CUDA graphs cannot hold the loop over the positions).
for mode in ("eager", "recorded"):
    line(f"BenchmarkTorchGPTGenerateGPU/{mode}", ns, "ns/op", f" {ctx * 1e9 / ns:.1f} tokens/s")
if torch_gpt.SDPA is not None:
    for t in ((128,) if DRY else (1024, 4096)):
        qkv = [torch.randn(4, 8, t, 64, device=dev, requires_grad=True) for _ in range(3)]

        def attend():
            torch_gpt.SDPA(*qkv, is_causal=True).sum().backward()
        line(f"BenchmarkTorchAttentionGPU/{t}", host_ns(attend, 20), "ns/op")
        qkv = [torch.randn(4, 8, t, 64, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
        line(f"BenchmarkTorchAttentionGPU/{t}/bfloat16", host_ns(attend, 20), "ns/op")
        qkv = [torch.randn(4, 4, t, 128, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
        line(f"BenchmarkTorchAttentionGPU/{t}/bfloat16/heads128", host_ns(attend, 20), "ns/op")
        qkv = [torch.randn(4, 8, t, 64, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]

        def attend_dropped():  # the weights dropped at 0.1 inside the kernels
            torch_gpt.SDPA(*qkv, is_causal=True, dropout_p=0.1).sum().backward()
        line(f"BenchmarkTorchAttentionGPU/{t}/bfloat16/dropout", host_ns(attend_dropped, 20), "ns/op")
        qkv = [torch.randn(4, 8, t, 64, device=dev, requires_grad=True) for _ in range(3)]
        line(f"BenchmarkTorchAttentionGPU/{t}/dropout", host_ns(attend_dropped, 20), "ns/op")

# One op's training step (BenchmarkOpStepGPU, internal/benchmodels'
# OpSteps at the GPU's sizes): the op forward, its sum's gradients.
import torch_opsteps  # noqa: E402  (beside this file in the bundle)

for name, step in torch_opsteps.op_steps(torch_opsteps.DRY_SIZES if DRY else torch_opsteps.GPU_SIZES, dev):
    line(f"BenchmarkTorchOpStepGPU/{name}", host_ns(step, 20), "ns/op")

# Max pooling (3x3, stride 2), average pooling (3x3, stride 2, padding 1
# counted out of the averages), a depthwise convolution (3x3, stride 2,
# padding 1: the output size of eagerflow's SAME) and BatchNorm in
# training with their gradients, at ResNet's and MobileNet's shapes
# (BenchmarkWindowOpsGPU), the gradients handed back as eagerflow's are
# (none accumulated).
wn, wsize = (1, 16) if DRY else (32, 112)
for fmt, memory in (("NCHW", torch.contiguous_format), ("NHWC", torch.channels_last)):
    px = torch.randn(wn, 64, wsize, wsize, device=dev).to(memory_format=memory).requires_grad_(True)

    def pool():
        torch.autograd.grad(torch.nn.functional.max_pool2d(px, 3, 2).sum(), [px])
    line(f"BenchmarkTorchWindowOpsGPU/MaxPool3x3s2/{fmt}", host_ns(pool, 20), "ns/op")

    def avg_pool():
        torch.autograd.grad(torch.nn.functional.avg_pool2d(px, 3, 2, padding=1, count_include_pad=False).sum(), [px])
    line(f"BenchmarkTorchWindowOpsGPU/AvgPool3x3s2/{fmt}", host_ns(avg_pool, 20), "ns/op")
    dx = torch.randn(wn, 96, wsize, wsize, device=dev).to(memory_format=memory).requires_grad_(True)
    dwf = torch.randn(96, 1, 3, 3, device=dev).requires_grad_(True)

    def depthwise():
        torch.autograd.grad(torch.nn.functional.conv2d(dx, dwf, stride=2, padding=1, groups=96).sum(), [dx, dwf])
    line(f"BenchmarkTorchWindowOpsGPU/Depthwise3x3s2/{fmt}", host_ns(depthwise, 20), "ns/op")
    bx = torch.randn(wn, 64, wsize, wsize, device=dev).to(memory_format=memory).requires_grad_(True)
    bg, bb = torch.randn(64, device=dev).requires_grad_(True), torch.randn(64, device=dev).requires_grad_(True)

    def batch_norm():
        y = torch.nn.functional.batch_norm(bx, None, None, bg, bb, training=True, eps=1e-3)
        torch.autograd.grad(y.sum(), [bx, bg, bb])
    line(f"BenchmarkTorchWindowOpsGPU/BatchNorm/{fmt}", host_ns(batch_norm, 20), "ns/op")

for fmt, memory in (("NHWC", torch.channels_last), ("NCHW", torch.contiguous_format)):
    reset_peak()
    fm, xf, yf = fashion(memory)
    ns = host_ns(train_step(fm, torch.optim.Adam(fm.parameters(), lr=1e-3), xf, yf), 200)
    line(f"BenchmarkTorchFashionCNNTrainStepGPU/{fmt}/eager", ns, "ns/op", f" {peak_mb():.1f} peak-MB")
    reset_peak()
    fm, xf, yf = fashion(memory)
    ns = host_ns(train_step(fm, torch.optim.Adam(fm.parameters(), lr=1e-3), xf, yf, autocast=torch.bfloat16), 200)
    line(f"BenchmarkTorchFashionCNNTrainStepGPU/{fmt}/eager/mixed_bfloat16", ns, "ns/op", f" {peak_mb():.1f} peak-MB")
    reset_peak()
    nm, xn, yn = fashion_normed(memory)
    ns = host_ns(train_step(nm, torch.optim.Adam(nm.parameters(), lr=1e-3), xn, yn), 200)
    line(f"BenchmarkTorchFashionCNNNormedTrainStepGPU/{fmt}/eager", ns, "ns/op", f" {peak_mb():.1f} peak-MB")
    if DRY:
        continue
    for name, make in (("FashionCNNTrainStepGPU", fashion), ("FashionCNNNormedTrainStepGPU", fashion_normed)):
        try:
            reset_peak()
            fm, xf, yf = make(memory)
            ns = host_ns(graph_step(fm, xf, yf), 500)
            line(f"BenchmarkTorch{name}/{fmt}/recorded", ns, "ns/op", f" {peak_mb():.1f} peak-MB")
        except Exception as e:  # a PyTorch without graph capture: say so, go on
            print(f"# torch CUDA graph {name} {fmt}: {type(e).__name__}: {e}", flush=True)


def jax_twins():
    """The traced CNN step under jax.jit (NHWC, Adam written out), the
    reference for what a traced step should reach."""
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(3)
    ks = jax.random.split(key, 5)

    def glorot(k, shape, fan_in, fan_out):
        lim = (6 / (fan_in + fan_out)) ** 0.5
        return jax.random.uniform(k, shape, jnp.float32, -lim, lim)

    params = {
        "c1": glorot(ks[0], (3, 3, 1, 32), 9, 288), "b1": jnp.zeros(32),
        "c2": glorot(ks[1], (3, 3, 32, 64), 288, 576), "b2": jnp.zeros(64),
        "d1": glorot(ks[2], (7 * 7 * 64, 128), 3136, 128), "e1": jnp.zeros(128),
        "d2": glorot(ks[3], (128, 10), 128, 10), "e2": jnp.zeros(10),
    }
    dn = ("NHWC", "HWIO", "NHWC")

    def pool(v):
        return jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss_fn(p, x, y):
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME", dimension_numbers=dn) + p["b1"])
        h = pool(h)
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME", dimension_numbers=dn) + p["b2"])
        h = pool(h).reshape(x.shape[0], -1)
        h = jax.nn.relu(h @ p["d1"] + p["e1"])
        logits = h @ p["d2"] + p["e2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(p, m, v, t, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        lr = 1e-3 * jnp.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        p = jax.tree_util.tree_map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + 1e-8), p, m, v)
        return p, m, v, t, loss

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [params, zeros, zeros, jnp.float32(0)]
    x = jax.random.uniform(ks[4], (128, 28, 28, 1), jnp.float32)
    y = jnp.arange(128) % 10

    def one():
        p, m, v, t, loss = step(*state, x, y)
        state[:] = [p, m, v, t]
        return float(loss)

    ns = host_ns(one, 500)
    line("BenchmarkJaxFashionCNNTrainStepGPU/NHWC/traced", ns, "ns/op")
    print(f"# jax {jax.__version__} on {jax.devices()[0]}", flush=True)


try:
    jax_twins()
except ImportError:
    print("# jax: not installed", flush=True)
except Exception as e:
    print(f"# jax: {type(e).__name__}: {e}", file=sys.stdout, flush=True)
