"""kiln.special functions written with kiln's public ops: the orthogonal
polynomials by their three-term recurrences, the normal distribution's
ndtr / log_ndtr, erfcx, entr, xlog1py, multigammaln and spherical_bessel_j0.
Float32 inputs are computed in float64 and rounded once where the formula
cancels (erfcx, log_ndtr). Accuracy against SciPy: tests/python/test_special_extra.py."""

import math

from . import _C


def _float(x):
    if not hasattr(x, "dtype"):
        x = _C.tensor(x)
    return x if x.is_floating_point() else x.to(_C.float32)


def _recurrence(x, n, p0, p1, step):
    """P_n(x) from P_0, P_1 and P_{k+1} = step(k, P_k, P_{k-1}); n an int or
    an integer tensor (elementwise, broadcast with x); 0 for n < 0."""
    x = _float(x)
    if not hasattr(n, "dtype"):
        if n < 0:
            return _C.zeros_like(x)
        prev, cur = p0(x), p1(x)
        if n == 0:
            return prev
        for k in range(1, int(n)):
            prev, cur = cur, step(k, x, cur, prev)
        return cur
    nn = n.to(_C.int64)
    top = int(_C.amax(nn).item()) if nn.numel() > 0 else 0
    prev, cur = p0(x), p1(x)
    out = _C.where(nn == 0, prev, _C.zeros_like(x))
    out = _C.where(nn == 1, cur, out)
    for k in range(1, top):
        prev, cur = cur, step(k, x, cur, prev)
        out = _C.where(nn == k + 1, cur, out)
    return out


def _ones(x):
    return _C.ones_like(x)


def _cheb_step(k, x, cur, prev):
    return 2 * x * cur - prev


def chebyshev_polynomial_t(input, n, *, out=None):
    return _out(_recurrence(input, n, _ones, lambda x: x, _cheb_step), out)


def chebyshev_polynomial_u(input, n, *, out=None):
    return _out(_recurrence(input, n, _ones, lambda x: 2 * x, _cheb_step), out)


def chebyshev_polynomial_v(input, n, *, out=None):
    return _out(_recurrence(input, n, _ones, lambda x: 2 * x - 1, _cheb_step), out)


def chebyshev_polynomial_w(input, n, *, out=None):
    return _out(_recurrence(input, n, _ones, lambda x: 2 * x + 1, _cheb_step), out)


def shifted_chebyshev_polynomial_t(input, n, *, out=None):
    return chebyshev_polynomial_t(2 * _float(input) - 1, n, out=out)


def shifted_chebyshev_polynomial_u(input, n, *, out=None):
    return chebyshev_polynomial_u(2 * _float(input) - 1, n, out=out)


def shifted_chebyshev_polynomial_v(input, n, *, out=None):
    return chebyshev_polynomial_v(2 * _float(input) - 1, n, out=out)


def shifted_chebyshev_polynomial_w(input, n, *, out=None):
    return chebyshev_polynomial_w(2 * _float(input) - 1, n, out=out)


def hermite_polynomial_h(input, n, *, out=None):
    # Physicists': H_{k+1} = 2x H_k - 2k H_{k-1}.
    return _out(_recurrence(input, n, _ones, lambda x: 2 * x, lambda k, x, c, p: 2 * x * c - 2 * k * p), out)


def hermite_polynomial_he(input, n, *, out=None):
    # Probabilists': He_{k+1} = x He_k - k He_{k-1}.
    return _out(_recurrence(input, n, _ones, lambda x: x, lambda k, x, c, p: x * c - k * p), out)


def legendre_polynomial_p(input, n, *, out=None):
    # (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}.
    return _out(_recurrence(input, n, _ones, lambda x: x,
                            lambda k, x, c, p: ((2 * k + 1) * x * c - k * p) / (k + 1)), out)


def _out(result, out):
    return result if out is None else out.copy_(result)


def _wide(x):
    """x in float64 and the dtype to round the result to."""
    x = _float(x)
    return x.to(_C.float64), x.dtype


def erfcx(input, *, out=None):
    """exp(x^2) erfc(x): the product below 10 (erfc(10) ~ 2e-45 is still a
    normal double), the asymptotic series 1/(x sqrt(pi)) sum (-1)^k (2k-1)!!
    / (2x^2)^k above (16 terms reach double precision at x = 10), and
    2 exp(x^2) - erfcx(-x) for x < 0."""
    x, dtype = _wide(input)
    a = _C.abs(x)
    small = _C.exp(a * a) * _C.erfc(a)
    big_x = _C.where(a >= 10, a, 10.0)  # keeps the unused branch finite
    inv = 1.0 / (2 * big_x * big_x)
    term, series = _C.ones_like(x), _C.ones_like(x)
    for k in range(1, 17):
        term = term * (-(2 * k - 1)) * inv
        series = series + term
    big = series / (big_x * math.sqrt(math.pi))
    pos = _C.where(a < 10, small, big)
    r = _C.where(x < 0, 2 * _C.exp(x * x) - pos, pos)
    return _out(_C.where(_C.isnan(x), x, r).to(dtype), out)


def ndtr(input, *, out=None):
    """0.5 + 0.5 erf(z) near 0, 0.5 erfc(|z|) (or 1 minus it) elsewhere, z =
    x / sqrt 2. In the tails the rounding of z is amplified by ~x^2: relative
    error ~ (x^2 + 2) ulp, as in any erfc-based form."""
    x, dtype = _wide(input)
    z = x * math.sqrt(0.5)
    tail = 0.5 * _C.erfc(_C.abs(z))
    r = _C.where(_C.abs(z) < math.sqrt(0.5), 0.5 + 0.5 * _C.erf(z), _C.where(z > 0, 1.0 - tail, tail))
    return _out(r.to(dtype), out)


def log_ndtr(input, *, out=None):
    """log of the normal CDF: log1p(-ndtr(-x)) above -1 (no cancellation near
    0), log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below (no underflow)."""
    x, dtype = _wide(input)
    upper = _C.log1p(-0.5 * _C.erfc(x / math.sqrt(2.0)))
    xl = _C.where(x < -1, x, -1.0)
    lower = _C.log(0.5 * erfcx(-xl / math.sqrt(2.0))) - xl * xl / 2
    return _out(_C.where(x < -1, lower, upper).to(dtype), out)


def entr(input, *, out=None):
    x = _float(input)
    r = _C.where(x > 0, -x * _C.log(_C.where(x > 0, x, 1.0)), _C.where(x == 0, 0.0, float("-inf")))
    return _out(_C.where(_C.isnan(x), x, r), out)


def xlog1py(input, other, *, out=None):
    x = _float(input) if hasattr(input, "dtype") else input
    y = _float(other) if hasattr(other, "dtype") else _C.tensor(float(other))
    r = x * _C.log1p(y)
    return _out(_C.where((x == 0) & _C.logical_not(_C.isnan(y)), 0.0, r), out)


def multigammaln(input, p, *, out=None):
    """log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(a - j / 2)."""
    a = _float(input)
    if p < 1:
        raise ValueError(f"p has to be greater than or equal to 1, got {p}")
    if a.numel() > 0 and not bool(_C.all(a > (p - 1) / 2).item()):
        raise ValueError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    r = _C.lgamma(a) + p * (p - 1) / 4 * math.log(math.pi)
    for j in range(1, p):
        r = r + _C.lgamma(a - j / 2)
    return _out(r, out)


def spherical_bessel_j0(input, *, out=None):
    x = _float(input)
    safe = _C.where(x == 0, 1.0, x)
    r = _C.where(x == 0, 1.0, _C.sin(safe) / safe)
    return _out(_C.where(_C.isinf(x), 0.0, r), out)


FUNCTIONS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
             "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
             "legendre_polynomial_p", "erfcx", "ndtr", "log_ndtr", "entr", "xlog1py", "multigammaln",
             "spherical_bessel_j0"]
