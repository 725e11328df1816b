"""kiln.sample: greedy, seeded reproducibility, filtered frequencies vs NumPy."""
import numpy as np
import pytest

import kiln

LOGITS = np.array([1.0, 2.5, -1.0, 2.0, 0.5, -3.0, 2.4], np.float32)


def filtered(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits.astype(np.float64) / temperature
    order = np.argsort(-z, kind="stable")
    e = np.zeros_like(z)
    k = top_k or len(z)
    e[order[:k]] = np.exp(z[order[:k]] - z[order[0]])
    if top_p < 1:
        c = np.cumsum(e[order])
        keep = np.searchsorted(c, top_p * c[-1]) + 1
        e[order[keep:]] = 0
    return e / e.sum()


def test_greedy_and_batch():
    assert int(kiln.sample(kiln.tensor(LOGITS), temperature=0)) == 1
    out = kiln.sample(kiln.tensor(np.stack([LOGITS, -LOGITS])), temperature=0)
    assert out.shape == (2,) and list(np.asarray(out)) == [1, 5]


@pytest.mark.parametrize("kw", [{}, {"temperature": 0.5}, {"top_k": 3}, {"top_p": 0.8}, {"top_k": 5, "top_p": 0.9}])
def test_frequencies(kw):
    g = kiln.Generator().manual_seed(11)
    n = 20000
    x = kiln.tensor(LOGITS)
    counts = np.bincount([int(kiln.sample(x, generator=g, **kw)) for _ in range(n)], minlength=len(LOGITS)) / n
    want = filtered(LOGITS, **kw)
    assert np.all(counts[want == 0] == 0)
    assert np.all(np.abs(counts - want) <= 4 * np.sqrt(want * (1 - want) / n) + 1e-3)


def test_reproducible_and_penalties(rng):
    x = kiln.tensor((rng.standard_normal((2, 151936)) * 3).astype(np.float32))
    a = [np.asarray(kiln.sample(x, top_p=0.9, generator=g)) for g in [kiln.Generator().manual_seed(5)] * 10]
    b = [np.asarray(kiln.sample(x, top_p=0.9, generator=g)) for g in [kiln.Generator().manual_seed(5)] * 10]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    prev = kiln.tensor(np.array([1, 1]))
    assert int(kiln.sample(kiln.tensor(LOGITS), temperature=0, repetition_penalty=1.3, prev_tokens=prev)) == 6
    assert int(kiln.sample(kiln.tensor(LOGITS), temperature=0, presence_penalty=0.2, prev_tokens=prev)) == 6
    with pytest.raises(ValueError):
        kiln.sample(kiln.tensor(LOGITS), top_p=0.0)
