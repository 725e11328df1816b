"""F.affine_grid and F.embedding_bag written with kiln's public ops, with torch's
signatures: the sampling grid of an affine map (the base grid's homogeneous
coordinates times theta^T, one batched matrix product) and the sum / mean / max
of bags of embedding rows (one gather, then an index_add over the bags)."""

from .. import _C


def _base_coords(n, align_corners, dtype):
    # The pixel centres in [-1, 1] (the corners themselves with align_corners),
    # in float64, rounded once to dtype.
    if n == 1:
        return _C.zeros(1, dtype=dtype)
    r = _C.linspace(-1.0, 1.0, n, dtype=_C.float64)
    return (r if align_corners else r * ((n - 1) / n)).to(dtype)


def affine_grid(theta, size, align_corners=None):
    """theta [N, 2, 3] with size (N, C, H, W) -> grid [N, H, W, 2] of (x, y);
    theta [N, 3, 4] with size (N, C, D, H, W) -> [N, D, H, W, 3] of (x, y, z)."""
    align_corners = bool(align_corners)
    size = list(size)
    if not theta.is_floating_point():
        raise TypeError(f"Expected theta to have floating point type, but got {theta.dtype}")
    spatial = size[2:]
    k = len(spatial)
    if k not in (2, 3):
        raise ValueError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
                         f"Got size {size}.")
    if theta.dim() != 3 or theta.size(1) != k or theta.size(2) != k + 1 or theta.size(0) != size[0]:
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. "
                         f"Got {list(theta.shape)}.")
    # Coordinates per output dim, x varying fastest (the last spatial dim).
    axes = [_base_coords(n, align_corners, theta.dtype) for n in reversed(spatial)]  # x, y(, z)
    grids = [a.reshape([-1 if j == k - 1 - i else 1 for j in range(k)]).expand(spatial) for i, a in enumerate(axes)]
    base = _C.stack(grids + [_C.ones(spatial, dtype=theta.dtype)], -1)  # [*spatial, k + 1]
    n = size[0]
    out = _C.matmul(base.reshape([1, -1, k + 1]).expand([n, -1, k + 1]), theta.transpose(1, 2))
    return out.reshape([n] + spatial + [k])


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Bags of rows of weight reduced by sum, mean or max. input [B, L] (each row
    a bag) or 1-D with offsets (bag i starts at offsets[i]; include_last_offset:
    offsets has B + 1 entries). Entries equal to padding_idx are left out of
    their bag (and of its count); an empty bag gives zeros."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: max_norm, scale_grad_by_freq and sparse are not supported in kiln")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        bags, length = input.size(0), input.size(1)
        idx = input.reshape([-1])
        bag_of = _C.arange(bags).unsqueeze(1).expand([bags, length]).reshape([-1])
        psw = None if per_sample_weights is None else per_sample_weights.reshape([-1])
    elif input.dim() == 1:
        if offsets is None or offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor but got None" if offsets is None else
                             f"offsets has to be a 1D Tensor, got {offsets.dim()}D")
        idx = input
        starts = offsets.narrow(0, 0, offsets.numel() - 1) if include_last_offset else offsets
        bags = starts.numel()
        from .._sorting import searchsorted

        bag_of = searchsorted(starts, _C.arange(idx.numel()), right=True) - 1
        psw = per_sample_weights
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    keep = _C.ones(idx.numel(), dtype=_C.bool) if padding_idx is None else idx != (padding_idx % weight.size(0))
    rows = weight.index_select(0, idx)  # [N, D]
    if psw is not None:
        rows = rows * psw.unsqueeze(1)
    rows = rows * keep.unsqueeze(1).to(rows.dtype)
    d = weight.size(1)
    if mode == "max":
        parts = []
        for b in range(bags):
            sel = _C.nonzero((bag_of == b) & keep).reshape([-1])
            parts.append(_C.amax(rows.index_select(0, sel), 0) if sel.numel() else _C.zeros(d, dtype=weight.dtype))
        return _C.stack(parts, 0) if parts else _C.zeros(0, d, dtype=weight.dtype)
    total = _C.zeros(bags, d, dtype=rows.dtype).index_add(0, bag_of, rows)
    if mode == "sum":
        return total
    counts = _C.bincount(bag_of.reshape([-1])[keep], minlength=bags).to(rows.dtype)
    return total / _C.clamp(counts, min=1.0).unsqueeze(1)


__all__ = ["affine_grid", "embedding_bag"]
