"""Tiled VAE encode / decode: the input is cut into overlapping square tiles that
are run one at a time (so memory stays bounded by the tile size), and each tile's
output is cross-faded linearly with its upper and left neighbours over the
overlap before the tiles are cropped and joined. The tile grid, blend widths and
crop are those of diffusers' AutoencoderKL tiled_encode / tiled_decode, so the
results agree with it."""

from .. import _C


def _ramps(extent, like):
    """(1 - y/extent, y/extent) for y < extent, each rounded once to like's dtype."""
    down = _C.tensor([1.0 - y / extent for y in range(extent)], dtype=like.dtype, device=like.device)
    up = _C.tensor([y / extent for y in range(extent)], dtype=like.dtype, device=like.device)
    return down, up


def blend_v(a, b, extent):
    """b [N, C, Hb, W] with its first rows cross-faded from a's last rows (a is the tile above)."""
    e = min(a.shape[2], b.shape[2], extent)
    if e <= 0:
        return b
    down, up = _ramps(e, b)
    top = a[:, :, a.shape[2] - e:, :] * down.reshape(1, 1, e, 1) + b[:, :, :e, :] * up.reshape(1, 1, e, 1)
    return _C.cat([top, b[:, :, e:, :]], 2)


def blend_h(a, b, extent):
    """b [N, C, H, Wb] with its first columns cross-faded from a's last columns (a is the tile to the left)."""
    e = min(a.shape[3], b.shape[3], extent)
    if e <= 0:
        return b
    down, up = _ramps(e, b)
    left = a[:, :, :, a.shape[3] - e:] * down + b[:, :, :, :e] * up
    return _C.cat([left, b[:, :, :, e:]], 3)


def tiled_apply(x, fn, in_tile, out_tile, overlap_factor, progress=None, what="tile"):
    """Runs fn on in_tile x in_tile tiles of x [N, C, H, W] whose corners step by
    int(in_tile * (1 - overlap_factor)), blends the outputs over
    int(out_tile * overlap_factor) rows / columns and keeps the first
    out_tile - blend of each, joined. progress(done, total) is called after each tile."""
    step = int(in_tile * (1 - overlap_factor))
    if step <= 0:
        raise ValueError(f"[{what}] a tile of {in_tile} with overlap {overlap_factor} does not advance; "
                         "use a larger tile or a smaller overlap")
    blend = int(out_tile * overlap_factor)
    keep = out_tile - blend
    h, w = x.shape[2], x.shape[3]
    ys, xs = range(0, h, step), range(0, w, step)
    total, done = len(ys) * len(xs), 0
    rows = []
    for i in ys:
        row = []
        for j in xs:
            row.append(fn(x[:, :, i:i + in_tile, j:j + in_tile]))
            done += 1
            if progress is not None:
                progress(done, total)
        rows.append(row)
    # Blend in place of the tile lists: a tile's lower and right neighbours blend
    # with its already-blended form, as diffusers' in-place blending does.
    out_rows = []
    for i, row in enumerate(rows):
        kept = []
        for j in range(len(row)):
            tile = row[j]
            if i > 0:
                tile = blend_v(rows[i - 1][j], tile, blend)
            if j > 0:
                tile = blend_h(row[j - 1], tile, blend)
            row[j] = tile
            kept.append(tile[:, :, :keep, :keep])
        out_rows.append(_C.cat(kept, 3))
    return _C.cat(out_rows, 2)
