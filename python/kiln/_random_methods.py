"""torch's random-sampling functions and in-place Tensor methods, drawn from
kiln's counter-based (Philox) generator through rand / randn / randint, so
kiln.manual_seed and generator= make them reproducible:

  normal_, uniform_, bernoulli_, exponential_, geometric_, log_normal_, cauchy_,
  random_ (in place), and bernoulli, normal, multinomial, poisson, randperm.

Continuous draws are made in float64 and rounded to the tensor's dtype once.
They are not differentiable (torch's aren't either)."""

import math

from . import _C

_T = _C.Tensor


def _uniform(shape, generator, device=None):
    """U[0, 1) in float64."""
    return _C.rand(list(shape), generator=generator, dtype=_C.float64, device=device)


def _fill(self, values):
    with _no_grad():
        self.copy_(values)  # rounds to self's dtype once, as .to would
    return self


def _affine_(z, scale, shift):
    """z * scale + shift in place on a fresh float64 draw (two roundings, as the
    expression would; no temporaries)."""
    if scale != 1:
        z.mul_(scale)
    if shift != 0:
        z.add_(shift)
    return z


def _no_grad():
    from ._grad_mode import no_grad

    return no_grad()


def _check_float(self, op):
    if not (self.is_floating_point() or self.is_complex()):
        raise TypeError(f"[{op}] expects a floating point tensor, got {self.dtype}")


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _check_float(self, "normal_")
    if std < 0:
        raise ValueError(f"normal_ expects std >= 0.0, but found std {std}")
    z = _C.randn(list(self.shape), generator=generator, dtype=_C.float64)
    return _fill(self, _affine_(z, std, mean))


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    from_ = kwargs.pop("from", from_)
    _check_float(self, "uniform_")
    if from_ > to:
        raise ValueError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill(self, _affine_(_uniform(self.shape, generator), to - from_, from_))


def bernoulli_(self, p=0.5, *, generator=None):
    u = _uniform(self.shape, generator)
    prob = p.to(_C.float64) if hasattr(p, "dtype") else p
    if not hasattr(p, "dtype") and not 0 <= p <= 1:
        raise ValueError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, (u < prob).to(_C.float64))


def exponential_(self, lambd=1.0, *, generator=None):
    _check_float(self, "exponential_")
    if lambd <= 0:
        raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, -_C.log1p(-_uniform(self.shape, generator)) / lambd)


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform(self.shape, generator)
    return _fill(self, _C.ceil(_C.log1p(-u) / math.log1p(-p)).clamp(min=1.0))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _check_float(self, "log_normal_")
    if std <= 0:
        raise ValueError(f"log_normal_ expects std > 0.0, but found std={std}")
    z = _C.randn(list(self.shape), generator=generator, dtype=_C.float64)
    return _fill(self, _C.exp(z * std + mean))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    _check_float(self, "cauchy_")
    u = _uniform(self.shape, generator)
    return _fill(self, median + sigma * _C.tan(math.pi * (u - 0.5)))


def random_(self, from_=None, to=None, *, generator=None, **kwargs):
    """Integers uniform on [from, to - 1]; random_(to) is [0, to - 1]; random_()
    is [0, 2^mantissa] for floats and the dtype's range for integers."""
    from_ = kwargs.pop("from", from_)
    if from_ is not None and to is None:
        from_, to = 0, from_
    if from_ is None:
        from_ = 0
        if self.is_floating_point():
            digits = {_C.float16: 11, _C.bfloat16: 8, _C.float32: 24}.get(self.dtype, 53)
            to = 2 ** digits + 1
        elif self.dtype == _C.bool:
            to = 2
        else:
            to = {_C.uint8: 256, _C.int8: 128, _C.int16: 2 ** 15, _C.int32: 2 ** 31}.get(self.dtype, 2 ** 63 - 1)
    if from_ >= to:
        raise ValueError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    r = _C.randint(from_, to, list(self.shape), generator=generator, dtype=_C.int64)
    with _no_grad():
        self.copy_(r.to(self.dtype))
    return self


def bernoulli(input, p=None, *, generator=None, out=None):
    """Draws 1 with probability input (or p) in input's shape and dtype."""
    prob = input if p is None else p
    u = _uniform(input.shape, generator)
    r = (u < (prob.to(_C.float64) if hasattr(prob, "dtype") else prob)).to(input.dtype)
    return r if out is None else out.copy_(r)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    """normal(mean, std) with tensors (broadcast), or floats and size=."""
    tensors = [v for v in (mean, std) if hasattr(v, "dtype")]
    if size is None and not tensors:
        raise TypeError("normal() with float mean and std needs size=")
    if size is not None and tensors:
        raise TypeError("normal() takes size= only with float mean and std")
    if tensors:
        shape = _C.broadcast_shapes(*[list(v.shape) for v in tensors]) if len(tensors) == 2 else \
            list(tensors[0].shape)
        dt = tensors[0].dtype if dtype is None else dtype
    else:
        shape, dt = list(size), (_C.float32 if dtype is None else dtype)
    z = _C.randn(list(shape), generator=generator, dtype=_C.float64)
    m = mean.to(_C.float64) if hasattr(mean, "dtype") else mean
    s = std.to(_C.float64) if hasattr(std, "dtype") else std
    r = (z * s + m).to(dt)
    if requires_grad:
        r.requires_grad_()
    return r if out is None else out.copy_(r)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices drawn from the rows of input (non-negative weights, not
    necessarily summing to 1): with replacement by inverting each row's CDF;
    without it by the Gumbel-top-k trick (the num_samples largest of
    log w + Gumbel noise are a draw without replacement)."""
    if input.dim() not in (1, 2):
        raise ValueError("prob_dist must be 1 or 2 dim")
    w = input.to(_C.float64)
    rows = w if w.dim() == 2 else w.unsqueeze(0)
    n = rows.size(1)
    if bool(_C.any(rows < 0).item()) or not bool(_C.all(_C.isfinite(rows)).item()):
        raise ValueError("probability tensor contains either inf, nan or element < 0")
    if bool(_C.any(_C.sum(rows, 1) <= 0).item()):
        raise ValueError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > n:
        raise ValueError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if replacement:
        cdf = _C.cumsum(rows, 1)
        cdf = cdf / cdf.narrow(1, n - 1, 1)
        u = _uniform([rows.size(0), num_samples], generator)
        # The number of CDF entries at or below u is the drawn index; zero-weight
        # categories have cdf equal to their left neighbour and are never drawn.
        idx = _C.sum((cdf.unsqueeze(1) <= u.unsqueeze(2)).to(_C.int64), 2)
        idx = _C.clamp(idx, max=n - 1)
    else:
        g = -_C.log(-_C.log1p(-_uniform(list(rows.shape), generator)))
        keys = _C.where(rows > 0, _C.log(_C.where(rows > 0, rows, 1.0)) + g, float("-inf"))
        idx = _C.topk(keys, num_samples, 1)[1]
        positive = _C.sum((rows > 0).to(_C.int64), 1)
        if bool(_C.any(positive < num_samples).item()):
            raise ValueError("invalid multinomial distribution (with replacement=False, not enough non-negative "
                             "category to sample)")
    r = idx if w.dim() == 2 else idx.squeeze(0)
    return r if out is None else out.copy_(r)


def poisson(input, generator=None):
    """Poisson draws with rates `input` (>= 0): below rate 10 by inverting the
    CDF one count at a time (to rate + 12 sqrt(rate) + 20, far in the tail);
    from 10 on by Hoermann's transformed rejection (PTRS), every element
    drawing again until it is accepted (~1.1 rounds on average)."""
    rate = input.to(_C.float64)
    if rate.numel() and (bool(_C.any(rate < 0).item()) or bool(_C.any(_C.isnan(rate)).item())):
        raise ValueError("poisson expects rates >= 0")
    shape = list(input.shape)
    small = rate < 10
    # Inversion for the small rates (the others are run at rate 0 and discarded).
    lam = _C.where(small, rate, 0.0)
    u = _uniform(shape, generator)
    p = _C.exp(-lam)
    cdf, count = p, _C.zeros_like(lam)
    for k in range(1, int(10 + 12 * math.sqrt(10) + 20) + 1):
        count = count + (u >= cdf).to(_C.float64)
        p = p * lam / k
        cdf = cdf + p
    if not bool(_C.any(_C.logical_not(small)).item()):
        return count.to(input.dtype)
    lam = _C.where(small, 10.0, rate)
    b = 0.931 + 2.53 * _C.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    log_lam = _C.log(lam)
    result = _C.zeros_like(lam)
    pending = _C.logical_not(small)
    while bool(_C.any(pending).item()):
        uu = _uniform(shape, generator) - 0.5
        v = _uniform(shape, generator)
        us = 0.5 - _C.abs(uu)
        k = _C.floor((2 * a / us + b) * uu + lam + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        bad = (k < 0) | ((us < 0.013) & (v > us))
        kk = _C.where(k < 0, 0.0, k)
        full = (_C.log(v) + _C.log(inv_alpha) - _C.log(a / (us * us) + b)
                <= -lam + kk * log_lam - _C.lgamma(kk + 1))
        accept = pending & (quick | (_C.logical_not(bad) & full))
        result = _C.where(accept, k, result)
        pending = pending & _C.logical_not(accept)
    return _C.where(small, count, result).to(input.dtype)


def binomial(count, prob, generator=None):
    """Binomial draws (count trials of probability prob, broadcast): with
    q = min(p, 1 - p), by inverting the CDF where count q < 10 and by
    Hoermann's BTRS rejection above, then n - k where p > 1/2."""
    n = count.to(_C.float64)
    p = prob.to(_C.float64)
    n, p = _C.broadcast_tensors(n, p)
    if n.numel() and (bool(_C.any(n < 0).item()) or bool(_C.any((p < 0) | (p > 1)).item())):
        raise ValueError("binomial expects count >= 0 and 0 <= prob <= 1")
    shape = list(n.shape)
    flip = p > 0.5
    q = _C.where(flip, 1 - p, p)
    small = n * q < 10
    # Inversion for the small means (the others run with q = 0, discarded).
    qs = _C.where(small, q, 0.0)
    ns = _C.where(small, n, 0.0)
    u = _uniform(shape, generator)
    pk = _C.exp(ns * _C.log1p(-qs))  # P(X = 0)
    cdf, k = pk, _C.zeros_like(ns)
    ratio = qs / (1 - qs)
    for j in range(int(10 + 12 * math.sqrt(10) + 20)):
        step = (u >= cdf) & (k < ns)
        k = k + step.to(_C.float64)
        pk = pk * (ns - j) / (j + 1) * ratio
        cdf = cdf + pk
    result = k
    if bool(_C.any(_C.logical_not(small)).item()):
        nb = _C.where(small, 100.0, n)
        qb = _C.where(small, 0.5, q)
        spq = _C.sqrt(nb * qb * (1 - qb))
        b = 1.15 + 2.53 * spq
        a = -0.0873 + 0.0248 * b + 0.01 * qb
        c = nb * qb + 0.5
        vr = 0.92 - 4.2 / b
        alpha = (2.83 + 5.1 / b) * spq
        lpq = _C.log(qb / (1 - qb))
        m = _C.floor((nb + 1) * qb)
        h = _C.lgamma(m + 1) + _C.lgamma(nb - m + 1)
        big = _C.zeros_like(nb)
        pending = _C.logical_not(small)
        while bool(_C.any(pending).item()):
            uu = _uniform(shape, generator) - 0.5
            v = _uniform(shape, generator)
            us = 0.5 - _C.abs(uu)
            kk = _C.floor((2 * a / us + b) * uu + c)
            inside = (kk >= 0) & (kk <= nb)
            quick = inside & (us >= 0.07) & (v <= vr)
            kc = _C.clamp(kk, min=0.0)
            kc = _C.minimum(kc, nb)
            lhs = _C.log(v * alpha / (a / (us * us) + b))
            rhs = h - _C.lgamma(kc + 1) - _C.lgamma(nb - kc + 1) + (kc - m) * lpq
            accept = pending & (quick | (inside & (lhs <= rhs)))
            big = _C.where(accept, kk, big)
            pending = pending & _C.logical_not(accept)
        result = _C.where(small, k, big)
    result = _C.where(flip, n - result, result)
    return result.to(count.dtype if count.is_floating_point() else _C.float32)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    keys = _C.rand(n, generator=generator, dtype=_C.float64)
    r = _C.argsort(keys).to(_C.int64 if dtype is None else dtype)
    return r.requires_grad_() if requires_grad else r


for _name in ("normal_", "uniform_", "bernoulli_", "exponential_", "geometric_", "log_normal_", "cauchy_",
              "random_"):
    setattr(_T, _name, globals()[_name])
_T.bernoulli = bernoulli
_T.multinomial = multinomial
del _name

FUNCTIONS = ["bernoulli", "normal", "multinomial", "poisson", "binomial", "randperm"]
