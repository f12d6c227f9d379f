"""The boundary FM pass of the multilevel refinement: it never raises the cut, keeps to the block's budget, rolls
back what did not pay, and escapes a local minimum where label propagation stays."""

from __future__ import annotations

import numpy as np

from graphshard.assign.multilevel.fm import fm_round
from graphshard.assign.multilevel.kernels import refine_round


def csr(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.unique(np.concatenate([src * n + dst, dst * n + src]))
    keys = keys[keys // n != keys % n]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n, minlength=n), out=indptr[1:])
    return indptr, (keys % n).astype(np.int64)


def cut(indptr, indices, parts) -> int:
    src = np.repeat(np.arange(len(parts)), np.diff(indptr))
    return int((parts[src] != parts[indices]).sum() // 2)


def fm(indptr, indices, parts, nparts, budget, seed=1):
    n = len(parts)
    vw = np.ones((n, 1), dtype=np.int64)
    delta = np.zeros((nparts, 1), dtype=np.int64)
    kept, gain = fm_round(indptr, indices.copy(), indices.copy(), np.empty(0, np.int64), parts, vw,
                          np.full((nparts, 1), budget, np.int64), np.uint64(seed), nparts, delta)
    return kept, gain, delta


def test_fm_lowers_a_random_cut_within_budget_and_reports_its_gain():
    rng = np.random.default_rng(0)
    n, k = 2000, 4
    src = rng.integers(0, n, 12000)
    inside = rng.integers(0, n // k, 12000) * k + src % k  # a node of the same community (id mod k)
    dst = np.where(rng.random(12000) < 0.85, inside, rng.integers(0, n, 12000))
    indptr, indices = csr(n, src, dst)
    parts = rng.integers(0, k, n)
    before = cut(indptr, indices, parts)
    start = parts.copy()
    kept, gain, delta = fm(indptr, indices, parts, k, budget=25)
    assert kept > 0 and gain > 0
    assert cut(indptr, indices, parts) == before - gain
    assert np.array_equal(delta[:, 0], np.bincount(parts, minlength=k) - np.bincount(start, minlength=k))
    assert delta.max() <= 25


def test_fm_escapes_where_label_propagation_is_stuck():
    """A triangle (12, 13, 14) in part 1, each of its nodes tied once to clique A (part 0) and 14 once more to part
    1's node 15: moving one triangle node alone gains nothing (1 edge to part 0 against 2 in part 1), so label
    propagation keeps it; moving the whole triangle to part 0 cuts 1 edge instead of 3."""
    a, b = np.arange(6), np.arange(6, 12)
    pairs = [(x, y) for g in (a, b) for x in g for y in g if x < y]
    pairs += [(12, 13), (13, 14), (12, 14), (12, 0), (13, 1), (14, 2), (15, 6), (15, 14)]
    src, dst = map(np.array, zip(*pairs))
    indptr, indices = csr(16, src, dst)
    parts = np.array([0] * 6 + [1] * 6 + [1, 1, 1, 1])
    lp = parts.copy()
    refine_round(indptr, indices.copy(), indices.copy(), np.empty(0, np.int64), lp, np.ones((16, 1), np.int64),
                 np.full((2, 1), 10, np.int64), np.uint64(1), 2)
    before = cut(indptr, indices, parts)
    assert cut(indptr, indices, lp) == before  # label propagation finds no single improving move
    kept, gain, _ = fm(indptr, indices, parts, 2, budget=10)
    assert gain > 0 and cut(indptr, indices, parts) == before - gain and set(parts[12:15]) == {0}


def test_fm_keeps_nothing_that_does_not_pay():
    indptr, indices = csr(4, np.array([0, 1, 2]), np.array([1, 2, 3]))  # a path, cut once in the middle
    parts = np.array([0, 0, 1, 1])
    kept, gain, delta = fm(indptr, indices, parts, 2, budget=1)
    assert (kept, gain) == (0, 0) and parts.tolist() == [0, 0, 1, 1] and not delta.any()
