"""Evaluates ops at special values for special_test.go: reads {"cases":
[{"id", "op", "dtype", "to", "a", "b", "rows", "grad"}]} on stdin, each
element a string (a float's float64 bits as "0x..." hex, an integer's or
a bool's decimal value), and writes each case's values (and, where
"grad", the operands' float64 gradients of the values' sum) as one JSON
line, encoded the same way; "skip" where the result is unspecified.

Floats are PyTorch's: exact ops in the case's dtype, transcendental ones
in float64 rounded once to it. Integers are Python's exact integers
wrapped to the dtype's width, with eagerflow's documented results where
PyTorch raises or leaves them undefined: an integer divided by zero is -1
(all bits set), its remainder by zero the dividend (XLA's), a negative
power 0 unless the base is ±1, Round takes halves away from zero, Sign
keeps a zero's sign (XLA's) and gives NaN for NaN (NumPy's)."""
import json
import math
import struct
import sys

import mpmath
import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
          "float16": torch.float16, "int32": torch.int32,
          "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}
BITS = {"int32": 32, "int64": 64, "uint8": 8}
HALF = {"bfloat16", "float16"}


def is_float(dtype):
    return dtype.startswith("float") or dtype == "bfloat16"


def decode(elems, dtype):
    if is_float(dtype):
        return [struct.unpack("<d", struct.pack("<Q", int(e, 16)))[0] for e in elems]
    return [int(e) for e in elems]


def encode_float(v):
    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def encode(t):
    """A tensor's elements, encoded."""
    if t.dtype.is_floating_point:
        return [encode_float(v) for v in t.double().flatten().tolist()]
    return [str(int(v)) for v in t.flatten().tolist()]


def wrap(v, dtype):
    """v wrapped to the integer dtype's width (two's complement)."""
    if dtype == "bool":
        return int(v != 0)
    bits = BITS[dtype]
    v &= (1 << bits) - 1
    if dtype != "uint8" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_pow(a, b, dtype):
    if b < 0:
        return {1: 1, -1: -1 if b % 2 else 1}.get(a, 0)
    return wrap(pow(a, b, 1 << BITS[dtype]), dtype)


INT_BINARY = {
    "add": lambda a, b, d: wrap(a + b, d),
    "sub": lambda a, b, d: wrap(a - b, d),
    "mul": lambda a, b, d: wrap(a * b, d),
    "div": lambda a, b, d: wrap(trunc_div(a, b), d) if b else wrap(-1, d),
    "rem": lambda a, b, d: wrap(a - b * trunc_div(a, b), d) if b else a,
    # Python's floor division and modulo; by 0 Div's -1 and Rem's a.
    "floordiv": lambda a, b, d: wrap(a // b, d) if b else wrap(-1, d),
    "mod": lambda a, b, d: wrap(a % b, d) if b else a,
    "pow": int_pow,
    "maximum": lambda a, b, d: max(a, b),
    "minimum": lambda a, b, d: min(a, b),
}
INT_UNARY = {
    "neg": lambda a, d: wrap(-a, d),
    "abs": lambda a, d: wrap(abs(a), d),
    "sign": lambda a, d: (a > 0) - (a < 0),
    "square": lambda a, d: wrap(a * a, d),
}

# Exact float ops, computed in the case's dtype.
EXACT = {
    "neg": torch.neg, "abs": torch.abs, "square": lambda x: x * x, "floor": torch.floor,
    "ceil": torch.ceil, "sqrt": torch.sqrt, "relu": torch.relu, "is_finite": torch.isfinite,
    "logical_not": torch.logical_not,
    "sign": lambda x: torch.where(x == 0, x, torch.from_numpy(np.sign(x.numpy()))),
    "round": lambda x: torch.from_numpy(round_half_away(x.numpy())),
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "rem": lambda a, b: torch.from_numpy(np.fmod(a.detach().numpy(), b.detach().numpy())),
    # NumPy's floor_divide and mod: Python's divmod, signed zeros and all.
    "floordiv": lambda a, b: torch.from_numpy(np.floor_divide(a.detach().numpy(), b.detach().numpy())),
    "mod": lambda a, b: torch.from_numpy(np.mod(a.detach().numpy(), b.detach().numpy())),
    "maximum": torch.maximum, "minimum": torch.minimum,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "amax": lambda x: x.amax(1), "amin": lambda x: x.amin(1),
    "argmax": lambda x: x.argmax(1), "argmin": lambda x: x.argmin(1),
    "sort": lambda x: torch.sort(x, stable=True, dim=1).values,
    "sort_descending": lambda x: torch.sort(x, stable=True, dim=1, descending=True).values,
    "argsort": lambda x: torch.sort(x, stable=True, dim=1).indices,
    "topk": lambda x: torch.topk(x, 2, 1).values,
    "sum": lambda x: x.sum(1), "prod": lambda x: x.prod(1), "mean": lambda x: x.mean(1),
    "cumsum": lambda x: x.cumsum(1),
}


def round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def sigmoid_tail(x):
    """σ(x) with its lower tail e^x/(1 + e^x) (torch.sigmoid's 1/(1 + e^-x)
    is 0 below -709, where e^x is still a subnormal)."""
    e = torch.exp(-x.abs())
    return torch.where(x >= 0, 1 / (1 + e), e / (1 + e))


def softplus(x):
    return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))


def gelu(x):
    """x·Φ(x) with Φ's lower tail as erfc (1 + erf cancels for x < 0; PyTorch
    1.13's gelu loses its digits there), -0 at -∞ (the limit)."""
    return torch.where(x == -math.inf, -0.0, x * 0.5 * torch.erfc(-x * math.sqrt(0.5)))


def gelu_tanh(x):
    """x·σ(2u), u = √(2/π)(x + 0.044715x³): 0.5x(1 + tanh u) cancels for
    x < 0; x³ may overflow to ±∞, where σ is 0 or 1."""
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    return torch.where(x == -math.inf, -0.0, x * torch.sigmoid(2 * u))


def mp_elementwise(f):
    """f's values (of one or two operands of one shape) elementwise, each
    computed by mpmath at 40 digits (or by the documented convention at a
    pole or an infinity) and rounded once to float64."""
    def apply(*xs):
        flat = [x.detach().double().flatten().tolist() for x in xs]
        return torch.tensor([f(*v) for v in zip(*flat)], dtype=torch.float64).reshape(xs[0].shape)
    return apply


mpmath.mp.dps = 40
INF, NAN = math.inf, math.nan


def pole(x):
    return x <= 0 and x == math.floor(x)


def lgamma_mp(x):
    if math.isnan(x):
        return NAN
    if math.isinf(x) or pole(x):
        return INF
    return float(mpmath.loggamma(x).real)


def digamma_mp(x):
    if math.isnan(x) or x == -INF:
        return NAN
    if x == INF:
        return INF
    if x == 0:
        return math.copysign(INF, -x)
    if pole(x):
        return NAN
    return float(mpmath.digamma(x))


def polygamma_mp(n):
    """ψ⁽ⁿ⁾ with PyTorch's (-1)ⁿ⁺¹·∞ at the poles, ±0 at +∞."""
    sign = 1.0 if n % 2 else -1.0
    def f(x):
        if n == 0:
            return digamma_mp(x)
        if math.isnan(x) or x == -INF:
            return NAN
        if x == INF:
            return sign * 0.0
        if pole(x):
            return sign * INF
        return float(sign * mpmath.factorial(n) * hurwitz(n + 1, x))
    return f


def hurwitz(s, q):
    """ζ(s, q) for s > 1 to 60 digits: the terms to a = q + N ≥ s + 30
    summed, then Euler and Maclaurin's tail to B₈₀ (mpmath 1.2.1's own
    zeta(20, 89) is wrong in its tenth digit). For s past 2000 the terms
    after the first three are below float64's range relative to the
    sum."""
    with mpmath.workdps(60):
        s, q = mpmath.mpf(s), mpmath.mpf(q)
        if s > 2000:
            return q ** -s + (q + 1) ** -s + (q + 2) ** -s
        n = max(0, int(mpmath.ceil(s + 30 - q)))
        total = mpmath.fsum((q + k) ** -s for k in range(n))
        a = q + n
        tail = a ** (1 - s) / (s - 1) + a ** -s / 2
        rising = s * a ** (-s - 1)  # s(s+1)···(s+2j-2)·a^(-s-2j+1)
        for j in range(1, 41):
            tail += mpmath.bernoulli(2 * j) / mpmath.factorial(2 * j) * rising
            rising *= (s + 2 * j - 1) * (s + 2 * j) / (a * a)
        return total + tail


def zeta_mp(s, q):
    """Hurwitz's ζ(s, q) with SciPy's and TensorFlow's special cases."""
    if math.isnan(s) or math.isnan(q) or s < 1 or q == -INF:
        return NAN
    if s == 1 or pole(q):
        return INF
    if q < 0 and (s == INF or s != math.trunc(s)):
        return NAN
    if q == INF:
        return 0.0
    if s == INF:
        return 0.0 if q > 1 else 1.0 if q == 1 else INF
    return float(hurwitz(s, q))


def igamma_mp(upper):
    """P(a, x), or where upper Q(a, x), with SciPy's and PyTorch's special
    cases: NaN for NaN, a < 0, x < 0, at (0, 0) and (∞, ∞); P = 1 at a = 0
    and x = ∞, 0 at x = 0 and a = ∞."""
    def f(a, x):
        if math.isnan(a) or math.isnan(x) or a < 0 or x < 0 or (a == 0 and x == 0) or (a == INF and x == INF):
            return NAN
        if a == 0 or x == INF:
            p = 1.0
        elif x == 0 or a == INF:
            p = 0.0
        elif upper:
            return float(mpmath.gammainc(a, x, mpmath.inf, regularized=True))
        else:
            return float(mpmath.gammainc(a, 0, x, regularized=True))
        return 1.0 - p if upper else p
    return f


def erfc_mp(x):
    if math.isnan(x):
        return NAN
    if abs(x) > 1e8:  # past mpmath's own range; erfc is 0 or 2 long before
        return 0.0 if x > 0 else 2.0
    return float(mpmath.erfc(x))


def erfcx_mp(x):
    """e^(x²)·erfc(x); past 1e8 its asymptotic series to the second term
    (the third is below 1e-32 of it)."""
    if math.isnan(x):
        return NAN
    if x == INF:
        return 0.0
    if x < -27:
        return INF
    x = mpmath.mpf(x)
    if x > 1e8:
        return float(1 / (x * mpmath.sqrt(mpmath.pi)) * (1 - 1 / (2 * x * x)))
    return float(mpmath.exp(x * x) * mpmath.erfc(x))


def ndtr_mp(x):
    if math.isnan(x):
        return NAN
    if abs(x) > 1e8:
        return 1.0 if x > 0 else 0.0
    return float(mpmath.ncdf(x))


def logndtr_mp(x):
    """ln Φ(x): through log1p(-Φ(-x)) where Φ nears 1 (40 digits of Φ
    would keep none of ln Φ there), the asymptotic form past -1e8."""
    if math.isnan(x):
        return NAN
    if x > 1e8:
        return -0.0
    if x < -1e8:
        x = mpmath.mpf(x)
        return float(-x * x / 2 - mpmath.log(-x) - mpmath.log(mpmath.sqrt(2 * mpmath.pi)))
    if x > 0:
        return float(mpmath.log1p(-mpmath.ncdf(-x)))
    return float(mpmath.log(mpmath.ncdf(x)))


def ndtri_mp(p):
    """Φ⁻¹(p) by solving ln Φ(y) = ln p (in the tail the values of Φ are
    too small for an absolute tolerance), the upper half by symmetry from
    1 - p (exact in mpmath)."""
    if math.isnan(p) or p < 0 or p > 1:
        return NAN
    if p == 0 or p == 1:
        return -INF if p == 0 else INF
    t = mpmath.mpf(p) if p < 0.5 else 1 - mpmath.mpf(p)
    y0 = -mpmath.sqrt(-2 * mpmath.log(t)) if t < 0.01 else mpmath.sqrt(2) * mpmath.erfinv(2 * t - 1)
    y = mpmath.findroot(lambda y: mpmath.log(mpmath.ncdf(y)) - mpmath.log(t), y0)
    return float(y if p < 0.5 else -y)


def logit_mp(x):
    if math.isnan(x) or x < 0 or x > 1:
        return NAN
    if x == 0 or x == 1:
        return -INF if x == 0 else INF
    x = mpmath.mpf(x)
    return float(mpmath.log(x / (1 - x)))


def logit_grad_mp(x):
    """1/(x(1 - x)), where the value is NaN too (its formula's)."""
    if math.isnan(x):
        return NAN
    if x == 0 or x == 1:
        return INF
    if math.isinf(x):
        return -0.0
    x = mpmath.mpf(x)
    return float(1 / (x * (1 - x)))


def unit_grad_mp(f):
    """An inverse trigonometric or hyperbolic function's derivative by
    mpmath (autograd's 1 - x² cancels near ±1: 1e-7 relative at 1 -
    1e-10), NaN where it is not real, ±∞ at the ends."""
    def g(x):
        if math.isnan(x):
            return NAN
        with mpmath.workdps(40):
            v = f(mpmath.mpf(x))
        if isinstance(v, mpmath.mpc):
            return NAN
        return float(v)
    return g


def bessel_mp(nu, scaled):
    """I_ν(x), or e^-|x|·I_ν(x), by mpmath; past |x| = 1e5 its asymptotic
    expansion's first four terms (the fifth is below 1e-20 of the sum)."""
    def f(x):
        if math.isnan(x):
            return NAN
        if math.isinf(x):
            if scaled:
                return math.copysign(0.0, x) if nu else 0.0
            return math.copysign(INF, x) if nu else INF
        X = mpmath.mpf(abs(x))
        if X > 1e5:
            mu = 4 * nu * nu
            s, term = mpmath.mpf(1), mpmath.mpf(1)
            for k in range(1, 5):
                term *= -(mu - (2 * k - 1) ** 2) / (8 * k * X)
                s += term
            v = s / mpmath.sqrt(2 * mpmath.pi * X)
            if not scaled:
                v *= mpmath.exp(X)
        else:
            v = mpmath.besseli(nu, X) * (mpmath.exp(-X) if scaled else 1)
        return math.copysign(float(v), x) if nu else float(v)
    return f


def bessel_grad_mp(nu, scaled):
    """The derivatives at 40 digits: I₀' = I₁, I₁' = (I₀ + I₂)/2, and
    with the scaling's -sign(x) times the function; past |x| = 1e5 from
    the rounded values (whose ratio is what matters there)."""
    i0, i1 = bessel_mp(0, scaled), bessel_mp(1, scaled)
    def f(x):
        if math.isnan(x):
            return NAN
        if math.isinf(x):
            return 0.0 if scaled else math.copysign(INF, x) if nu == 0 else INF
        if abs(x) > 1e5:
            if not scaled:
                return math.copysign(INF, x) if nu == 0 else INF
            v = mpmath.mpf(i1(x)) if nu == 0 else mpmath.mpf(i0(x)) - mpmath.mpf(i1(x)) / x
            if scaled:
                v -= (1 if x > 0 else -1) * mpmath.mpf((i1 if nu else i0)(x))
            return float(v)
        X = mpmath.mpf(x)
        d = mpmath.besseli(1, X) if nu == 0 else (mpmath.besseli(0, X) + mpmath.besseli(2, X)) / 2
        if scaled:
            sgn = 1 if x > 0 else -1 if x < 0 else 0
            d = mpmath.exp(-abs(X)) * (d - sgn * mpmath.besseli(nu, X))
        return float(d)
    return f


def normal_pdf_mp(scale):
    """scale·e^(-x²·a) derivatives: Erfc's (-2/√π, a = 1) and Ndtr's
    (1/√(2π), a = ½)."""
    k, a = scale
    def f(x):
        if math.isnan(x):
            return NAN
        if math.isinf(x):
            return 0.0 if k > 0 else -0.0
        return float(k * mpmath.exp(-a * mpmath.mpf(x) ** 2))
    return f


def erfcx_grad_mp(x):
    if math.isnan(x):
        return NAN
    if x == INF:
        return -0.0
    if x < -27:
        return -INF
    x = mpmath.mpf(x)
    if x > 1e8:
        return float(-1 / (mpmath.sqrt(mpmath.pi) * x * x) * (1 - 3 / (2 * x * x)))
    with mpmath.workdps(80):  # 2x·erfcx(x) - 2/√π cancels 2x² times
        return float(2 * x * mpmath.exp(x * x) * mpmath.erfc(x) - 2 / mpmath.sqrt(mpmath.pi))


def logndtr_grad_mp(x):
    """φ(x)/Φ(x): 0 at +∞; about -x toward -∞."""
    if math.isnan(x):
        return NAN
    if x == INF:
        return 0.0
    if x < -1e8:
        return float(-mpmath.mpf(x) - 1 / mpmath.mpf(x))
    x = mpmath.mpf(x)
    return float(mpmath.npdf(x) / mpmath.ncdf(x))


def ndtri_grad_mp(p):
    y = ndtri_mp(p)
    if math.isnan(y):
        return NAN
    if math.isinf(y):
        return INF
    return float(1 / mpmath.npdf(y))


# Transcendental float ops, computed in float64 and rounded once.
ROUNDED = {
    "rsqrt": torch.rsqrt, "exp": torch.exp, "expm1": torch.expm1, "log": torch.log,
    # PyTorch's log1p overflows at the top of float64's range, its fmod
    # divides (a subnormal divisor gives NaN): NumPy's are C's.
    "log1p": lambda x: torch.from_numpy(np.log1p(x.detach().numpy())),
    "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf, "softplus": softplus,
    "elu": lambda x: torch.where(x > 0, x, torch.expm1(x)),  # F.elu takes e^x - 1
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2), "gelu": gelu, "gelu_tanh": gelu_tanh,
    # The other units by their definitions (F.selu and F.celu take e^x - 1
    # too), their limits at -∞ where PyTorch's formulas give ∞·0 (SiLU's,
    # Mish's), Softsign's ±1 at ±∞ (∞/∞), HardSwish's -0 from -3 down and
# x from 3 up (PyTorch's x·6/6 overflows past max/6).
    "selu": lambda x: SELU_SCALE * torch.where(x > 0, x, SELU_ALPHA * torch.expm1(x)),
    "celu": lambda x: torch.where(x > 0, x, 2 * torch.expm1(x / 2)),
    "silu": lambda x: torch.where(x == -math.inf, -0.0, x * torch.sigmoid(x)),
    "mish": lambda x: torch.where(x == -math.inf, -0.0, x * torch.tanh(softplus(x))),
    "softsign": lambda x: torch.where(x.abs() == math.inf, torch.sign(x), x / (1 + x.abs())),
    "relu6": F.relu6, "hardsigmoid": F.hardsigmoid,
    "hardswish": lambda x: torch.where(x <= -3, -0.0, torch.where(x >= 3, x, F.hardswish(x))),
    "prelu": lambda a, b: torch.where(a > 0, a, a * b),
    "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    # C's sinh and cosh (NumPy's): PyTorch's overflow from 709.78, where
    # e^x does, though both are finite to 710.4758.
    "sinh": lambda x: torch.from_numpy(np.sinh(x.detach().numpy())),
    "cosh": lambda x: torch.from_numpy(np.cosh(x.detach().numpy())),
    "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "log2": torch.log2, "log10": torch.log10, "exp2": torch.exp2,
    "erfinv": torch.erfinv,
    # The gamma family to 40 digits (mpmath's loggamma and digamma, the
    # Hurwitz zeta summed here): PyTorch 1.13's trigamma keeps about 9
    # digits (three terms of its asymptotic series from 6), its zeta 9
    # (3e-9 off at (3, -1.5)), its digamma none about its zero 1.4616.
    "lgamma": mp_elementwise(lgamma_mp), "digamma": mp_elementwise(digamma_mp),
    "polygamma1": mp_elementwise(polygamma_mp(1)), "polygamma3": mp_elementwise(polygamma_mp(3)),
    "zeta": mp_elementwise(zeta_mp),
    "igamma": mp_elementwise(igamma_mp(False)), "igammac": mp_elementwise(igamma_mp(True)),
    # The normal family by mpmath: PyTorch 1.13's ndtr is 0 where Φ is
    # 3e-235 (x = -32.7), its log_ndtr 1200 ulps off, its erfcx 237.
    "erfc": mp_elementwise(erfc_mp), "erfcx": mp_elementwise(erfcx_mp), "ndtr": mp_elementwise(ndtr_mp),
    "logndtr": mp_elementwise(logndtr_mp), "ndtri": mp_elementwise(ndtri_mp),
    # PyTorch's logit is log(x/(1 - x)), which cancels near ½.
    "xlogy": torch.xlogy, "xlog1py": torch.special.xlog1py, "logit": mp_elementwise(logit_mp),
    "besseli0": mp_elementwise(bessel_mp(0, False)), "besseli1": mp_elementwise(bessel_mp(1, False)),
    "besseli0e": mp_elementwise(bessel_mp(0, True)), "besseli1e": mp_elementwise(bessel_mp(1, True)),
    "atan2": torch.atan2, "hypot": torch.hypot,
    # NumPy's log1p(e^-|a-b|): PyTorch 1.13's takes log(1 + e^-|a-b|),
    # which loses the digits of a small e^-|a-b| (0 at (0, -104)).
    "logaddexp": lambda a, b: torch.from_numpy(np.logaddexp(a.detach().numpy(), b.detach().numpy())),
    # C's pow (NumPy's): PyTorch's float64 pow(1.8e308, 1) overflows.
    "pow": lambda a, b: torch.from_numpy(np.power(a.detach().numpy(), b.detach().numpy())),
    "softmax": lambda x: torch.softmax(x, 1), "log_softmax": lambda x: torch.log_softmax(x, 1),
    "logsumexp": lambda x: torch.logsumexp(x, 1),
    "var": lambda x: x.var(1, unbiased=False), "std": lambda x: x.std(1, unbiased=False),
    "norm1": lambda x: torch.linalg.vector_norm(x, 1, 1), "norm2": lambda x: torch.linalg.vector_norm(x, 2, 1),
    "norm3": lambda x: torch.linalg.vector_norm(x, 3, 1),
    "norm_inf": lambda x: torch.linalg.vector_norm(x, math.inf, 1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[1:], eps=1e-5),
    "rms_norm": lambda x: x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6),
    # TensorFlow's l2_normalize (F.normalize clamps the norm, not its square).
    "l2_normalize": lambda x: x * torch.rsqrt(torch.clamp((x * x).sum(1, keepdim=True), min=1e-12)),
}

# Row ops whose gradients are of their outputs weighted by the columns'
# numbers (a row's sum after LayerNorm is 0 whatever the row).
WEIGHTED = {"layer_norm", "rms_norm", "l2_normalize"}

# The gradients eagerflow defines where PyTorch's formula is a matter of
# convention: a tie of Maximum/Minimum goes to the first operand.
TIE_TO_FIRST = {"maximum", "minimum"}

# Unary functions whose gradient the reference writes out, where autograd
# through the value's formula would differ at a kink or lose digits:
# softplus' is σ(x), ELU's e^x below 0 (from x, as PyTorch's), GELU's
# Φ(x) + xφ(x) with Φ's tail as erfc.
def gelu_grad(x):
    g = 0.5 * torch.erfc(-x * math.sqrt(0.5)) + x * torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return torch.where(x == -math.inf, 0.0, torch.where(x == math.inf, 1.0, g))


# The differentiable forms of ops whose values NumPy computes.
AUTOGRAD_FORM = {"log1p": torch.log1p, "pow": torch.pow}

def gelu_tanh_grad(x):
    """σ + 2x·u'·σ·σ(-2u), its limits 1 and 0 at ±∞ (and past ±22, where
    x·u' overflows against σ·σ(-2u) = 0)."""
    xc = x.clamp(-22, 22)
    u2 = 2 * math.sqrt(2 / math.pi) * (xc + 0.044715 * xc ** 3)
    du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * xc * xc)
    g = torch.sigmoid(u2) + 2 * xc * du * torch.sigmoid(u2) * torch.sigmoid(-u2)
    return torch.where(x > 22, 1.0, torch.where(x < -22, 0.0, g))


SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717


def unit_slope(x, f):
    """f(x) at finite x, the slope's limits 0 and 1 at -∞ and +∞."""
    xc = torch.where(x.abs() == math.inf, torch.zeros_like(x), x)
    return torch.where(x == -math.inf, 0.0, torch.where(x == math.inf, 1.0, f(xc)))


def mish_slope(x):
    t = torch.tanh(softplus(x))
    return t + x * torch.sigmoid(x) / torch.cosh(softplus(x)) ** 2


GRAD_OF = {
    # softmax(x), where PyTorch's e^(x - lse) carries lse's rounding at
    # lse's magnitude (248 ulps at logits of 1000).
    "logsumexp": lambda x: torch.softmax(x, 1),
    "expm1": torch.exp,  # e^x, where PyTorch's y + 1 cancels for negative x
    "gelu_tanh": gelu_tanh_grad,
    "softplus": torch.sigmoid,
    "elu": lambda x: torch.where(x > 0, 1.0, torch.exp(x)),
    "selu": lambda x: torch.where(x > 0, SELU_SCALE, SELU_SCALE * SELU_ALPHA * torch.exp(x)),
    "celu": lambda x: torch.where(x > 0, 1.0, torch.exp(x / 2)),
    "silu": lambda x: unit_slope(x, lambda v: torch.sigmoid(v) * (1 + v * torch.sigmoid(-v))),
    "mish": lambda x: unit_slope(x, mish_slope),
    "softsign": lambda x: 1 / (1 + x.abs()) ** 2,
    # g/6 in float64 (PyTorch 1.13 multiplies by a float 1/6), HardSwish's
    # slope as (2x + 3)/6, which does not cancel near -3/2 as x/3 + 1/2.
    "hardsigmoid": lambda x: torch.where((x > -3) & (x < 3), torch.full_like(x, 1 / 6), torch.zeros_like(x)),
    "hardswish": lambda x: torch.where(x < -3, 0.0, torch.where(x <= 3, (2 * x + 3) / 6, 1.0)),
    "gelu": gelu_grad,
    "sinh": lambda x: torch.from_numpy(np.cosh(x.numpy())),
    "cosh": lambda x: torch.from_numpy(np.sinh(x.numpy())),
    "lgamma": mp_elementwise(digamma_mp),
    "digamma": mp_elementwise(polygamma_mp(1)),
    "polygamma1": mp_elementwise(polygamma_mp(2)),
    "polygamma3": mp_elementwise(polygamma_mp(4)),
    "erfc": mp_elementwise(normal_pdf_mp((-2 / math.sqrt(math.pi), 1))),
    "ndtr": mp_elementwise(normal_pdf_mp((1 / math.sqrt(2 * math.pi), 0.5))),
    "erfcx": mp_elementwise(erfcx_grad_mp), "logndtr": mp_elementwise(logndtr_grad_mp),
    "ndtri": mp_elementwise(ndtri_grad_mp),
    "logit": mp_elementwise(logit_grad_mp),
    "besseli0": mp_elementwise(bessel_grad_mp(0, False)), "besseli1": mp_elementwise(bessel_grad_mp(1, False)),
    "besseli0e": mp_elementwise(bessel_grad_mp(0, True)), "besseli1e": mp_elementwise(bessel_grad_mp(1, True)),
    "asin": mp_elementwise(unit_grad_mp(lambda x: INF if abs(x) == 1 else 1 / mpmath.sqrt(1 - x * x) if abs(x) < 1 else mpmath.mpc(0, 1))),
    "acos": mp_elementwise(unit_grad_mp(lambda x: -INF if abs(x) == 1 else -1 / mpmath.sqrt(1 - x * x) if abs(x) < 1 else mpmath.mpc(0, 1))),
    "atanh": mp_elementwise(unit_grad_mp(lambda x: INF if abs(x) == 1 else (0 if mpmath.isinf(x) else 1 / (1 - x * x)))),
    # NaN below 1, where Acosh is (PyTorch's formula is finite below -1).
    "acosh": mp_elementwise(unit_grad_mp(lambda x: INF if x == 1 else (0 if mpmath.isinf(x) else 1 / mpmath.sqrt(x * x - 1)) if x > 1 else mpmath.mpc(0, 1))),
}


def cast(vals, src, dst):
    if dst == "bool":
        return [str(int(v != 0)) for v in vals]  # NaN is nonzero
    if is_float(dst):
        t = torch.tensor(vals, dtype=torch.float64 if is_float(src) else torch.int64)
        if src == "int64" and dst == "float32":
            # int64 to float32 rounds once (through float64 it could twice).
            return [encode_float(np.float32(np.int64(v))) for v in vals]
        return encode(t.to(DTYPES[dst]))
    out = []
    for v in vals:
        if is_float(src):
            if not math.isfinite(v):
                out.append("skip")
                continue
            v = math.trunc(v)
            lo, hi = (0, 255) if dst == "uint8" else (-(1 << (BITS[dst] - 1)), (1 << (BITS[dst] - 1)) - 1)
            if not lo <= v <= hi:
                out.append("skip")
                continue
        out.append(str(wrap(v, dst)))
    return out


def evaluate(case):
    op, dtype = case["op"].removesuffix("_wide"), case["dtype"]
    a = decode(case["a"], dtype)
    b = decode(case["b"], dtype) if case.get("b") else None
    if op == "cast":
        return {"values": cast(a, dtype, case["to"])}
    rows = case.get("rows") or 0
    shape = (rows, len(a) // rows) if rows else (len(a),)
    if not is_float(dtype) and dtype != "bool" and (op in INT_BINARY or op in INT_UNARY):
        if b is not None:
            vals = [INT_BINARY[op](x, y, dtype) for x, y in zip(a, b)]
        else:
            vals = [INT_UNARY[op](x, dtype) for x in a]
        return {"values": [str(v) for v in vals]}
    if dtype in ("int32", "int64", "uint8") and op in ("sum", "prod", "cumsum"):
        t = torch.tensor(a, dtype=torch.int64).reshape(shape)
        out = {"sum": lambda x: x.sum(1), "prod": lambda x: x.prod(1), "cumsum": lambda x: x.cumsum(1)}[op](t)
        return {"values": [str(wrap(v, dtype)) for v in out.flatten().tolist()]}
    dt = DTYPES[dtype]
    ins = [torch.tensor(v, dtype=torch.float64).reshape(shape).to(dt) if is_float(dtype)
           else torch.tensor(v, dtype=dt).reshape(shape) for v in ([a] if b is None else [a, b])]
    if op in EXACT and dtype in HALF:
        # The half types compute in float32 and round once (so do PyTorch's
        # bfloat16 ops; its CPU float16 ones are few).
        values = EXACT[op](*[x.float() for x in ins])
        if values.dtype.is_floating_point:
            values = values.to(dt)
    elif op in EXACT:
        values = EXACT[op](*ins)
    else:
        values = ROUNDED[op](*[x.double() for x in ins]).to(dt)
    result = {"values": encode(values)}
    if case.get("grad") and op in WEIGHTED:
        # The outputs weighted by their columns' numbers (1, 2, ...).
        xs = [ins[0].double().clone().requires_grad_()]
        y = ROUNDED[op](xs[0])
        (y * torch.arange(1, y.shape[1] + 1, dtype=torch.float64)).sum().backward()
        result["grads"] = [encode(xs[0].grad)]
    elif case.get("grad"):
        if op in GRAD_OF:
            grads = [encode(GRAD_OF[op](ins[0].double()))]
        elif op == "prelu":
            # 1 or alpha, and 0 or x: autograd through torch.where adds
            # the unused side's 0·alpha, NaN at an infinite alpha.
            a64, b64 = ins[0].double(), ins[1].double()
            grads = [encode(torch.where(a64 > 0, torch.ones_like(a64), b64)), encode(torch.where(a64 > 0, torch.zeros_like(a64), a64))]
        elif op == "logaddexp":
            # σ(a - b) and σ(b - a), from the operands: PyTorch's e^(b -
            # result) loses the subnormal ones (0 at (710, 0), not e^-710).
            a64, b64 = ins[0].double(), ins[1].double()
            grads = [encode(sigmoid_tail(a64 - b64)), encode(sigmoid_tail(b64 - a64))]
        elif op == "zeta":
            # -s·ζ(s+1, q) in q, as eagerflow's rule computes it; none in s.
            s64, q64 = ins[0].double(), ins[1].double()
            grads = [None, encode(-(mp_elementwise(zeta_mp)(s64 + 1, q64) * s64))]
        elif op in ("xlogy", "xlog1py"):
            # log y (log1p y) and x/y (x/(1 + y)), both 0 where x is 0 and
            # y is at or past the pole (PyTorch's x/y is NaN at (0, 0)).
            a64, b64 = ins[0].double(), ins[1].double()
            f = torch.log if op == "xlogy" else lambda v: torch.from_numpy(np.log1p(v.numpy()))
            d = b64 if op == "xlogy" else 1 + b64
            z = (a64 == 0) & ~((d > 0) & torch.isfinite(d))
            grads = [encode(torch.where(z, 0.0, f(b64))), encode(torch.where(z, 0.0, a64 / d))]
        elif op == "mod":
            # 1 in a, -⌊a/b⌋ in b (the floor division Mod's remainder
            # goes with: at b = ±∞ the limit, not (a - mod)/b's NaN; NaN
            # at b = 0, where the value is).
            a64, b64 = ins[0].double().numpy(), ins[1].double().numpy()
            q = np.where(b64 == 0, np.nan, np.floor_divide(a64, b64))
            grads = [encode(torch.ones_like(ins[0].double())), encode(torch.from_numpy(-q))]
        elif op == "rem":
            # fmod(a, b)'s gradient in b is -trunc(a/b) for the exact
            # quotient, which (a - fmod(a, b))/b is (PyTorch's rounds a/b).
            a64, b64 = ins[0].double().numpy(), ins[1].double().numpy()
            q = (a64 - np.fmod(a64, b64)) / b64
            grads = [encode(torch.ones_like(ins[0].double())), encode(torch.from_numpy(-q))]
        else:
            xs = [x.double().clone().requires_grad_() for x in ins]
            (AUTOGRAD_FORM.get(op) or EXACT.get(op) or ROUNDED[op])(*xs).sum().backward()
            if op == "pow":
                # A negative base's power has no derivative in the exponent:
                # 0 (times the power: NaN where that is), as TensorFlow and
                # eagerflow take it (PyTorch's ln a is NaN).
                neg = xs[0].detach() < 0
                xs[1].grad[neg] = values.double()[neg] * 0
            grads = [encode(x.grad) for x in xs]
        if op in TIE_TO_FIRST:
            ties = (ins[0] == ins[1]).flatten().tolist()
            grads = [[("0x%016x" % struct.unpack("<Q", struct.pack("<d", 1.0 if i == 0 else 0.0))[0])
                      if tie else g for g, tie in zip(gs, ties)] for i, gs in enumerate(grads)]
        result["grads"] = grads
    return result


for case in json.load(sys.stdin)["cases"]:
    try:
        result = evaluate(case)
    except Exception as e:  # reported to the test as the case's error
        result = {"error": "%s: %s" % (type(e).__name__, e)}
    result["id"] = case["id"]
    print(json.dumps(result))
