"""The Jet pass of the multilevel refinement: it never raises the cut, ends within the block's budget, and leaves
the local optimum that full parts hold, where label propagation and FM cannot move a node."""

from __future__ import annotations

import numpy as np
from test_multilevel_fm import csr, cut, fm

from graphshard.assign.multilevel.jet import jet_pass


def jet(indptr, indices, parts, nparts, budget, seed=1, coef=0.75):
    n = len(parts)
    delta = np.zeros((nparts, 1), dtype=np.int64)
    changed, gain = jet_pass(indptr, indices.copy(), indices.copy(), np.empty(0, np.int64), parts,
                             np.ones((n, 1), dtype=np.int64), np.full((nparts, 1), budget, np.int64),
                             np.uint64(seed), nparts, delta, coef, 12, 0)
    return changed, gain, delta


def test_jet_swaps_communities_between_full_parts():
    """Two 6-cliques, each split 3 / 3 over two parts that are full (no room): every single move overfills a part,
    so FM keeps the 18 cut edges; Jet moves freely, rebalances, and ends with no edge cut."""
    a, b = np.arange(6), np.arange(6, 12)
    pairs = [(x, y) for g in (a, b) for x in g for y in g if x < y]
    src, dst = map(np.array, zip(*pairs))
    indptr, indices = csr(12, src, dst)
    parts = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1])
    stuck = parts.copy()
    assert fm(indptr, indices, stuck, 2, budget=0)[:2] == (0, 0)
    before = cut(indptr, indices, parts)
    changed, gain, delta = jet(indptr, indices, parts, 2, budget=0)
    assert before == 18 and gain == 18 and cut(indptr, indices, parts) == 0
    assert not delta.any() and len(set(parts[:6])) == 1 and len(set(parts[6:])) == 1


def test_jet_lowers_a_random_cut_within_budget_and_reports_its_gain():
    rng = np.random.default_rng(0)
    n, k = 2000, 8
    src = rng.integers(0, n, 12000)
    inside = rng.integers(0, n // k, 12000) * k + src % k
    dst = np.where(rng.random(12000) < 0.85, inside, rng.integers(0, n, 12000))
    indptr, indices = csr(n, src, dst)
    parts = rng.permutation(np.arange(n) % k)
    before, start = cut(indptr, indices, parts), parts.copy()
    changed, gain, delta = jet(indptr, indices, parts, k, budget=5)
    assert changed > 0 and gain > 0 and cut(indptr, indices, parts) == before - gain
    assert np.array_equal(delta[:, 0], np.bincount(parts, minlength=k) - np.bincount(start, minlength=k))
    assert delta.max() <= 5
    again = start.copy()
    assert jet(indptr, indices, again, k, budget=5)[1] == gain and np.array_equal(again, parts)  # seeded: same bytes
