"""Uncoarsening one level: project the coarse parts onto the fine nodes, fix overweight parts, then refine by
size-constrained label propagation. Each round is one task per block over a parts map per round; part weights
stay exact because every task returns its net change, and a block may add to a part at most its share (1/blocks)
of the room the part had at the round's start, so no round can push a part over its bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphshard.assign.multilevel.fm import fm_round
from graphshard.assign.multilevel.hashing import mix_ids, salt_of
from graphshard.assign.multilevel.jet import jet_pass
from graphshard.assign.multilevel.kernels import block_cut, local_rows, rebalance_candidates, refine_round
from graphshard.assign.multilevel.store import (
    Level,
    ScratchPath,
    gather,
    load_array,
    open_ro,
    prefetch,
    read_block,
    write_range,
)

# Jet's negative-gain allowance (a candidate may lose up to this share of its connection to its own part): its
# paper's figures, larger on coarse levels, whose nodes are clusters.
JET_COARSE = 0.75
JET_FINE = 0.25
# A Jet pass ends after this many rounds in a row without a balanced cut better than its best by more than JET_PHI of
# the block's cut (the paper's end rule; its 12 rounds gave the same cuts at 1.3x the cell's CPU on R-MAT 50k
# coarsened, k=32: BENCHMARKS.md, issue 18, "Jet refinement"). Without JET_PHI, R-MAT 20M's level-0 passes swung
# ~28k nodes back and forth for 7 rounds after the first, for 49 edges in all (BENCHMARKS.md, "cheaper rounds").
JET_PATIENCE = 4
JET_PHI = 0.001


def project_block(b: int, *, fine: Level, parts: ScratchPath) -> None:
    """Parts of fine block b = parts of their coarse nodes in the coarse level's parts map `parts`."""
    lo, _ = fine.span(b)
    f2c = load_array(fine.fine_to_coarse(b))
    write_range(fine.parts(0), lo, gather(parts, f2c))


def _block_state(level: Level, b: int, rnd: int, balance: list[int]):
    lo, hi = level.span(b)
    indptr, indices, ew = read_block(level, b)
    prefetch(level.parts(rnd), level.vwgt)
    own = np.array(open_ro(level.parts(rnd))[lo:hi])
    nbr = gather(level.parts(rnd), indices)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[lo:hi][:, balance])
    return lo, hi, indptr, local_rows(indices, lo, hi), nbr, ew, own, vw


def refine_block(b: int, copies: list[int], *, level: Level, rnd: int, seed: int, nparts: int, balance: list[int],
                 budget: np.ndarray, fm: bool, jet: bool) -> tuple[np.ndarray, int, int, int]:
    """One refinement phase over block b into parts map rnd+1 (with the ranges of the blocks `copies`, which stay
    still in this phase, copied): a label propagation sweep, (with `jet`) a Jet pass (jet.py), then (with `fm`) an
    FM pass; returns (net weight change per part, moves, cut gain as the block sees it: the other blocks' parts are
    those of map rnd, and the block's cut in map rnd: `kernels.block_cut`, whose sum over the blocks is twice the
    level's cut)."""
    lo, _, indptr, loc, nbr, ew, own, vw = _block_state(level, b, rnd, balance)
    salt = salt_of(seed, level.index, 1000 + rnd)
    start = block_cut(indptr, nbr, ew, own)
    delta, moves, gain = refine_round(indptr, loc, nbr, ew, own, vw, budget, salt, nparts)
    if jet:
        coef = JET_FINE if level.index == 0 else JET_COARSE
        moved, won = jet_pass(indptr, loc, nbr, ew, own, vw, budget, salt, nparts, delta, coef, JET_PATIENCE,
                              JET_PHI * start)
        moves, gain = moves + moved, gain + won
    if fm:
        moved, won = fm_round(indptr, loc, nbr, ew, own, vw, budget, salt, nparts, delta)
        moves, gain = moves + moved, gain + won
    write_range(level.parts(rnd + 1), lo, own)
    for c in copies:
        clo, chi = level.span(c)
        write_range(level.parts(rnd + 1), clo, np.array(open_ro(level.parts(rnd))[clo:chi]))
    return delta, int(moves), int(gain), int(start)


def cut_block(b: int, *, level: Level, maps: Sequence[ScratchPath]) -> list[int]:
    """Block b's share of the level's cut under each parts map of `maps`, the block read once (summed over the blocks:
    twice each cut)."""
    lo, hi = level.span(b)
    indptr, indices, ew = read_block(level, b)
    return [int(block_cut(indptr, gather(p, indices), ew, np.array(open_ro(p)[lo:hi]))) for p in maps]


def rebalance_candidates_block(b: int, *, level: Level, rnd: int, seed: int, nparts: int, balance: list[int],
                               excess: np.ndarray, room: np.ndarray, load: np.ndarray) -> dict:
    """Block b's cheapest moves out of overweight parts, enough to cover each part's whole excess: global node ids,
    source and target parts, connection lost, a seeded tie-break key and the weights moved."""
    lo, hi, indptr, loc, nbr, ew, own, vw = _block_state(level, b, rnd, balance)
    loss, target = rebalance_candidates(indptr, loc, nbr, ew, own, vw, excess, room, load, nparts)
    tie = mix_ids(salt_of(seed, level.index, 2000 + rnd), lo, hi)
    rows = np.flatnonzero(target >= 0)
    rows = rows[np.lexsort((tie[rows], loss[rows]))]
    keep = np.zeros(len(rows), dtype=bool)
    for p in np.unique(own[rows]):
        mine = np.flatnonzero(own[rows] == p)
        before = np.cumsum(vw[rows[mine]], axis=0) - vw[rows[mine]]
        keep[mine] = ((before < excess[p]) & (excess[p] > 0)).any(axis=1)
    rows = rows[keep]
    return {"node": rows + lo, "source": own[rows], "target": target[rows], "loss": loss[rows], "tie": tie[rows],
            "weight": vw[rows]}


def choose_moves(found: list[dict], excess: np.ndarray, room: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accept candidate moves cheapest first (ties by the seeded key) while their part still sheds weight in a
    column where they carry some, into their target while it keeps within its room, else into the part with the
    most room left that holds them (candidates that share a best target would otherwise wait a round each: a star's
    leaves, whose one neighbour is the hub); returns ((node, target) rows, net weight change per part)."""
    cand = {k: np.concatenate([f[k] for f in found]) for k in found[0]}
    order = np.lexsort((cand["tie"], cand["loss"]))
    excess, room = excess.copy(), room.copy()
    delta = np.zeros_like(room)
    chosen: list[tuple[int, int]] = []
    for i in order:
        p, q, w = int(cand["source"][i]), int(cand["target"][i]), cand["weight"][i]
        if not ((excess[p] > 0) & (w > 0)).any():
            continue
        if not (w <= room[q]).all():
            fits = (w <= room).all(axis=1)
            fits[p] = False
            q = int(np.argmax(np.where(fits, room.sum(axis=1), -1)))
        if (w <= room[q]).all() and q != p:
            excess[p] -= w
            room[q] -= w
            delta[p] -= w
            delta[q] += w
            chosen.append((int(cand["node"][i]), q))
    return np.array(chosen, dtype=np.int64).reshape(-1, 2), delta


def apply_moves(b: int, moves: np.ndarray, *, level: Level, rnd: int) -> None:
    """Parts map rnd+1 of block b: map rnd with the block's chosen (node, target) moves applied."""
    lo, hi = level.span(b)
    own = np.array(open_ro(level.parts(rnd))[lo:hi])
    own[moves[:, 0] - lo] = moves[:, 1]
    write_range(level.parts(rnd + 1), lo, own)
