"""Tiled VAE encode / decode: the input is cut into overlapping tiles that are
run one at a time (so memory stays bounded by the tile size), and each tile's
output is cross-faded linearly with its upper and left neighbours over the
overlap before the tiles are cropped and joined. The tile grid, blend widths and
crop are those of diffusers' tiled_encode / tiled_decode (AutoencoderKL's square
tiles with an overlap fraction, AutoencoderKLWan's tiles and strides per axis),
so the results agree with it. Tiles are windows over the last two dimensions, so
images [N, C, H, W] and videos [N, C, T, H, W] take the same path."""

from .. import _C


def _ramps(extent, like):
    """(1 - y/extent, y/extent) for y < extent, each rounded once to like's dtype."""
    down = _C.tensor([1.0 - y / extent for y in range(extent)], dtype=like.dtype, device=like.device)
    up = _C.tensor([y / extent for y in range(extent)], dtype=like.dtype, device=like.device)
    return down, up


def _blend(a, b, extent, dim):
    """b with its first `extent` entries along dim cross-faded from a's last ones."""
    e = min(a.shape[dim], b.shape[dim], extent)
    if e <= 0:
        return b
    down, up = _ramps(e, b)
    if dim == b.dim() - 2:  # the ramps run down the rows
        down, up = down.reshape(e, 1), up.reshape(e, 1)
    head = a.narrow(dim, a.shape[dim] - e, e) * down + b.narrow(dim, 0, e) * up
    return _C.cat([head, b.narrow(dim, e, b.shape[dim] - e)], dim)


def blend_v(a, b, extent):
    """b [..., Hb, W] with its first rows cross-faded from a's last rows (a is the tile above)."""
    return _blend(a, b, extent, b.dim() - 2)


def blend_h(a, b, extent):
    """b [..., H, Wb] with its first columns cross-faded from a's last columns (a is the tile to the left)."""
    return _blend(a, b, extent, b.dim() - 1)


def _window(x, i, j, tile):
    """x[..., i:i + tile[0], j:j + tile[1]], clipped at the edges as a slice is."""
    h, w = x.dim() - 2, x.dim() - 1
    return x.narrow(h, i, min(tile[0], x.shape[h] - i)).narrow(w, j, min(tile[1], x.shape[w] - j))


def tiled_grid(x, fn, tile, step, blend, keep, crop=None, progress=None):
    """Runs fn on the tile[0] x tile[1] windows of x [..., H, W] whose corners step
    by step (rows, columns), blends each output with its upper and left neighbours
    over blend (rows, columns), keeps its first keep (rows, columns), joins them and
    crops the result to crop (rows, columns) when given. progress(done, total) is
    called after each tile."""
    h, w = x.shape[x.dim() - 2], x.shape[x.dim() - 1]
    ys, xs = range(0, h, step[0]), range(0, w, step[1])
    total, done = len(ys) * len(xs), 0
    rows = []
    for i in ys:
        row = []
        for j in xs:
            row.append(fn(_window(x, i, j, tile)))
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
            tile_out = row[j]
            if i > 0:
                tile_out = blend_v(rows[i - 1][j], tile_out, blend[0])
            if j > 0:
                tile_out = blend_h(row[j - 1], tile_out, blend[1])
            row[j] = tile_out
            kept.append(_window(tile_out, 0, 0, keep))
        out_rows.append(_C.cat(kept, x.dim() - 1))
    out = _C.cat(out_rows, x.dim() - 2)
    return out if crop is None else _window(out, 0, 0, crop)


def tiled_apply(x, fn, in_tile, out_tile, overlap_factor, progress=None, what="tile"):
    """AutoencoderKL's square tiles: runs fn on in_tile x in_tile tiles of x [N, C, H, W]
    whose corners step by int(in_tile * (1 - overlap_factor)), blends the outputs over
    int(out_tile * overlap_factor) rows / columns and keeps the first
    out_tile - blend of each, joined. progress(done, total) is called after each tile."""
    step = int(in_tile * (1 - overlap_factor))
    if step <= 0:
        raise ValueError(f"[{what}] a tile of {in_tile} with overlap {overlap_factor} does not advance; "
                         "use a larger tile or a smaller overlap")
    blend = int(out_tile * overlap_factor)
    keep = out_tile - blend
    return tiled_grid(x, fn, (in_tile, in_tile), (step, step), (blend, blend), (keep, keep), progress=progress)
