"""PyTorch (CPU eager) and NumPy on the work of eagerflow's benchmarks.

Prints Go benchmark lines (name, iterations, ns/op, extra metrics) so that
one table holds every library. Run through ../run.sh, which sets up
OpenBLAS as the issues specify: the OpenMP build, OPENBLAS_CORETYPE set to
the CPU's real kernel family, and two threads.
"""
import os
import re
import sys
import timeit

import numpy as np
import torch

import torch_gpt
import torch_opsteps

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
ELEMS_4M = 4 << 20
torch.set_num_threads(THREADS)


def report(name, fn, number=None, flops=None, nbytes=None):
    """Time fn and print three Go benchmark lines, one per repeat of about
    0.3 s, each with the mean ns/op over its repeat (with GFLOP/s for flops
    per call, GB/s for bytes moved per call): the samples eagerflow's side
    gives with -test.benchtime 0.3s -test.count 3 (see ../run.sh).
    With BENCH_FILTER set, only names its regular expression matches run."""
    if not re.search(os.environ.get("BENCH_FILTER", ""), name):
        return
    if number is None:
        number, t = 1, 0.0
        while t < 0.1:
            number *= 2
            t = timeit.timeit(fn, number=number)
        number = max(1, int(number * 0.3 / t))
    for total in timeit.repeat(fn, number=number, repeat=3):
        mean = total / number
        line = f"{name}-{THREADS}\t{number}\t{mean * 1e9:.1f} ns/op"
        if flops:
            line += f"\t{flops / mean / 1e9:.2f} GFLOP/s"
        if nbytes:
            line += f"\t{nbytes / mean / 1e9:.2f} GB/s"
        print(line, flush=True)


def torch_benches():
    a, b = torch.ones(1), torch.ones(1)
    report("BenchmarkTorchEagerAddScalar", lambda: a + b)
    ag = torch.ones(1, requires_grad=True)
    report("BenchmarkTorchEagerAddScalarTaped", lambda: ag + b)
    x, y = torch.rand(1000), torch.rand(1000)
    report("BenchmarkTorchEagerAdd1K", lambda: x + y)
    xg = torch.rand(1000, requires_grad=True)
    report("BenchmarkTorchEagerAddTaped1K", lambda: xg + y)
    for n in MID_SIZES:  # BenchmarkEagerMid's ladder
        xm, ym, mm = torch.rand(n), torch.rand(n), torch.rand(n // 64, 64)
        for name, fn in (("Add", lambda: xm + ym), ("Mul", lambda: xm * 1.5), ("Exp", lambda: torch.exp(xm)),
                         ("Sum", lambda: xm.sum()), ("SumRows", lambda: mm.sum(1)),
                         ("Transpose", lambda: mm.t().contiguous())):
            report(f"BenchmarkTorchMid/{name}/{n}", fn, nbytes=4 * n)
    for n in (128, 512, 1024, 2048):
        m1, m2 = torch.rand(n, n), torch.rand(n, n)
        report(f"BenchmarkTorchMatMul{n}", lambda: m1 @ m2, flops=2 * n**3)
    # BenchmarkAdd4M, Tanh4M, Sum4M: 4M float32 in [-2, 2); GB/s counts
    # each array read or written once.
    x4, y4 = torch.rand(ELEMS_4M) * 4 - 2, torch.rand(ELEMS_4M) * 4 - 2
    report("BenchmarkTorchAdd4M", lambda: x4 + y4, nbytes=3 * 4 * ELEMS_4M)
    report("BenchmarkTorchTanh4M", lambda: torch.tanh(x4), nbytes=2 * 4 * ELEMS_4M)
    report("BenchmarkTorchSum4M", lambda: x4.sum(), nbytes=4 * ELEMS_4M)
    for n in (1024, 2048):
        h1, h2 = torch.rand(n, n).bfloat16(), torch.rand(n, n).bfloat16()
        report(f"BenchmarkTorchMatMulHalf/bfloat16/{n}", lambda: h1 @ h2, flops=2 * n**3)
    d1, d2 = torch.rand(1024, 1024, dtype=torch.float64), torch.rand(1024, 1024, dtype=torch.float64)
    report("BenchmarkTorchMatMulFloat64_1024", lambda: d1 @ d2, flops=2 * 1024**3)

    torch.manual_seed(3)
    w1 = (torch.randn(784, 256) * 0.05).requires_grad_()
    b1 = torch.zeros(256, requires_grad=True)
    w2 = (torch.randn(256, 10) * 0.09).requires_grad_()
    b2 = torch.zeros(10, requires_grad=True)
    params = [w1, b1, w2, b2]
    xb = torch.rand(64, 784)
    labels = torch.arange(64) % 10

    def mlp_step():
        h = torch.relu(xb @ w1 + b1)
        loss = torch.nn.functional.cross_entropy(h @ w2 + b2, labels)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(0.01 * g)

    report("BenchmarkTorchMLPStep", mlp_step)

    xc = torch.randn(32, 3, 32, 32, requires_grad=True)
    wc = torch.randn(16, 3, 3, 3, requires_grad=True)

    def conv_step():
        y = torch.nn.functional.conv2d(xc, wc, padding=1)
        torch.autograd.grad(y.sum(), (xc, wc))

    report("BenchmarkTorchConv2DTrainStep", conv_step)
    xp = torch.randn(32, 16, 32, 32, requires_grad=True)

    def pool_step():
        y = torch.nn.functional.max_pool2d(xp, 2)
        torch.autograd.grad(y.sum(), (xp,))

    report("BenchmarkTorchMaxPoolTrainStep", pool_step)

    # BenchmarkDepthwiseTrainStep: a 3x3 depthwise convolution over 64
    # channels of 56x56 (groups=64), padding 1, batch 32, both layouts.
    for layout in ("NCHW", "NHWC"):
        xd = torch.randn(32, 64, 56, 56)
        if layout == "NHWC":
            xd = xd.to(memory_format=torch.channels_last)
        xd.requires_grad_()
        wd = torch.randn(64, 1, 3, 3, requires_grad=True)
        for stride in (1, 2):
            def dw_step(xd=xd, wd=wd, stride=stride):
                y = torch.nn.functional.conv2d(xd, wd, stride=stride, padding=1, groups=64)
                torch.autograd.grad(y.sum(), (xd, wd))
            report(f"BenchmarkTorchDepthwiseTrainStep/{layout}/stride{stride}", dw_step)

    # BenchmarkOpStep: one op's step (forward, the sum's gradients).
    for name, step in torch_opsteps.op_steps(torch_opsteps.CPU_SIZES, "cpu"):
        report(f"BenchmarkTorchOpStep/{name}", step)

    # The pooling steps over [128 28 28 32] NHWC (channels_last here):
    # BenchmarkMaxPoolTrainStepNHWC, ...3x3s2 and BenchmarkAvgPoolTrainStep.
    # SAME's 3x3/2 windows pad the end by one; padding=1 pads both sides,
    # the same 14x14 windows.
    xn = torch.randn(128, 32, 28, 28).to(memory_format=torch.channels_last).requires_grad_()

    def pool_grad(pool, x=xn):
        return lambda: torch.autograd.grad(pool(x).sum(), (x,))

    max_pool, avg_pool = torch.nn.functional.max_pool2d, torch.nn.functional.avg_pool2d
    report("BenchmarkTorchMaxPoolTrainStepNHWC", pool_grad(lambda x: max_pool(x, 2)))
    report("BenchmarkTorchMaxPoolTrainStep3x3s2", pool_grad(lambda x: max_pool(x, 3, 2, padding=1)))
    report("BenchmarkTorchAvgPoolTrainStep/2x2", pool_grad(lambda x: avg_pool(x, 2)))
    report("BenchmarkTorchAvgPoolTrainStep/3x3s2",
           pool_grad(lambda x: avg_pool(x, 3, 2, padding=1, count_include_pad=False)))
    xc = torch.randn(128, 32, 28, 28).requires_grad_()  # BenchmarkPoolTrainStepNCHW
    report("BenchmarkTorchPoolTrainStepNCHW/max2x2", pool_grad(lambda x: max_pool(x, 2), xc))
    report("BenchmarkTorchPoolTrainStepNCHW/avg2x2", pool_grad(lambda x: avg_pool(x, 2), xc))
    report("BenchmarkTorchPoolTrainStepNCHW/max3x3s2", pool_grad(lambda x: max_pool(x, 3, 2, padding=1), xc))
    report("BenchmarkTorchPoolTrainStepNCHW/avg3x3s2",
           pool_grad(lambda x: avg_pool(x, 3, 2, padding=1, count_include_pad=False), xc))

    torch.manual_seed(11)
    wr = (torch.randn(128, 128) * 0.08).requires_grad_()
    xr = torch.randn(50, 128)

    def rnn_forward():
        h = torch.zeros(1, 128)
        for t in range(50):
            h = torch.tanh(h @ wr + xr[t])
        return h

    def rnn_step():
        torch.autograd.grad(rnn_forward().sum(), (wr,))

    report("BenchmarkTorchRNNLoopGrad", rnn_step)

    # BenchmarkCharRNNStep: examples/charrnn's step (embedding 16, LSTM 96
    # over 32 characters, batch 16, vocabulary 65, Adam at 0.01).
    torch.manual_seed(7)
    vocab, seq, nb = 65, 32, 16
    emb, lstm, dense = torch.nn.Embedding(vocab, 16), torch.nn.LSTM(16, 96, batch_first=True), torch.nn.Linear(96, vocab)
    copt = torch.optim.Adam(list(emb.parameters()) + list(lstm.parameters()) + list(dense.parameters()), lr=0.01)
    ids = torch.tensor([(i * 7 + i // 5) % vocab for i in range(nb * (seq + 1))]).reshape(nb, seq + 1)
    cx, cy = ids[:, :seq], ids[:, 1:].reshape(-1)

    def char_step():
        copt.zero_grad()
        h, _ = lstm(emb(cx))
        torch.nn.functional.cross_entropy(dense(h.reshape(-1, 96)), cy).backward()
        copt.step()

    report("BenchmarkTorchCharRNNStep", char_step)
    with torch.no_grad():
        report("BenchmarkTorchRNNLoopForward", rnn_forward)

    # examples/cnn's step: conv 3x3x8 same relu, pool 2, conv 3x3x16 same
    # relu, pool 2, linear to 3; Adam; a batch of 32 28x28 images.
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 16, 3))
    adam = torch.optim.Adam(cnn.parameters(), lr=0.003)
    xc2, yc2 = torch.randn(32, 1, 28, 28), torch.arange(32) % 3

    def cnn_step():
        adam.zero_grad()
        torch.nn.functional.cross_entropy(cnn(xc2), yc2).backward()
        adam.step()

    report("BenchmarkTorchCNNTrainStep", cnn_step)

    # BenchmarkFashionCNNTrainStep: the Fashion-MNIST model (conv 3x3x32
    # same relu, pool 2, conv 3x3x64 same relu, pool 2, dense 128 relu,
    # dense 10; Adam) on a batch of 128 28x28 images, NCHW and NHWC
    # (PyTorch's channels_last memory format).
    for fmt, memory in (("NCHW", torch.contiguous_format), ("NHWC", torch.channels_last)):
        fm = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 128), torch.nn.ReLU(),
            torch.nn.Linear(128, 10)).to(memory_format=memory)
        fadam = torch.optim.Adam(fm.parameters(), lr=1e-3)
        xf = torch.rand(128, 1, 28, 28).contiguous(memory_format=memory)
        yf = torch.arange(128) % 10

        def fashion_step(fm=fm, fadam=fadam, xf=xf, yf=yf):
            fadam.zero_grad()
            torch.nn.functional.cross_entropy(fm(xf), yf).backward()
            fadam.step()

        report(f"BenchmarkTorchFashionCNNTrainStep/{fmt}", fashion_step)

    # BenchmarkBatchNorm: BatchNorm in training, forward and backward, over
    # 128 images of 28x28 with 32 features (F.batch_norm, PyTorch's fused
    # kernel), both layouts.
    for fmt, memory in (("NHWC", torch.channels_last), ("NCHW", torch.contiguous_format)):
        xb = torch.randn(128, 32, 28, 28).contiguous(memory_format=memory).requires_grad_(True)
        gb, bb = torch.randn(32, requires_grad=True), torch.randn(32, requires_grad=True)

        def batch_norm(xb=xb, gb=gb, bb=bb):
            y = torch.nn.functional.batch_norm(xb, None, None, gb, bb, training=True, eps=1e-3)
            torch.autograd.grad(y.sum(), [xb, gb, bb])

        report(f"BenchmarkTorchBatchNorm/{fmt}/fused", batch_norm)

    # BenchmarkTraceElementwiseChain1K: x*1.01, +0.5, tanh three times over,
    # then *1.01, on 1000 float32 values; eager and torch.jit.trace.
    def chain(v):
        for _ in range(3):
            v = torch.tanh(v * 1.01 + 0.5)
        return v * 1.01

    xe = torch.rand(1000)
    with torch.no_grad():
        report("BenchmarkTorchElementwiseChain1K/eager", lambda: chain(xe))
        traced = torch.jit.trace(chain, (xe,))
        for _ in range(3):  # the profiling executor optimises after warm-up calls
            traced(xe)
        report("BenchmarkTorchElementwiseChain1K/jit.trace", lambda: traced(xe))

    torch_gpt.benches(report)


# The mid-sized eager ops ladder (BenchmarkEagerMid's sizes).
MID_SIZES = (1 << 10, 1 << 12, 1 << 14, 1 << 16)


def numpy_benches():
    a, b = np.ones(1, np.float32), np.ones(1, np.float32)
    report("BenchmarkNumPyAddScalar", lambda: a + b)
    x, y = np.random.rand(1000).astype(np.float32), np.random.rand(1000).astype(np.float32)
    report("BenchmarkNumPyAdd1K", lambda: x + y)
    for n in MID_SIZES:  # BenchmarkEagerMid's ladder
        xm, ym = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
        mm = np.random.rand(n // 64, 64).astype(np.float32)
        for name, fn in (("Add", lambda: xm + ym), ("Mul", lambda: xm * np.float32(1.5)), ("Exp", lambda: np.exp(xm)),
                         ("Sum", lambda: xm.sum()), ("SumRows", lambda: mm.sum(1)),
                         ("Transpose", lambda: np.ascontiguousarray(mm.T))):
            report(f"BenchmarkNumPyMid/{name}/{n}", fn, nbytes=4 * n)
    for n in (128, 512, 1024, 2048):
        m1, m2 = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
        report(f"BenchmarkNumPyMatMul{n}", lambda: m1 @ m2, flops=2 * n**3)
    d1, d2 = np.random.rand(1024, 1024), np.random.rand(1024, 1024)
    report("BenchmarkNumPyMatMulFloat64_1024", lambda: d1 @ d2, flops=2 * 1024**3)
    x4 = (np.random.rand(ELEMS_4M) * 4 - 2).astype(np.float32)
    y4 = (np.random.rand(ELEMS_4M) * 4 - 2).astype(np.float32)
    report("BenchmarkNumPyAdd4M", lambda: x4 + y4, nbytes=3 * 4 * ELEMS_4M)
    report("BenchmarkNumPyTanh4M", lambda: np.tanh(x4), nbytes=2 * 4 * ELEMS_4M)
    report("BenchmarkNumPySum4M", lambda: x4.sum(), nbytes=4 * ELEMS_4M)

    def chain(v):
        for _ in range(3):
            v = np.tanh(v * np.float32(1.01) + np.float32(0.5))
        return v * np.float32(1.01)

    report("BenchmarkNumPyElementwiseChain1K", lambda: chain(x))


if __name__ == "__main__":
    print(f"# torch {torch.__version__}, numpy {np.__version__}, threads {THREADS}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}", file=sys.stderr)
    torch_benches()
    numpy_benches()
