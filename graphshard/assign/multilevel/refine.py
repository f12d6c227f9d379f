"""Uncoarsening one level: project the coarse parts onto the fine nodes, fix overweight parts, then refine by
size-constrained label propagation. Each round is one task per block over a parts map per round; part weights
stay exact because every task returns its net change, and a block may add to a part at most its share (1/blocks)
of the room the part had at the round's start, so no round can push a part over its bound.
"""

from __future__ import annotations

import numpy as np

from graphshard.assign.multilevel.hashing import half, salt_of
from graphshard.assign.multilevel.kernels import rebalance_apply, rebalance_candidates, refine_round
from graphshard.assign.multilevel.store import Level, local_rows, open_ro, read_block, write_range


def project_block(b: int, *, fine: Level, coarse: Level, rnd: int) -> None:
    """Parts of fine block b = parts of their coarse nodes (the coarse level's last round)."""
    lo, _ = fine.span(b)
    f2c = np.load(fine.fine_to_coarse(b))
    write_range(fine.parts(0), lo, open_ro(coarse.parts(rnd))[f2c])


def _block_state(level: Level, b: int, rnd: int, balance: list[int]):
    lo, hi = level.span(b)
    indptr, indices, ew = read_block(level, b)
    parts = open_ro(level.parts(rnd))
    own = np.asarray(parts[lo:hi], dtype=np.int64)
    nbr = np.asarray(parts[indices], dtype=np.int64)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[lo:hi][:, balance])
    return lo, hi, indptr, local_rows(indices, lo, hi), nbr, ew, own, vw


def refine_block(b: int, *, level: Level, rnd: int, seed: int, nparts: int, balance: list[int],
                 budget: np.ndarray) -> tuple[np.ndarray, int]:
    """One refinement round over block b into parts map rnd+1; returns (net weight change per part, moves)."""
    lo, hi, indptr, loc, nbr, ew, own, vw = _block_state(level, b, rnd, balance)
    salt = salt_of(seed, level.index, 1000 + rnd)
    delta, moves = refine_round(indptr, loc, nbr, ew, own, vw, budget, half(salt, lo, hi), salt, nparts)
    write_range(level.parts(rnd + 1), lo, own.astype(np.int32))
    return delta, int(moves)


def rebalance_block(b: int, *, level: Level, rnd: int, seed: int, nparts: int, balance: list[int],
                    quota: np.ndarray, budget: np.ndarray, load: np.ndarray) -> tuple[np.ndarray, int]:
    """Move block b's cheapest nodes out of overweight parts into parts map rnd+1; returns (net change, moves)."""
    lo, hi, indptr, loc, nbr, ew, own, vw = _block_state(level, b, rnd, balance)
    loss, target = rebalance_candidates(indptr, loc, nbr, ew, own, vw, quota, budget, load, nparts)
    salt = salt_of(seed, level.index, 2000 + rnd)
    tie = (np.arange(lo, hi, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ salt
    order = np.lexsort((tie, loss))
    delta, moves = rebalance_apply(order, target, own, vw, quota, budget)
    write_range(level.parts(rnd + 1), lo, own.astype(np.int32))
    return delta, int(moves)
