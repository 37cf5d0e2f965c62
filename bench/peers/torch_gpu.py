"""PyTorch on the GPU: the peers of backend/cuda's GPU benchmarks, run by
scripts/gpu-run.sh on the same machine. Times with CUDA events, median of
repeats after a warm-up."""
import statistics
import torch

assert torch.cuda.is_available(), "no CUDA device for PyTorch"
dev = torch.device("cuda")


def median_ms(fn, reps=50, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


print("torch", torch.__version__, "CUDA", torch.version.cuda, "on", torch.cuda.get_device_name())

# Per-op cost of a small eager add: host time per op over many ops.
import time
x = torch.randn(16, device=dev)
for _ in range(1000):
    x + x
torch.cuda.synchronize()
n = 20000
t0 = time.perf_counter()
for _ in range(n):
    x + x
torch.cuda.synchronize()
print(f"EagerAdd[16] {1e9 * (time.perf_counter() - t0) / n:.0f} ns/op")

n = 1 << 26
a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
ms = median_ms(lambda: a + b)
print(f"AddBandwidth[2^26] {3 * 4 * n / ms / 1e6:.0f} GB/s")
src = torch.randn(1 << 27, device=dev)
dst = torch.empty_like(src)
ms = median_ms(lambda: dst.copy_(src))
print(f"CopyBandwidth[2^27] {2 * 4 * (1 << 27) / ms / 1e6:.0f} GB/s")

m = 8192
p, q = torch.randn(m, m, device=dev), torch.randn(m, m, device=dev)
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    ms = median_ms(lambda: p @ q, reps=20)
    print(f"MatMul[8192 f32 tf32={tf32}] {2 * m**3 / ms / 1e9:.1f} TFLOP/s")

# One training step of a 784-512-512-10 MLP, batch 256, Adam.
torch.backends.cuda.matmul.allow_tf32 = False
model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
xb, yb = torch.randn(256, 784, device=dev), torch.randint(0, 10, (256,), device=dev)


def mlp_step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()


def host_us(fn, reps, warm=10):
    """Wall time per call in microseconds, the GPU drained before and after."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - t0) / reps


print(f"MLPStep[784-512-512-10 b256] {host_us(mlp_step, 200):.0f} us/step")

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


print(f"RNNLoopGrad[50x128] {host_us(rnn_grad, 100):.0f} us")
