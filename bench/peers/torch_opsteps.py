"""The op-step sweep's twin (internal/benchmodels' OpSteps): thirty-one
one-op training steps, each the op forward and its sum's gradients in
its inputs, at the sizes the Go side names (CPU_SIZES for
BenchmarkOpStep, GPU_SIZES and DRY_SIZES for BenchmarkOpStepGPU and the
bundle's dry run). torch_bench.py and torch_gpu.py time them.
"""
import torch

CPU_SIZES = dict(rows=4096, cols=1000, vocab=30000, width=256, ids=256, idrows=64, batch=32, length=256,
                 channels=64, mat=128, mats=256, order=32)
GPU_SIZES = dict(rows=16384, cols=2048, vocab=50304, width=768, ids=1024, idrows=64, batch=64, length=1024,
                 channels=256, mat=256, mats=1024, order=32)
DRY_SIZES = dict(rows=64, cols=100, vocab=300, width=16, ids=32, idrows=4, batch=2, length=16, channels=8, mat=16,
                 mats=4, order=8)


def op_steps(z, dev):
    """(name, step) pairs: step() runs one training step of the op."""
    def g(*shape):
        return torch.randn(*shape, device=dev, requires_grad=True)
    rows, table = g(z["rows"], z["cols"]), g(z["vocab"], z["width"])
    ids = torch.randint(0, z["vocab"], (z["idrows"], z["ids"]), device=dev)
    seq, filt = g(z["batch"], z["channels"], z["length"]), g(z["channels"], z["channels"], 5)  # PyTorch's [N C L]
    left, right = g(2 * z["batch"], z["mat"], z["mat"] // 2), g(2 * z["batch"], z["mat"] // 2, z["mat"])
    half, half2 = g(z["rows"], z["cols"] // 2), g(z["rows"], z["cols"] - z["cols"] // 2)
    n = z["order"]
    square, rhs, tall = g(z["mats"], n, n), g(z["mats"], n, 4), g(z["mats"], n, n // 2)
    shift = n * torch.eye(n, device=dev)
    F = torch.nn.functional
    table_of = (
        ("Sort", lambda: torch.sort(rows, -1).values, (rows,)),
        ("TopK5", lambda: torch.topk(rows, 5).values, (rows,)),
        ("Cumsum", lambda: torch.cumsum(rows, -1), (rows,)),
        ("LogSoftmax", lambda: torch.log_softmax(rows, -1), (rows,)),
        ("Embedding", lambda: F.embedding(ids, table), (table,)),
        ("Conv1D", lambda: F.conv1d(seq, filt, padding=2), (seq, filt)),
        ("GeluTanh", lambda: F.gelu(rows, approximate="tanh"), (rows,)),
        ("Dropout", lambda: F.dropout(rows, 0.1, training=True), (rows,)),
        ("SoftmaxAxis0", lambda: torch.softmax(rows, 0), (rows,)),
        ("BatchMatMul", lambda: torch.bmm(left, right), (left, right)),
        ("Einsum", lambda: torch.einsum("bij,bjk->bik", left, right), (left, right)),
        ("Concat", lambda: torch.cat([half, half2], -1), (half, half2)),
        ("Norm", lambda: torch.linalg.vector_norm(rows, 2, -1), (rows,)),
        ("Var", lambda: rows.var(-1, unbiased=False), (rows,)),
        ("Pow3", lambda: rows ** 3, (rows,)),
        ("Where", lambda: torch.where(rows > 0, rows, 0.1 * rows), (rows,)),
        ("MaskedSelect", lambda: torch.masked_select(rows, rows > 0), (rows,)),
        ("Sin", lambda: torch.sin(rows), (rows,)),
        ("Atan", lambda: torch.atan(rows), (rows,)),
        ("Log1p", lambda: torch.log1p(rows.abs()), (rows,)),
        ("LeakyRelu", lambda: F.leaky_relu(rows, 0.1), (rows,)),
        ("Elu", lambda: F.elu(rows), (rows,)),
        ("Silu", lambda: F.silu(rows), (rows,)),
        ("Mish", lambda: F.mish(rows), (rows,)),
        ("HardSwish", lambda: F.hardswish(rows), (rows,)),
        ("Lgamma", lambda: torch.lgamma(rows.abs() + 0.1), (rows,)),
        ("LogNdtr", lambda: torch.special.log_ndtr(rows), (rows,)),
        ("Cholesky", lambda: torch.linalg.cholesky(square @ square.mT + shift), (square,)),
        ("Solve", lambda: torch.linalg.solve(square + shift, rhs), (square, rhs)),
        ("Eigh", lambda: torch.linalg.eigvalsh(square + square.mT), (square,)),
        ("QR", lambda: torch.linalg.qr(tall)[1], (tall,)),
        ("SVD", lambda: torch.linalg.svdvals(tall), (tall,)),
        ("MatrixExp", lambda: torch.linalg.matrix_exp(square / n), (square,)))
    return [(name, lambda fn=fn, inputs=inputs: torch.autograd.grad(fn().sum(), inputs)) for name, fn, inputs in table_of]
