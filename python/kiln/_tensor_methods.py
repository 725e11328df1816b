"""The Tensor methods torch has for functions kiln writes in Python (t.cov(),
t.addcdiv_(...), t.new_zeros(...), t.unfold(...), ...)."""

from . import _C

_T = _C.Tensor


def install(ns):
    """Sets the Tensor methods torch has for the functions in ns (a namespace:
    name -> function)."""
    for name in ("addcdiv", "cov", "corrcoef", "diff", "aminmax", "msort",
                 "det", "logdet", "slogdet", "inverse", "pinverse", "svd", "cholesky_inverse", "matrix_exp",
                 "take_along_dim", "renorm", "index_fill", "adjoint", "conj_physical", "resolve_conj",
                 "resolve_neg", "histc", "dist", "cross", "hardshrink", "mvlgamma"):
        setattr(_T, name, ns[name])

    def inplace(fn):
        return lambda self, *a, **k: self.copy_(fn(self, *a, **k))

    for name in ("addcdiv", "renorm", "index_fill", "conj_physical", "mvlgamma"):
        setattr(_T, name + "_", inplace(ns[name]))
    _T.cumsum_ = lambda self, dim, *, dtype=None: self.copy_(_C.cumsum(self, dim, dtype=dtype))
    _T.cumprod_ = lambda self, dim, *, dtype=None: self.copy_(_C.cumprod(self, dim, dtype=dtype))
    _T.clamp_min_ = lambda self, min: self.clamp_(min=min)
    _T.clamp_max_ = lambda self, max: self.clamp_(max=max)
    _T.clip_ = lambda self, min=None, max=None: self.clamp_(min, max)
    for alias, target in (("absolute_", "abs_"), ("arctan2_", "atan2_"), ("divide_", "div_"),
                          ("multiply_", "mul_"), ("subtract_", "sub_"), ("negative_", "neg_"),
                          ("not_equal_", "ne_"), ("less_", "lt_"), ("less_equal_", "le_"), ("greater_", "gt_"),
                          ("greater_equal_", "ge_")):
        setattr(_T, alias, getattr(_T, target))

    def new_factory(make):
        def f(self, size, *args, dtype=None, device=None, requires_grad=False, **kwargs):
            t = make(list(size) if not isinstance(size, int) else [size], *args,
                     dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device)
            return t.requires_grad_() if requires_grad else t
        return f

    _T.new_empty = new_factory(lambda s, **k: _C.empty(s, **k))
    _T.new_zeros = new_factory(lambda s, **k: _C.zeros(s, **k))
    _T.new_ones = new_factory(lambda s, **k: _C.ones(s, **k))
    _T.new_full = new_factory(lambda s, v, **k: _C.full(s, v, **k))
    _T.new_empty_strided = new_factory(lambda s, st, **k: ns["empty_strided"](s, st, **k))

    def sum_to_size(self, *size):
        shape = list(size[0]) if len(size) == 1 and not isinstance(size[0], int) else list(size)
        lead = self.dim() - len(shape)
        dims = list(range(lead)) + [lead + i for i, s in enumerate(shape)
                                             if s == 1 and self.size(lead + i) != 1]
        r = _C.sum(self, dims, keepdim=True) if dims else self
        return r.reshape(shape)

    def unfold(self, dimension, size, step):
        d = dimension % max(self.dim(), 1)
        n = self.size(d) if self.dim() > 0 else 1
        if size > n:
            raise ValueError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise ValueError(f"step is {step} but must be > 0")
        shape, strides = list(self.shape), [self.stride(i) for i in range(self.dim())]
        if self.dim() == 0:
            shape, strides, d = [1], [1], 0
        st = strides[d]
        shape[d] = (n - size) // step + 1
        strides[d] = st * step
        return self.as_strided(shape + [size], strides + [st], self.storage_offset())

    def index_copy_(self, dim, index, source):
        d = dim % max(self.dim(), 1)
        shape = [1] * source.dim()
        if source.dim():
            shape[d] = -1
        idx = index.reshape(shape).expand(list(source.shape)) if source.dim() else index.reshape([])
        return self.scatter_(d, idx, source)

    def masked_scatter_(self, mask, source):
        # The positions mask selects (row-major), filled from source in order.
        where = _C.nonzero(mask.expand(list(self.shape)).reshape([-1])).reshape([-1])
        if where.numel() > source.numel():
            raise ValueError("masked_scatter: expected source to have at least as many elements as ones in mask")
        return self.put_(where, source.reshape([-1]).narrow(0, 0, where.numel()))

    def fill_diagonal_(self, fill_value, wrap=False):
        if self.dim() < 2:
            raise ValueError("dimensions must larger than 1")
        if self.dim() > 2 and len(set(self.shape)) != 1:
            raise ValueError("all dimensions of input must be of equal length")
        n = min(self.shape)
        step = sum(self.stride(i) for i in range(self.dim()))
        self.as_strided([n], [step], self.storage_offset()).fill_(fill_value)
        if wrap and self.dim() == 2 and self.size(0) > self.size(1) + 1:
            # torch's wrap: the diagonal starts again one row below its end.
            rest = self.narrow(0, self.size(1) + 1, self.size(0) - self.size(1) - 1)
            fill_diagonal_(rest, fill_value, wrap=True)
        return self

    _T.sum_to_size = sum_to_size
    _T.unfold = unfold
    _T.index_copy_ = index_copy_
    _T.index_copy = ns["index_copy"]
    _T.masked_scatter_ = masked_scatter_
    _T.masked_scatter = ns["masked_scatter"]
    _T.fill_diagonal_ = fill_diagonal_
    _T.histogram = ns["histogram"]
