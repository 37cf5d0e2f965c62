"""PyTorch's side of eagerflow's differential suite (internal/difftest).

Reads a JSON batch of cases on stdin and writes one JSON line per case on
stdout. A case is either an op program (inputs, steps, a weight for the
last value) or a control-flow program (a template name and its inputs).
Arrays travel as base64 of little-endian float64, so values cross exactly.
Every computation is float64; gradients come from torch.autograd.
The semantics each op must have are eagerflow's (XLA's): where PyTorch
differs by default (rounding halves, padding, pooling borders, SAME
padding), this file spells eagerflow's rule out with PyTorch ops.
"""

import base64
import json
import math
import sys

import mpmath
import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def dec(a):
    v = np.frombuffer(base64.b64decode(a["data"]), dtype="<f8").copy()
    return torch.from_numpy(v).reshape(a["shape"])


def enc(t):
    if t is None:
        return None
    t = t.detach()
    if t._is_zerotensor():
        # Autograd's efficient zeros (a double backward through sign,
        # floor or round hands them out) have no storage: numpy reads
        # whatever memory lies there.
        t = torch.zeros(t.shape, dtype=torch.float64)
    t = t.contiguous().to(torch.float64)
    return {"shape": list(t.shape), "data": base64.b64encode(t.numpy().astype("<f8").tobytes()).decode()}


# eagerflow's tie rules, where PyTorch's own pick another subgradient:
# Max and Min give a tie's gradient to their first operand (torch.maximum
# halves it), the max pool to the first maximum of its window in row-major
# order (torch.amax shares it). Away from ties the rules agree.

def first_max(a, b):
    return torch.where(a >= b, a, b)


def first_min(a, b):
    return torch.where(a <= b, a, b)


class LogAddExp(torch.autograd.Function):
    """torch.logaddexp's values with eagerflow's gradients, σ(a - b) and
    σ(b - a) (as differentiable ops, so twice differentiable): PyTorch's
    e^(a - result) is NaN where a and the result are both infinite, whose
    limit is 1."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.logaddexp(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * torch.sigmoid(a - b)).sum_to_size(a.shape), (g * torch.sigmoid(b - a)).sum_to_size(b.shape)


class HardSigmoid(torch.autograd.Function):
    """F.hardsigmoid's values with its gradient g/6 between -3 and 3 in the
    tensor's precision: PyTorch 1.13's kernel multiplies by a float 1/6
    (1.0f / 6.0f) in float64 too, 3e-8 off."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.hardsigmoid(x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return torch.where((x > -3) & (x < 3), g / 6, torch.zeros_like(g))


def mp_map(f, *xs):
    """f of the tensors xs (one shape) elementwise by mpmath, rounded to
    float64 and then to xs[0]'s dtype."""
    flat = [x.detach().double().flatten().tolist() for x in xs]
    out = torch.tensor([f(*v) for v in zip(*flat)], dtype=torch.float64)
    return out.reshape(xs[0].shape).to(xs[0].dtype)


mpmath.mp.dps = 30


class Polygamma(torch.autograd.Function):
    """ψ⁽ⁿ⁾ by mpmath to 30 digits (n = -1: ln Γ, 0: ψ), each derivative
    the next order's Function, to any order: PyTorch 1.13's trigamma
    keeps about 9 digits."""

    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        if n == -1:
            return mp_map(lambda v: float(mpmath.loggamma(v).real), x)
        return mp_map(lambda v: float(mpmath.polygamma(n, v)), x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * Polygamma.apply(x, ctx.n + 1), None


class Zeta(torch.autograd.Function):
    """Hurwitz's ζ(s, q) by mpmath, of operands of one shape; its
    gradient in q is -s·ζ(s+1, q), none in s (TensorFlow's and
    eagerflow's; PyTorch 1.13 has none at all)."""

    @staticmethod
    def forward(ctx, s, q):
        ctx.save_for_backward(s, q)
        return mp_map(lambda a, b: float(mpmath.zeta(a, b)), s, q)

    @staticmethod
    def backward(ctx, g):
        s, q = ctx.saved_tensors
        return None, -g * s * Zeta.apply(s + 1, q)


class IncompleteGamma(torch.autograd.Function):
    """P(a, x), or where upper Q(a, x), by mpmath (PyTorch 1.13's own is
    tens to millions of ulps off), of operands of one shape; the gradient
    in x is ±x^(a-1)·e⁻ˣ/Γ(a) (PyTorch's formula, differentiable again),
    none in a (as PyTorch's and eagerflow's)."""

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        if upper:
            return mp_map(lambda p, q: float(mpmath.gammainc(p, q, mpmath.inf, regularized=True)), a, x)
        return mp_map(lambda p, q: float(mpmath.gammainc(p, 0, q, regularized=True)), a, x)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        density = torch.exp((a - 1) * torch.log(x) - x - torch.lgamma(a))
        return None, (-g if ctx.upper else g) * density, None


# ---- op programs: each op takes the argument tensors and the attrs ----

def running_products(parts):
    """The running products of the tensors parts, as a chain of
    multiplications: not torch.prod or torch.cumprod, whose backward divides
    the products by each element where none is zero; that gives 0 where the
    product underflows and overflows (then 0*inf) at elements below 1e-154.
    The chain's derivatives are the products of the others, exactly as
    eagerflow's rules are written."""
    out = []
    for p in parts:
        out.append(p if not out else out[-1] * p)
    return out


def log_softmax(x, dim):
    """Log-probabilities with the values eagerflow forms: log sum exp(x - m)
    as log k + log1p(r / k), k the elements at the maximum m and r the
    others' sum, so that a log-probability near 0 keeps its relative
    precision (torch.log_softmax's log(1 + r) loses r's digits below
    2^-53: -4e-12 comes out 3e-5 off, relatively). The derivatives are
    torch.log_softmax's (the correction is a constant): that formula's own
    would be wrong at ties, where k jumps."""
    std = torch.log_softmax(x, dim=dim)
    if x.shape[dim] == 0:
        return std
    with torch.no_grad():
        m = x.amax(dim=dim, keepdim=True)
        v = x - m
        at = v == 0
        k = at.sum(dim=dim, keepdim=True).to(x.dtype)
        r = torch.where(at, torch.zeros_like(v), torch.exp(v)).sum(dim=dim, keepdim=True)
        exact = v - (torch.log(k) + torch.log1p(r / k))
        fix = torch.where(torch.isfinite(exact) & torch.isfinite(std), exact - std, torch.zeros_like(std))
    return std + fix


def moments(x, dims, keep, root):
    """The variance over dims (ddof 0) as eagerflow computes it, two passes
    (the mean, then the deviations' squares), so that an ill-conditioned
    variance rounds alike; and its square root, 0 with derivatives 0 where
    the variance is 0 (torch.std's backward gives 0 there and its double
    backward NaN; the function has no derivative there, and eagerflow's
    convention is the subgradient 0 at every order)."""
    v = ((x - x.mean(dim=dims, keepdim=True)) ** 2).mean(dim=dims, keepdim=keep)
    if not root:
        return v
    zero = v == 0
    return torch.where(zero, torch.zeros_like(v), torch.sqrt(torch.where(zero, torch.ones_like(v), v)))


def red(x, a):
    dims, keep = sorted(d % x.dim() for d in a["dims"]), a["keep"]
    kind = a["kind"]
    if kind == "sum":
        return x.sum(dim=dims, keepdim=keep) if dims else (x.sum() if not keep else x.sum().reshape([1] * x.dim()))
    if kind == "mean":
        return x.mean(dim=dims, keepdim=keep) if dims else (x.mean() if not keep else x.mean().reshape([1] * x.dim()))
    if kind == "logsumexp":
        return torch.logsumexp(x, dim=dims if dims else list(range(x.dim())), keepdim=keep)
    if kind.startswith("norm_"):
        ord = float(kind[5:])
        return torch.linalg.vector_norm(x, ord=ord, dim=dims if dims else list(range(x.dim())), keepdim=keep)
    if kind in ("var", "std"):
        return moments(x, dims if dims else list(range(x.dim())), keep, kind == "std")
    if kind in ("max", "min"):
        f = torch.amax if kind == "max" else torch.amin
        d = dims if dims else list(range(x.dim()))
        return f(x, dim=d, keepdim=keep)
    if kind == "prod":
        d = sorted(dims if dims else list(range(x.dim())), reverse=True)
        y = x
        for k in d:
            parts = y.unbind(k)
            y = running_products(parts)[-1] if parts else torch.ones_like(y.sum(dim=k))
            y = y.unsqueeze(k)
        if not keep:
            y = y.reshape([n for i, n in enumerate(y.shape) if i not in d])
        return y
    raise ValueError(kind)


def xla_pad(x, v, cfg):
    # Interior padding first, then edge padding (negative edges crop).
    for d, (lo, hi, it) in enumerate(cfg):
        n = x.shape[d]
        if it > 0 and n > 1:
            shape = list(x.shape)
            shape[d] = (n - 1) * (it + 1) + 1
            base = v.expand(shape).clone()
            idx = [slice(None)] * x.dim()
            idx[d] = slice(0, None, it + 1)
            base[tuple(idx)] = x
            x = base
        parts = []
        if lo > 0:
            shape = list(x.shape)
            shape[d] = lo
            parts.append(v.expand(shape))
        start = -lo if lo < 0 else 0
        end = x.shape[d] + hi if hi < 0 else x.shape[d]
        idx = [slice(None)] * x.dim()
        idx[d] = slice(start, max(end, start))
        parts.append(x[tuple(idx)])
        if hi > 0:
            shape = list(x.shape)
            shape[d] = hi
            parts.append(v.expand(shape))
        x = torch.cat(parts, dim=d)
    return x


# ---- XLA's general window ops (generate_xla_test.go) ----

def xla_windows(x, v, w):
    """x padded with v (the edges and the base dilation's holes) and cut
    into its windows: [out..., taps] with the taps in row-major window
    order."""
    r = x.dim()
    xp = xla_pad(x, v, [(lo, hi, b - 1) for (lo, hi), b in zip(w["padding"], w["base"])])
    for d in range(r):
        k, s, wd = w["dims"][d], w["strides"][d], w["wdil"][d]
        xp = xp.unfold(d, (k - 1) * wd + 1, s)[..., ::wd]
    return xp.reshape(list(xp.shape[:r]) + [-1])


def first_pick(cols, kind):
    # The first largest (or smallest) tap of each window: SelectAndScatter's
    # GE and LE, ReduceWindow's Max and Min gradient.
    f = torch.argmax if kind in ("max", "ge") else torch.argmin
    return f(cols, dim=-1, keepdim=True)


def reduce_window(x, init, a):
    kind = a["kind"]
    cols = xla_windows(x, init, a["window"])
    if kind == "sum":
        return cols.sum(-1) + init
    y = torch.take_along_dim(cols, first_pick(cols, kind), dim=-1).squeeze(-1)
    # init takes the window's gradient where it ties with the best tap
    # (eagerflow's documented rule).
    return first_max(init, y) if kind == "max" else first_min(init, y)


def extract_patches(x, pad, a):
    cols = xla_windows(x, pad, a["window"])
    return cols.reshape(list(cols.shape[:-1]) + a["window"]["dims"])


def select_and_scatter(operand, source, init, a):
    # Padding and holes are never chosen: they hold -inf (+inf for LE) and
    # position -1, whose source goes to a slot past the end.
    kind = a["kind"]
    fill = torch.tensor(-math.inf if kind == "ge" else math.inf, dtype=operand.dtype)
    cols = xla_windows(operand.detach(), fill, a["window"])
    at = torch.arange(operand.numel(), dtype=torch.float64).reshape(operand.shape)  # exact positions
    pos = xla_windows(at, torch.tensor(-1.0, dtype=torch.float64), a["window"])
    chosen = torch.take_along_dim(pos, first_pick(cols, kind), dim=-1).reshape(-1).long()
    chosen = torch.where(chosen < 0, operand.numel(), chosen)
    out = torch.zeros(operand.numel() + 1, dtype=source.dtype).index_add(0, chosen, source.reshape(-1))
    return out[:-1].reshape(operand.shape) + init


def xla_conv(x, k, a):
    w, c = a["window"], a["conv"]
    r = len(w["dims"])
    x = x.permute([c["in_batch"], c["in_feature"]] + c["in_spatial"]).contiguous()  # as to_nchw
    k = k.permute([c["kernel_out"], c["kernel_in"]] + c["kernel_spatial"])
    zero = torch.tensor(0.0, dtype=x.dtype)
    x = xla_pad(x, zero, [(0, 0, 0), (0, 0, 0)] + [(lo, hi, b - 1) for (lo, hi), b in zip(w["padding"], w["base"])])
    f = [torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d][r - 1]
    y = f(x, k, stride=w["strides"], dilation=w["wdil"], groups=c["groups"])
    order = [c["out_batch"], c["out_feature"]] + c["out_spatial"]
    return y.permute([order.index(d) for d in range(r + 2)])


def xla_slice(x, a):
    idx = tuple(slice(s, l, st) for s, l, st in zip(a["start"], a["limit"], a["strides"]))
    return x[idx]


def cumsum(x, a):
    ax = a["axis"]
    y = torch.flip(x, [ax]) if a["reverse"] else x
    c = torch.cumsum(y, dim=ax)
    if a["exclusive"]:
        # Shifted by one: element i sums 0..i-1 and depends on nothing else.
        first = torch.zeros_like(torch.narrow(c, ax, 0, 1))
        c = torch.cat([first, torch.narrow(c, ax, 0, c.shape[ax] - 1)], dim=ax)
    return torch.flip(c, [ax]) if a["reverse"] else c


def cumprod(x, a):
    ax = a["axis"]
    n = x.shape[ax]
    y = torch.flip(x, [ax]) if a["reverse"] else x
    if a["exclusive"]:
        # Ones, then the running products of all but the last element (an
        # empty slice of y where there is one element, so that the result
        # stays in the graph).
        first = torch.ones_like(torch.narrow(y, ax, 0, min(n, 1)))
        runs = running_products(torch.narrow(y, ax, 0, max(n - 1, 0)).unbind(ax))
        rest = torch.stack(runs, ax) if runs else torch.narrow(y, ax, 0, 0)
        c = torch.cat([first, rest], dim=ax)
    else:
        runs = running_products(y.unbind(ax))
        c = torch.stack(runs, ax) if runs else y * 1
    return torch.flip(c, [ax]) if a["reverse"] else c


def same_pad(n, k, s, d):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return [total // 2, total - total // 2]


def to_nchw(x, fmt):
    # Contiguous: Debian's PyTorch 1.13 crashes (heap corruption, or a
    # segfault in the backward) on some float32 convolutions of a
    # channels-last view (the programs at size, seed 300: a 1x1 filter of
    # 545 outputs over [1 20 140 9]), as pytorch/pytorch#136348 reports for
    # channels_last convolutions; the values are the same.
    return x if fmt == "NCHW" else x.permute(0, 3, 1, 2).contiguous()


def from_nchw(y, fmt):
    return y if fmt == "NCHW" else y.permute(0, 2, 3, 1)


def pads2d(h, w, kh, kw, a):
    if a["padding"] == "same":
        return [same_pad(h, kh, a["strides"][0], a["dilations"][0]), same_pad(w, kw, a["strides"][1], a["dilations"][1])]
    if a["padding"] == "explicit":
        return a["explicit"]
    return [[0, 0], [0, 0]]


def conv2d(x, f, a, groups=1, mult=None):
    x = to_nchw(x, a["format"])
    kh, kw = f.shape[0], f.shape[1]
    (pt, pb), (pl, pr) = pads2d(x.shape[2], x.shape[3], kh, kw, a)
    x = torch.nn.functional.pad(x, [pl, pr, pt, pb])
    if mult is None:
        w = f.permute(3, 2, 0, 1).contiguous()  # HWIO -> OIHW
    else:  # depthwise: [KH, KW, C, M] -> [C*M, 1, KH, KW]
        c, m = f.shape[2], f.shape[3]
        w = f.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw).contiguous()
    y = torch.nn.functional.conv2d(x, w, stride=a["strides"], dilation=a["dilations"], groups=groups)
    return from_nchw(y, a["format"])


def pool2d(x, a, kind):
    x = to_nchw(x, a["format"])
    kh, kw = a["size"]
    st = a["strides"]
    (pt, pb), (pl, pr) = pads2d(x.shape[2], x.shape[3], kh, kw, dict(a, dilations=[1, 1]))
    n, c = x.shape[0], x.shape[1]
    if kind == "max":
        xp = torch.nn.functional.pad(x, [pl, pr, pt, pb], value=-math.inf)
        cols = torch.nn.functional.unfold(xp.reshape(n * c, 1, xp.shape[2], xp.shape[3]), (kh, kw), stride=st)
        oh = (xp.shape[2] - kh) // st[0] + 1
        ow = (xp.shape[3] - kw) // st[1] + 1
        first = torch.argmax(cols, dim=1, keepdim=True)  # the first maximum
        y = torch.take_along_dim(cols, first, dim=1).reshape(n, c, oh, ow)
        return from_nchw(y, a["format"])
    xp = torch.nn.functional.pad(x, [pl, pr, pt, pb])
    ones = torch.nn.functional.pad(torch.ones(1, 1, x.shape[2], x.shape[3]), [pl, pr, pt, pb])
    s = torch.nn.functional.avg_pool2d(xp, (kh, kw), stride=st, divisor_override=1)
    cnt = torch.nn.functional.avg_pool2d(ones, (kh, kw), stride=st, divisor_override=1)
    return from_nchw(s / cnt, a["format"])


def unpool2d(x, a):
    """Each window's first maximum put back where it was, zeros elsewhere,
    summed where overlapping windows chose one element (eagerflow's
    MaxUnpool2D of MaxPool2DWithArgmax): unfold, a one-hot scatter of the
    maxima, fold, the padding cropped."""
    x = to_nchw(x, a["format"])
    kh, kw = a["size"]
    st = a["strides"]
    (pt, pb), (pl, pr) = pads2d(x.shape[2], x.shape[3], kh, kw, dict(a, dilations=[1, 1]))
    n, c, h, w = x.shape
    xp = torch.nn.functional.pad(x, [pl, pr, pt, pb], value=-math.inf)
    hp, wp = xp.shape[2], xp.shape[3]
    cols = torch.nn.functional.unfold(xp.reshape(n * c, 1, hp, wp), (kh, kw), stride=st)
    first = torch.argmax(cols, dim=1, keepdim=True)  # the first maximum
    put = torch.zeros_like(cols).scatter(1, first, torch.take_along_dim(cols, first, dim=1))
    back = torch.nn.functional.fold(put, (hp, wp), (kh, kw), stride=st)
    y = back[:, :, pt:pt + h, pl:pl + w].reshape(n, c, h, w)
    return from_nchw(y, a["format"])


def gather(x, a):
    idx = torch.tensor(a["indices"], dtype=torch.long).reshape(a["ishape"])
    ax = a["axis"]
    y = torch.index_select(x, ax, idx.reshape(-1))
    return y.reshape(list(x.shape[:ax]) + list(idx.shape) + list(x.shape[ax + 1:]))


def dynamic_slice(x, a):
    idx = []
    for d, (s, n) in enumerate(zip(a["starts"], a["sizes"])):
        s = min(max(s, 0), x.shape[d] - n)
        idx.append(slice(s, s + n))
    return x[tuple(idx)]


def dynamic_update_slice(x, u, a):
    idx = []
    for d, s in enumerate(a["starts"]):
        s = min(max(s, 0), x.shape[d] - u.shape[d])
        idx.append(slice(s, s + u.shape[d]))
    y = x.clone()
    y[tuple(idx)] = u
    return y


def dot_general(l, r, a):
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    ls = [None] * l.dim()
    rs = [None] * r.dim()
    for i, j in zip(a["lhs_batch"], a["rhs_batch"]):
        ls[i] = rs[j] = next(letters)
    for i, j in zip(a["lhs_contract"], a["rhs_contract"]):
        ls[i] = rs[j] = next(letters)
    for i in range(l.dim()):
        if ls[i] is None:
            ls[i] = next(letters)
    for j in range(r.dim()):
        if rs[j] is None:
            rs[j] = next(letters)
    out = [ls[i] for i in a["lhs_batch"]] + [ls[i] for i in range(l.dim()) if i not in a["lhs_batch"] and i not in a["lhs_contract"]]
    out += [rs[j] for j in range(r.dim()) if j not in a["rhs_batch"] and j not in a["rhs_contract"]]
    return torch.einsum("".join(ls) + "," + "".join(rs) + "->" + "".join(out), l, r)


def xla_round(x):
    return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)


SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717

UNARY = {
    "neg": torch.neg, "abs": torch.abs, "square": torch.square, "relu": torch.relu,
    "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos,
    "log1p": torch.log1p, "expm1": torch.expm1, "erf": torch.erf,
    # Above 40, log1p(e^-x) is below half an ulp of x: x itself, as ours (a
    # higher threshold overflows e^x past 709).
    "softplus": lambda x: torch.nn.functional.softplus(x, beta=1.0, threshold=40.0),
    "gelu": lambda x: torch.nn.functional.gelu(x),
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    # ELU as eagerflow composes it: at exactly 0 its second derivative is
    # the negative side's (e^0), where F.elu's double backward takes the
    # positive side's 0 (both are one-sided derivatives at the kink).
    "elu": lambda x: torch.where(x > 0, x, torch.expm1(first_min(x, torch.zeros_like(x)))), "floor": torch.floor, "ceil": torch.ceil, "round": xla_round,
    "sign": torch.sign, "identity": lambda x: x,
    "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "asinh": torch.asinh, "atanh": torch.atanh,
    "log2": torch.log2, "log10": torch.log10, "exp2": torch.exp2,
    # SELU composed as ELU above, for the same second derivative at 0.
    "selu": lambda x: SELU_SCALE * torch.where(x > 0, x, SELU_ALPHA * torch.expm1(first_min(x, torch.zeros_like(x)))),
    "silu": torch.nn.functional.silu, "mish": torch.nn.functional.mish,
    "softsign": torch.nn.functional.softsign, "relu6": torch.nn.functional.relu6,
    "hardsigmoid": HardSigmoid.apply, "hardswish": torch.nn.functional.hardswish,
    "erfinv": torch.erfinv, "erfc": torch.erfc, "erfcx": torch.special.erfcx,
    "ndtr": torch.special.ndtr, "log_ndtr": torch.special.log_ndtr, "ndtri": torch.special.ndtri,
    "logit": torch.logit, "i0": torch.special.i0, "i1": torch.special.i1, "i0e": torch.special.i0e,
    "i1e": torch.special.i1e,
    "lgamma": lambda x: Polygamma.apply(x, -1), "digamma": lambda x: Polygamma.apply(x, 0),
    "polygamma1": lambda x: Polygamma.apply(x, 1), "polygamma2": lambda x: Polygamma.apply(x, 2),
}

def pow_positive(a, b):
    # The programs' bases are positive (generate_test.go's genDomain).
    # torch.pow's gradient towards the base is selected to 0 where the
    # exponent is 0 (b·a^(b-1) is 0 there, and would be 0·∞ at a = 0), so
    # that gradient's own derivative towards the exponent is 0 there too
    # (not a^-1): JAX selects the same way, and eagerflow does.
    return torch.pow(a, b)


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "max": first_max, "min": first_min, "pow": pow_positive, "rem": torch.fmod,
    "atan2": torch.atan2, "hypot": torch.hypot, "logaddexp": LogAddExp.apply,
    # PReLU with alpha broadcast either way (F.prelu wants a channel vector).
    "prelu": lambda x, alpha: torch.where(x > 0, x, x * alpha),
    "zeta": lambda s, q: Zeta.apply(*torch.broadcast_tensors(s, q)),
    "xlogy": torch.xlogy, "xlog1py": torch.special.xlog1py,
    "igamma": lambda a, x: IncompleteGamma.apply(*torch.broadcast_tensors(a, x), False),
    "igammac": lambda a, x: IncompleteGamma.apply(*torch.broadcast_tensors(a, x), True),
}


def step(op, args, a):
    """Returns the step's value."""
    if op in UNARY:
        return UNARY[op](args[0])
    if op in BINARY:
        return BINARY[op](args[0], args[1])
    x = args[0]
    if op == "leaky_relu":
        return torch.where(x > 0, x, x * a["alpha"])
    if op == "celu":
        # As ELU above: the negative side's second derivative at 0.
        return torch.where(x > 0, x, a["alpha"] * torch.expm1(first_min(x, torch.zeros_like(x)) / a["alpha"]))
    if op == "reduce":
        # Both share a tied extremum's gradient equally (torch.amax's rule).
        return red(x, a)
    if op == "reshape":
        return x.reshape(a["shape"])
    if op == "transpose":
        return x.permute(a["perm"])
    if op == "slice":
        return xla_slice(x, a)
    if op == "pad":
        return xla_pad(x, args[1], a["cfg"])
    if op == "concat":
        return torch.cat(args, dim=a["axis"])
    if op == "stack":
        return torch.stack(args, dim=a["axis"])
    if op == "broadcast_to":
        return x.expand(a["shape"])
    if op == "tile":
        return x.repeat(a["reps"])
    if op == "rev":
        return torch.flip(x, a["dims"])
    if op == "cumsum":
        return cumsum(x, a)
    if op == "roll":
        return torch.roll(x, a["k"], a["axis"])
    if op == "lstm_cell":
        i, f, g, o = (x + args[1]).chunk(4, dim=1)
        nxt = torch.sigmoid(f) * args[2] + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(nxt) if a["k"] == 0 else nxt
    if op == "lstm_seq":
        u, h, c = args[1], args[2], args[3]
        ys = []
        for s in range(x.shape[1]):
            i, f, g, o = (x[:, s] + h @ u).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            ys.append(h)
        return [torch.stack(ys, dim=1), h, c][a["k"]]
    if op == "gru_seq":
        u, b, h = args[1], args[2], args[3]
        ys = []
        for s in range(x.shape[1]):
            xz, xr, xn = x[:, s].chunk(3, dim=1)
            hz, hr, hn = (h @ u + b).chunk(3, dim=1)
            z, r = torch.sigmoid(xz + hz), torch.sigmoid(xr + hr)
            n = torch.tanh(xn + r * hn)
            h = n + z * (h - n)
            ys.append(h)
        return [torch.stack(ys, dim=1), h][a["k"]]
    if op == "gru_cell":
        xz, xr, xn = x.chunk(3, dim=1)
        hz, hr, hn = args[1].chunk(3, dim=1)
        z, r = torch.sigmoid(xz + hz), torch.sigmoid(xr + hr)
        n = torch.tanh(xn + r * hn)
        return n + z * (args[2] - n)
    if op == "cholesky_spd":
        n = x.shape[-1]
        return torch.linalg.cholesky(x @ x.mT + n * torch.eye(n, dtype=x.dtype))
    if op == "trisolve":
        # The triangle named of a + 3I, transposed where asked (its other
        # triangle read then, by torch, of the transpose).
        m = args[0] + 3 * torch.eye(x.shape[-1], dtype=x.dtype)
        upper = a["upper"]
        if a["ta"]:
            m, upper = m.mT, not upper
        return torch.linalg.solve_triangular(m, args[1], upper=upper, unitriangular=a["unit"])
    if op == "qr":
        # r's rows (and q's columns) signed so that r's diagonal is not
        # negative, as eagerflow's (LAPACK leaves the signs as they fall).
        q, r = torch.linalg.qr(x)
        s = torch.where(torch.diagonal(r, dim1=-2, dim2=-1) < 0, -1.0, 1.0).to(x.dtype)
        return [q * s.unsqueeze(-2), r * s.unsqueeze(-1)][a["k"]]
    if op == "pinv":
        return torch.linalg.pinv(x)
    if op == "matrix_norm":
        ord = {"fro": "fro", "nuc": "nuc", "2": 2, "-2": -2, "1": 1, "-1": -1, "inf": math.inf, "-inf": -math.inf}[a["kind"]]
        return torch.linalg.matrix_norm(x, ord)
    if op == "lstsq":
        # The least-squares (tall) or least-norm (wide) solution of a full-rank
        # x, as the pseudo-inverse gives it (differentiable, unlike 1.13's gels).
        return torch.linalg.pinv(x) @ args[1]
    if op == "trace":
        return torch.diagonal(x, dim1=-2, dim2=-1).sum(-1)
    if op == "diagonal":
        return torch.diagonal(x, dim1=-2, dim2=-1)
    if op == "svd":
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        if a["k"] == 0:
            return s
        return (u * torch.sigmoid(s).unsqueeze(-2)) @ vh
    if op in ("eigvalsh_sym", "eigh_sigmoid_sym"):
        vals, vecs = torch.linalg.eigh(x + x.mT)
        if op == "eigvalsh_sym":
            return vals
        return (vecs * torch.sigmoid(vals).unsqueeze(-2)) @ vecs.mT
    if op == "matrix_exp":
        return torch.linalg.matrix_exp(x)
    if op in ("lu_anti", "lu_solve_anti", "lu_unpack_anti"):
        m = x + 3 * torch.eye(x.shape[-1], dtype=x.dtype).flip(-1)
        lu, piv = torch.linalg.lu_factor(m)
        if op == "lu_solve_anti":
            return torch.linalg.lu_solve(lu, piv, args[1], adjoint=a["ta"])
        if op == "lu_unpack_anti":
            p, l, u = torch.lu_unpack(lu, piv)
            return p + l + u
        return lu
    if op in ("det_shifted", "logabsdet_shifted", "inverse_shifted", "solve_shifted"):
        m = x + 3 * torch.eye(x.shape[-1], dtype=x.dtype)
        if op == "det_shifted":
            return torch.linalg.det(m)
        if op == "logabsdet_shifted":
            return torch.linalg.slogdet(m)[1]
        if op == "inverse_shifted":
            return torch.linalg.inv(m)
        return torch.linalg.solve(m, args[1])
    if op == "tril":
        return torch.tril(x, diagonal=a["axis"])
    if op == "triu":
        return torch.triu(x, diagonal=a["axis"])
    if op == "cumprod":
        return cumprod(x, a)
    if op == "matmul":
        l = args[0].transpose(-1, -2) if a["ta"] else args[0]
        r = args[1].transpose(-1, -2) if a["tb"] else args[1]
        return torch.matmul(l, r)
    if op == "softmax":
        return torch.softmax(x, dim=a["axis"])
    if op == "log_softmax":
        return log_softmax(x, a["axis"])
    if op == "xent":
        return -(args[1] * log_softmax(x, -1)).sum(dim=-1)
    if op == "sparse_xent":
        lab = torch.tensor(a["labels"], dtype=torch.long)
        return -log_softmax(x, -1).gather(-1, lab.unsqueeze(-1)).squeeze(-1)
    if op == "batch_norm":
        dims = [d for d in range(x.dim()) if d != a["axis"]]
        along = [1] * x.dim()
        along[a["axis"]] = x.shape[a["axis"]]
        mean = x.mean(dims, keepdim=True)
        d = x - mean
        y = d * torch.rsqrt(d.pow(2).mean(dims, keepdim=True) + a["eps"]) * args[1].reshape(along)
        return y + args[2].reshape(along) if len(args) == 3 else y
    if op == "layer_norm":
        if a["kind"] == "rms":
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + a["eps"]) * args[1]
        # F.layer_norm's formula written out: its fused kernel leaves
        # rounding noise (1e-15) where x - mean is exactly 0 (a row of one
        # element), which decides the subgradient of a kink after it (a
        # clip at 0) another way than the exact zero does.
        if x.shape[-1] == 1:
            # A row of one element normalizes to 0 whatever it holds. The
            # formula's gradient there is the row's own minus its mean's,
            # equal and opposite, which autograd adds to x after the
            # other paths' contributions: where an L2Normalize of the
            # zero row after it scales them by 1/sqrt(eps) = 1e6, that
            # sum loses 1e-9 of what was added first (seed 702, program
            # 179; eagerflow's value agrees with a 40-digit evaluation).
            # The constant keeps the reference exact.
            y = torch.zeros_like(x) * args[1]
            return y + args[2] if len(args) == 3 else y
        mean = x.mean(-1, keepdim=True)
        d = x - mean
        y = d * torch.rsqrt(d.pow(2).mean(-1, keepdim=True) + a["eps"]) * args[1]
        return y + args[2] if len(args) == 3 else y
    if op == "attention":
        q, k, v = args
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        tq, tk = q.shape[-2], k.shape[-2]
        keep = torch.ones(tq, tk, dtype=torch.bool)
        if a["relu"]:  # causal
            keep = keep.tril()
        if a["labels"]:
            keep = keep & (torch.tensor(a["labels"]).reshape(-1, tk) == 1)  # [tq, tk] or [1, tk]
        s = s.masked_fill(~keep, float("-inf"))
        return torch.softmax(s, dim=-1) @ v
    if op == "l2_normalize":
        ss = (x * x).sum(dim=a["axis"], keepdim=True)
        return x * torch.rsqrt(torch.clamp_min(ss, a["eps"]))
    if op == "conv2d":
        return conv2d(x, args[1], a)
    if op == "fused_conv2d":
        y = conv2d(x, args[1], a)
        b = args[2].reshape(-1, 1, 1) if a["format"] == "NCHW" else args[2]
        y = y + b
        return torch.relu(y) if a["relu"] else y
    if op == "depthwise_conv2d":
        c = args[1].shape[2]
        return conv2d(x, args[1], a, groups=c, mult=args[1].shape[3])
    if op == "max_pool2d":
        return pool2d(x, a, "max")
    if op == "avg_pool2d":
        return pool2d(x, a, "avg")
    if op == "max_unpool2d":
        return unpool2d(x, a)
    if op == "scatter_add":
        ax = a["axis"]
        idx = torch.tensor(a["indices"], dtype=torch.long).reshape(-1)
        upd = args[1].reshape(list(x.shape[:ax]) + [idx.numel()] + list(x.shape[ax + 1:]))
        return torch.index_add(x, ax, idx, upd)
    if op in ("masked_fill", "masked_select", "masked_scatter", "where"):
        mask = torch.tensor(a["labels"], dtype=torch.long).reshape(a["ishape"]) == 1
        # PyTorch before 2.1 differentiates masked_select wrongly where its
        # input is not contiguous (pytorch/pytorch#99638: a permuted
        # dot_general's result; finite differences agree with eagerflow).
        if op == "masked_select":
            return torch.masked_select(x.contiguous(), mask)
        if op == "masked_scatter":
            return x.contiguous().masked_scatter(mask, args[1])
        if op == "where":
            return torch.where(mask, x, args[1])
        return torch.where(mask, args[1], x)
    if op == "fused_matmul":
        y = x @ args[1] + args[2]
        return torch.relu(y) if a["relu"] else y
    if op == "bias_add":
        b = args[1]
        if a["format"] == "NCHW":
            b = b.reshape([b.shape[0]] + [1] * (x.dim() - 2))
        return x + b
    if op == "sum_of_squares":
        return sum((t * t).sum() for t in args)
    if op == "scale_each":
        return args[0] * args[1 + a["k"]]
    if op == "split":
        return torch.split(x, a["sizes"], dim=a["axis"])[a["k"]]
    if op == "take_along_axis":
        idx = torch.tensor(a["indices"], dtype=torch.long).reshape(a["ishape"])
        return torch.take_along_dim(x, idx, dim=a["axis"])
    if op == "gather":
        return gather(x, a)
    if op == "sort":
        # Both sorts are stable: equal keys keep their order either way.
        v, _ = torch.sort(x, dim=a["axis"], descending=a["descending"], stable=True)
        return v
    if op == "topk":
        v, _ = torch.sort(x, dim=-1, descending=True, stable=True)
        return v[..., : a["k"]]
    if op == "select":
        return torch.where(args[0] > args[1], args[2], args[3])
    if op == "clip":
        return first_min(first_max(x, args[1]), args[2])
    if op == "einsum":
        return torch.einsum(a["spec"], *args)
    if op == "dot_general":
        return dot_general(args[0], args[1], a)
    if op == "dynamic_slice":
        return dynamic_slice(x, a)
    if op == "dynamic_update_slice":
        return dynamic_update_slice(x, args[1], a)
    if op == "reduce_window":
        return reduce_window(x, args[1], a)
    if op == "extract_patches":
        return extract_patches(x, args[1], a)
    if op == "select_and_scatter":
        return select_and_scatter(x, args[1], args[2], a)
    if op == "conv":
        return xla_conv(x, args[1], a)
    if op == "expand_dims":
        return x.unsqueeze(a["axis"])
    if op == "squeeze":
        axes = [ax % x.dim() for ax in a["axes"]]
        return x.reshape([n for i, n in enumerate(x.shape) if i not in axes])
    raise ValueError("unknown op " + op)


def run_program(c):
    if c.get("float32"):
        # The same program in float32 (the programs at size): how far
        # rounding alone moves each result, its conditioning.
        torch.set_default_dtype(torch.float32)
        try:
            return run_program_as(c, torch.float32)
        finally:
            torch.set_default_dtype(torch.float64)
    return run_program_as(c, torch.float64)


def run_program_as(c, dtype):
    inputs = [dec(x).to(dtype).requires_grad_(True) for x in c["inputs"]]
    vals = []
    for s in c["steps"]:
        args = [inputs[-1 - i] if i < 0 else vals[i] for i in s["args"]]
        attrs = {k: ([] if v is None else v) for k, v in s["attrs"].items()}
        vals.append(step(s["op"], args, attrs))
    loss = sum((v * dec(w).to(dtype)).sum() for v, w in zip(vals, c["weights"]))
    second = c.get("second")
    grads = torch.autograd.grad(loss, inputs, allow_unused=True, create_graph=bool(second))
    out = {"values": [enc(v) for v in vals], "grads": [enc(g) for g in grads]}
    if second:
        # The Hessian-vector product: the gradient of sum(v * dloss/din)
        # over the inputs (None where nothing depends on them).
        terms = [(g * dec(v)).sum() for g, v in zip(grads, second) if g is not None and g.requires_grad]
        if not terms:
            out["second"] = [None for _ in inputs]
            return out
        try:
            hv = torch.autograd.grad(sum(terms), inputs, allow_unused=True)
        except RuntimeError as e:  # an op without a double backward
            out["second_error"] = str(e)
            return out
        out["second"] = [enc(h) for h in hv]
    return out


# ---- control-flow programs: the same templates as control_test.go ----

def while_grow(x, w, thr):
    h, k = x, 0
    while (h * h).sum() < thr and k < 20:
        h = torch.tanh(h @ w) * 1.5 + h
        k += 1
    return h.sum()


def scan_rnn(xs, w, u, b):
    h = torch.zeros(xs.shape[1], w.shape[0])
    ys = []
    for t in range(xs.shape[0]):
        h = torch.tanh(h @ w + xs[t] @ u + b)
        ys.append(h)
    return (h * h).sum() + torch.stack(ys).mean()


def cond_in_loop(x, a, b):
    h = x
    for _ in range(4):
        if h.sum() > 0:
            h = torch.sin(h) * a
        else:
            h = h * h - b
    return h.sum()


def nested(x, w, thr):
    h = x
    for _ in range(3):
        k = 0
        while (h * h).sum() < thr and k < 6:
            h = h * w + 0.25
            k += 1
        h = torch.tanh(h)
    return (h * h).sum()


def trips_on_x(x, w):
    limit = x.sum().abs() * 6 + 1
    h, k = x, 0
    while h.abs().sum() < limit and k < 30:
        h = h * 1.5 + w * w
        k += 1
    return torch.sin(h).sum()


def power_count(x, w, n):
    y = torch.ones_like(x)
    for _ in range(int(n.item())):
        y = y * x
    return (y * w).sum()


def cond_while_weight(w, x, thr):
    h, k = x.detach(), 0
    while (h * h).sum() < thr and k < 6:
        hw = h @ w
        if hw.sum() > 0:
            y = torch.sin(hw) * 2
        else:
            y = hw * hw - h
        h = y + h
        k += 1
    return (h * h).sum() + 0 * w.sum()


def loop_in_cond(x, w, thr):
    if x.sum() > 0:
        h, k = x, 0
        while h.abs().sum() < thr and k < 8:
            h = h * w + 0.5
            k += 1
        y = h
    else:
        y = torch.sin(x) * w
    return (y * y).sum()


def scan_cond(xs, w):
    h = torch.zeros(xs.shape[1], w.shape[0], dtype=xs.dtype)
    for t in range(xs.shape[0]):
        h = torch.tanh(h @ w + xs[t])
        if h.sum() > 0:
            h = h * 0.5
        else:
            h = h + 0.1
    return (h * h).sum()


def cond_cond_weight(w, x, thr):
    h, k = x.detach(), 0
    while h.abs().sum() < thr and k < 6:
        hw = h * w
        if hw.sum() > 0:
            if hw.amax() > 0.5:
                y = torch.sin(hw) + h
            else:
                y = hw * w + 0.3
        else:
            y = hw * hw - h
        h = y + 0.2
        k += 1
    return (h * h).sum() + 0 * w.sum()


def swap_weight(w, x, thr):
    a, b, k = x.detach(), -x.detach(), 0
    while b.abs().sum() < thr and k < 7:
        a, b = b, torch.tanh(a) * w + b
        k += 1
    return (a * b).sum() + 0 * w.sum()


def nested_bounded(w, x, thr):
    h, k = x.detach(), 0
    while (h * h).sum() < thr * 4 and k < 4:
        u, j = h, 0
        while u.abs().sum() < thr and j < 3:
            u = u * w + 0.25
            j += 1
        h = torch.tanh(u) + h
        k += 1
    return (h * h).sum() + 0 * w.sum()


def scan_in_while(xs, w, thr):
    h, k, n = xs.mean(0), 0, 0.0
    while (h * h).sum() < thr and k < 4:
        c = h
        for t in range(xs.shape[0]):
            c = torch.tanh(c @ w + xs[t])
        h = c + h
        n += 1.0
        k += 1
    return (h * h).sum() + n * 0.1 + 0 * thr


def cond_of_loops(x, w, thr):
    h, k = x, 0
    if (x * w).sum() > 0:
        while (h * w).abs().sum() < thr and k < 5:
            h = h * 1.5 + w
            k += 1
    else:
        while (h * h).sum() < thr and k < 3:
            h = torch.sin(h) - w
            k += 1
    return (h * h).sum()


def pick_row(x, w, thr):
    h, k = x, 0
    while (h * h).sum() < thr and k < 5:
        i = int(h.sum(0).argmax())
        h = torch.tanh(h + w[i:i + 1]) + h * 0.5
        k += 1
    return (h * h).sum()


def case_in_loop(x, w, thr):
    h, k = x, 0
    while h.abs().sum() < thr and k < 5:
        i = min(int(h.sum(0).argmax()), 2)
        if i == 0:
            h = h * w + 0.3
        elif i == 1:
            h = torch.tanh(h) + w
        else:
            h = h * 1.5 + 0.1
        k += 1
    return (h * h).sum()


def cond_pred(x, w, thr):
    h, k = x, 0
    while k < 5 and ((h * h).sum() < thr if h.sum() > 0 else h.abs().sum() < thr * 0.5):
        h = torch.tanh(h * w) + h * 1.2
        k += 1
    return (h * h).sum()


def unbounded(x, w, thr):
    h = x
    while h.sum() < thr * thr * 40:
        h = h.abs() * 1.5 + (w * w + 0.1)
    return torch.sin(h).sum()


def nested_unbounded(x, w, thr):
    h = x
    for _ in range(3):
        while (h * h).sum() < thr * thr * 8:
            h = h.abs() * 1.3 + (w * w + 0.05)
        h = torch.tanh(h)
    return (h * h).sum()


def case_top(x, w):
    i = min(int(x.sum(0).argmax()), 2)
    if i == 0:
        y = torch.exp(x) * w
    elif i == 1:
        y = x * x - w
    else:
        y = torch.tanh(x + w)
    return (y * y).sum()


TEMPLATES = {"while_grow": while_grow, "scan_rnn": scan_rnn, "cond_in_loop": cond_in_loop,
             "nested": nested, "trips_on_x": trips_on_x, "power_count": power_count,
             "cond_while_weight": cond_while_weight, "loop_in_cond": loop_in_cond,
             "scan_cond": scan_cond, "cond_cond_weight": cond_cond_weight,
             "swap_weight": swap_weight, "nested_bounded": nested_bounded, "scan_in_while": scan_in_while,
             "cond_of_loops": cond_of_loops, "pick_row": pick_row,
             "case_in_loop": case_in_loop, "case_top": case_top, "cond_pred": cond_pred,
             "unbounded": unbounded, "nested_unbounded": nested_unbounded}


def run_control(c):
    inputs = [dec(x).requires_grad_(True) for x in c["inputs"]]
    fn = TEMPLATES[c["template"]]
    loss = fn(*inputs)
    grads = torch.autograd.grad(loss, inputs, create_graph=True, allow_unused=True)
    out = {"values": [enc(loss)], "grads": [enc(g) for g in grads]}
    if c.get("second"):
        # The gradient of sum(v * grad(loss, x0)) with respect to every
        # input: a Hessian-vector product (none where the gradient is a
        # constant, as when a loop took no iteration).
        v = dec(c["second"])
        gv = (grads[0] * v).sum() if grads[0] is not None else None
        if gv is None or not gv.requires_grad:
            hv = [None] * len(inputs)
        else:
            hv = torch.autograd.grad(gv, inputs, allow_unused=True)
        out["second"] = [enc(g) for g in hv]
    return out


def main():
    batch = json.load(sys.stdin)
    for c in batch["cases"]:
        try:
            r = run_control(c) if "template" in c else run_program(c)
        except Exception as e:  # reported per case, so one bad case names itself
            r = {"error": "%s: %s" % (type(e).__name__, e)}
        r["id"] = c["id"]
        sys.stdout.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
