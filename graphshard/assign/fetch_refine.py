"""`objtype: fetch` post-pass: moves nodes between partitions to lower the expected remote share of mini-batch input
nodes itself, as DGL's `NeighborSampler` draws them, instead of a cut that stands in for it.

Per partition p, one mini-batch holds each of p's seeds with probability q_p = batch size / |seeds of p|. Layer by
layer (last fanout first) a frontier node v takes each in-edge u -> v with probability min(1, fanout / indeg(v)), so
the expected visits of every node by one batch of p, V_p (n x k, every partition at once), follow from one sparse
product per layer; a node is an input of the batch with probability P_p = 1 - exp(-V_p). The objective is the
expected share R / I of remote inputs: R = sum over p, u not in p of P_p(u), I = sum of all P_p(u). Moving u from a
to b changes R - r I (r = R / I now) by P_a(u) - P_b(u) (u as an input) plus, for a seed, q_b g'_b(u) - q_a g'_a(u)
(g is the gradient of R - r I with respect to the seed visits, one backward pass through the same layers; g' is g less
its mean over the partition's seeds, since a batch keeps its size and the other seeds take u's place) less u's
presence in its own batches. A round first drains any partition above a cap, then moves the nodes with the largest
decrease first while the target's every balance constraint stays within 1 + ufactor, then swaps blocked moves in
pairs; numpy and scipy only, no random draw and stable sorts, so the result is deterministic.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from graphshard.assign.fetch import input_edges, seed_entry, seed_mask, take_prob
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import ChunkedGraph

TOLERANCE = 1e-9  # moves must lower the objective by more than this (per batch, in expected nodes)
MIN_ROUND_GAIN = 1e-4  # rounds stop once one lowers the expected remote share by less than this


@dataclass(frozen=True)
class Sampler:
    """The sampling layers as sparse operators: layers[i] maps a frontier's presence to the sources it samples
    (rows: sources u, columns: frontier nodes v, value min(1, fanout_i / indeg(v)) per input edge u -> v)."""

    layers: tuple[sp.csr_matrix, ...]
    seeds: np.ndarray  # bool per node: seeds mini-batches

    @classmethod
    def build(cls, src: np.ndarray, dst: np.ndarray, n: int, seeds: np.ndarray, fanouts: list[int]) -> Sampler:
        """From the input edges u -> v, the seed mask and DGL's fanouts (input layer first)."""
        in_deg = np.bincount(dst, minlength=n)
        shape = (n, n)
        layers = tuple(sp.csr_matrix((take_prob(in_deg, f)[dst], (src, dst)), shape=shape)
                       for f in reversed(fanouts))
        return cls(layers, np.asarray(seeds, dtype=bool))


def seed_visits(sampler: Sampler, parts: np.ndarray, nparts: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(V_0, q): per node and partition the probability that one batch of that partition holds the node as a seed,
    and q_p = min(1, batch size / seeds of p)."""
    n = len(parts)
    counts = np.bincount(parts[sampler.seeds], minlength=nparts)
    q = np.minimum(1.0, batch_size / np.maximum(counts, 1))
    v0 = np.zeros((n, nparts))
    rows = np.flatnonzero(sampler.seeds)
    v0[rows, parts[rows]] = q[parts[rows]]
    return v0, q


def forward(sampler: Sampler, v0: np.ndarray) -> list[np.ndarray]:
    """Expected visits per node and partition after each layer: [V_0, V_1, ..., V_L]."""
    visits = [v0]
    for i, layer in enumerate(sampler.layers):
        present = v0 if i == 0 else -np.expm1(-visits[-1])
        visits.append(visits[-1] + layer @ present)
    return visits


def backward(sampler: Sampler, visits: list[np.ndarray], cost: np.ndarray) -> np.ndarray:
    """Gradient of sum(cost * P) with respect to V_0, through the layers of `forward`."""
    grad = cost * np.exp(-visits[-1])
    for i in range(len(sampler.layers) - 1, -1, -1):
        back = sampler.layers[i].T @ grad
        grad = grad + (back if i == 0 else back * np.exp(-visits[i]))
    return grad


def share(present: np.ndarray, parts: np.ndarray) -> float:
    """Expected remote / input nodes over one batch per partition, from the presence probabilities P (n x k)."""
    total = float(present.sum())
    local = float(present[np.arange(len(parts)), parts].sum())
    return (total - local) / total if total else 0.0


def move_gains(sampler: Sampler, parts: np.ndarray, nparts: int, batch_size: int) -> tuple[np.ndarray, float]:
    """(gain, r): the change of R - r I when each node moves to each partition (n x k; 0 in its own column)."""
    v0, q = seed_visits(sampler, parts, nparts, batch_size)
    visits = forward(sampler, v0)
    present = -np.expm1(-visits[-1])
    r = share(present, parts)
    rows = np.arange(len(parts))
    cost = np.full(present.shape, 1.0 - r)
    cost[rows, parts] = -r
    grad = backward(sampler, visits, cost)
    seeded = parts[sampler.seeds]
    mean = np.stack([np.bincount(seeded, weights=grad[sampler.seeds, c], minlength=nparts)[c] for c in
                     range(nparts)]) / np.maximum(np.bincount(seeded, minlength=nparts), 1)
    seed_term = (grad - mean) * q * sampler.seeds[:, None]  # a batch keeps its size: u's place goes to the others
    own = q * np.exp(-visits[-1]) * sampler.seeds[:, None]  # a seed is an input of its own batches: local
    gain = (present[rows, parts] - seed_term[rows, parts] - own[rows, parts])[:, None] - present + seed_term - own
    gain[rows, parts] = 0.0
    return gain, r


def part_loads(parts: np.ndarray, weights: np.ndarray, nparts: int) -> np.ndarray:
    """Weight per partition and constraint (k x ncon)."""
    return np.stack([np.bincount(parts, weights=weights[:, c], minlength=nparts) for c in range(weights.shape[1])], 1)


def fits_in(load: np.ndarray, change: np.ndarray, caps: np.ndarray) -> bool:
    """True when adding `change` leaves no constraint of a partition above both its cap and its load before."""
    return bool(np.all(load + change <= np.maximum(caps, load)))


def drain(a: int, gain: np.ndarray, parts: np.ndarray, weights: np.ndarray, caps: np.ndarray,
          load: np.ndarray) -> int:
    """One pass moving nodes that carry an over-cap constraint of partition a to their cheapest partition with room
    (as the loads were at the start of the pass); updates `parts` and `load`, returns the number of moves."""
    here = np.flatnonzero(parts == a)
    here = here[(weights[here][:, load[a] > caps] > 0).any(axis=1)]
    fits = (load[None, :, :] + weights[here][:, None, :] <= np.maximum(caps, load)[None]).all(axis=2)
    fits[:, a] = False
    cost = np.where(fits, gain[here], np.inf)
    target = cost.argmin(axis=1)
    moved = 0
    for i in np.lexsort((here, cost[np.arange(len(here)), target])).tolist():
        u, b = here[i], target[i]
        if not (load[a] > caps).any() or not np.isfinite(cost[i, b]):
            break
        if (weights[u][load[a] > caps] > 0).any() and fits_in(load[b], weights[u], caps):
            load[a] -= weights[u]
            load[b] += weights[u]
            parts[u] = b
            moved += 1
    return moved


def rebalance(gain: np.ndarray, parts: np.ndarray, weights: np.ndarray, caps: np.ndarray) -> int:
    """Drains every partition above a cap, pass after pass while a pass moves something (the input partitioner may
    leave some above 1 + ufactor); returns the number of moves."""
    load = part_loads(parts, weights, gain.shape[1])
    moved = 0
    for a in np.flatnonzero((load > caps).any(axis=1)).tolist():
        while (load[a] > caps).any() and (step := drain(a, gain, parts, weights, caps, load)):
            moved += step
    return moved


def apply_moves(gain: np.ndarray, parts: np.ndarray, weights: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Moves nodes to their best partition, largest decrease first, while the target's weight per constraint stays
    within `caps`; changes `parts` in place and returns the nodes that wanted to move but found their target full."""
    best = gain.argmin(axis=1)
    drop = gain[np.arange(len(parts)), best]
    movers = np.flatnonzero(drop < -TOLERANCE)
    movers = movers[np.lexsort((movers, drop[movers]))]
    load = part_loads(parts, weights, gain.shape[1])
    blocked = []
    for u in movers.tolist():
        b, w = best[u], weights[u]
        if fits_in(load[b], w, caps):
            load[parts[u]] -= w
            load[b] += w
            parts[u] = b
        else:
            blocked.append(u)
    return np.array(blocked, dtype=np.int64)


def apply_swaps(gain: np.ndarray, parts: np.ndarray, weights: np.ndarray, caps: np.ndarray,
                blocked: np.ndarray) -> int:
    """Pairs a blocked move a -> b with the cheapest move b -> a of a node of the same balance class (the same
    constraint columns non-zero: a pair then keeps every class count) that has not moved yet, while the pair lowers
    the objective and every constraint stays within `caps`; returns the number of swaps."""
    best = gain[blocked].argmin(axis=1)
    load = part_loads(parts, weights, gain.shape[1])
    free = np.ones(len(parts), dtype=bool)
    free[blocked] = False
    kind = np.unique(weights > 0, axis=0, return_inverse=True)[1].reshape(-1)
    swaps = 0
    for a, b, c in sorted({(int(parts[u]), int(t), int(kind[u])) for u, t in zip(blocked, best)}):
        here = blocked[(parts[blocked] == a) & (best == b) & (kind[blocked] == c)]
        here = here[np.lexsort((here, gain[here, b]))]
        there = np.flatnonzero((parts == b) & free & (kind == c))
        there = there[np.lexsort((there, gain[there, a]))][:len(here)]
        for u, v in zip(here.tolist(), there.tolist()):
            if gain[u, b] + gain[v, a] >= -TOLERANCE:
                break
            change = weights[u] - weights[v]
            if fits_in(load[b], change, caps) and fits_in(load[a], -change, caps):
                load[b] += change
                load[a] -= change
                parts[u], parts[v], free[v] = b, a, False
                swaps += 1
    return swaps


def refine(sampler: Sampler, parts: np.ndarray, nparts: int, weights: np.ndarray | None, ufactor: int,
           batch_size: int, rounds: int, min_gain: float = MIN_ROUND_GAIN) -> tuple[np.ndarray, list[float]]:
    """(new parts, expected remote share after rebalancing and after each round): first moves nodes out of any
    partition above a cap, then up to `rounds` rounds of moves and swaps, stopping when a round lowers the expected
    share by less than `min_gain` (the best partition seen is kept)."""
    parts = np.array(parts, dtype=np.int64)
    weights = np.ones((len(parts), 1)) if weights is None else np.asarray(weights, dtype=np.float64).reshape(
        len(parts), -1)
    caps = (1.0 + ufactor / 1000.0) * weights.sum(axis=0) / nparts
    gain, r = move_gains(sampler, parts, nparts, batch_size)
    if rebalance(gain, parts, weights, caps):
        gain, r = move_gains(sampler, parts, nparts, batch_size)
    trace, best = [r], (r, parts.copy())
    for _ in range(rounds):
        blocked = apply_moves(gain, parts, weights, caps)
        if len(blocked):
            apply_swaps(gain, parts, weights, caps, blocked)
        if np.array_equal(parts, best[1]):
            break
        gain, r = move_gains(sampler, parts, nparts, batch_size)
        trace.append(r)
        if r >= best[0]:
            break
        gained, best = best[0] - r, (r, parts.copy())
        if gained < min_gain:
            break
    return best[1], trace


def with_seed_column(weights: np.ndarray | None, seeds: np.ndarray) -> np.ndarray:
    """The post-pass's balance columns: the method's (node counts when None) and, when the seeds are a strict subset
    of the nodes, the seeds themselves. DistDGL splits the training nodes evenly over the trainers
    (`node_split(force_even=True)`), so a partition holding more than its share of seeds hands them to other
    partitions' trainers, whose batches the share this pass lowers does not model."""
    n = len(seeds)
    cols = np.ones((n, 1)) if weights is None else np.asarray(weights, dtype=np.float64).reshape(n, -1)
    return cols if seeds.all() or not seeds.any() else np.hstack([cols, seeds[:, None].astype(np.float64)])


def refine_assignment(graph: ChunkedGraph, options: AssignOptions, parts: np.ndarray, nparts: int,
                      weights: np.ndarray | None) -> tuple[np.ndarray, dict]:
    """`options.fetch_refine_rounds` rounds over a whole-graph assignment (`weights`: its balance columns, None for
    node counts; the seeds are balanced too: `with_seed_column`); returns the new parts and what the report records
    (expected remote share per round, the seeds' imbalance, seconds)."""
    t0 = time.perf_counter()
    src, dst = input_edges(graph)
    seeds = seed_mask(graph, seed_entry(options), 0, graph.total_nodes) > 0
    sampler = Sampler.build(src, dst, graph.total_nodes, seeds, options.sample_fanouts)
    del src, dst
    parts, trace = refine(sampler, parts, nparts, with_seed_column(weights, seeds), options.ufactor,
                          options.sample_batch_size, options.fetch_refine_rounds)
    per_part = np.bincount(parts[seeds], minlength=nparts)
    return parts, {"rounds": len(trace) - 1, "expected_remote_share": [round(r, 4) for r in trace],
                   "seed_imbalance": round(float(per_part.max() * nparts / max(per_part.sum(), 1)), 4),
                   "seconds": round(time.perf_counter() - t0, 3)}
