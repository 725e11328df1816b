"""torch.einsum over kiln's matmul: each operand's repeated labels become a
diagonal, labels only one operand has (and the output lacks) are summed at once,
and the operands are contracted pairwise, left to right (torch's default order
without opt_einsum), each pair as one batched matrix product:
[batch, free_a, contracted] @ [batch, contracted, free_b]."""

import math
import string

from . import _C

_LETTERS = set(string.ascii_letters)


def _parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} subscripts in the equation for {len(operands)} operands")
    # The ellipsis becomes labels that no user subscript uses.
    spare = [c for c in string.ascii_letters if c not in eq]
    ell_dims = 0
    for term, op in zip(terms, operands):
        if "..." in term:
            ell_dims = max(ell_dims, op.dim() - (len(term) - 3))
    ell = "".join(spare[:ell_dims])
    labels = []
    for term, op in zip(terms, operands):
        if "..." in term:
            n = op.dim() - (len(term) - 3)
            if n < 0:
                raise ValueError(f"einsum(): the subscript {term} has more labels than the operand has dims")
            term = term.replace("...", ell[ell_dims - n:])
        for c in term:
            if c not in _LETTERS:
                raise ValueError(f"einsum(): invalid subscript given at index of '{c}' in the equation string, "
                                 "subscripts must be in [a-zA-Z]")
        if len(term) != op.dim():
            raise ValueError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match the "
                             f"number of dimensions ({op.dim()}) for operand {len(labels)}")
        labels.append(term)
    if arrow:
        out = rhs.replace("...", ell)
        if len(set(out)) != len(out):
            raise ValueError("einsum(): output subscript appears more than once in the output")
        for c in out:
            if not any(c in t for t in labels):
                raise ValueError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                 "operand")
    else:
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return labels, out


def _diagonals(x, labels):
    """x with each repeated label reduced to its diagonal."""
    while len(set(labels)) != len(labels):
        for i, c in enumerate(labels):
            j = labels.find(c, i + 1)
            if j >= 0:
                x = _C.diagonal(x, 0, i, j)  # the diagonal goes last
                labels = labels[:i] + labels[i + 1:j] + labels[j + 1:] + c
                break
    return x, labels


def _contract(a, la, b, lb, keep):
    """a (labels la) times b (labels lb), summing the shared labels not in keep."""
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    fa = [c for c in la if c not in shared]
    fb = [c for c in lb if c not in shared]
    size = {}
    for x, lx in ((a, la), (b, lb)):
        for i, c in enumerate(lx):
            n = x.size(i)
            if c in size and size[c] != n and n != 1 and size[c] != 1:
                raise ValueError(f"einsum(): operands do not broadcast with remapped shapes: subscript {c} has "
                                 f"sizes {size[c]} and {n}")
            size[c] = max(size.get(c, 1), n)

    def arrange(x, lx, order):
        x = x.permute([lx.index(c) for c in order])
        return x.expand([size[c] for c in order])

    A = arrange(a, la, batch + fa + summed)
    B = arrange(b, lb, batch + summed + fb)
    nb, nfa, nfb, ns = (math.prod(size[c] for c in g) for g in (batch, fa, fb, summed))
    r = _C.matmul(A.reshape([nb, nfa, ns]), B.reshape([nb, ns, nfb]))
    return r.reshape([size[c] for c in batch + fa + fb]), "".join(batch + fa + fb)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    labels, out = _parse(equation, operands)
    xs = []
    for k, (x, lx) in enumerate(zip(operands, labels)):
        x, lx = _diagonals(x, lx)
        # Labels that neither another operand nor the output has: summed now.
        others = "".join(l for j, l in enumerate(labels) if j != k) + out
        lone = [i for i, c in enumerate(lx) if c not in others]
        if lone:
            x = _C.sum(x, lone)
            lx = "".join(c for i, c in enumerate(lx) if i not in lone)
        xs.append((x, lx))
    x, lx = xs[0]
    for k in range(1, len(xs)):
        rest = "".join(l for _, l in xs[k + 1:]) + out
        x, lx = _contract(x, lx, xs[k][0], xs[k][1], rest)
    # Whatever the output does not name is summed; then the output's order.
    extra = [i for i, c in enumerate(lx) if c not in out]
    if extra:
        x = _C.sum(x, extra)
        lx = "".join(c for i, c in enumerate(lx) if i not in extra)
    return x.permute([lx.index(c) for c in out]) if lx else x
