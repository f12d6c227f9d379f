"""New (shuffled) IDs from per-block counts: partition-major, then type, then original order (reference §3).

Every node type is cut into blocks; a task counts the nodes of each partition in a block. From the small
(type, block, partition) count matrix the client derives the first new ID of every (partition, type) group and of
every (type, block, partition) slice, so each block's nodes get their new IDs independently: no process ever sorts
the whole graph. Edges use the same arithmetic with (edge type, edge chunk) in place of (node type, block), which
makes an edge's new ID its position in the concatenation of its owner's buckets in (type, chunk) order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def block_offsets(total: int, block_rows: int) -> np.ndarray:
    """Offsets [0, b, 2b, ..., total] of fixed-size blocks (one empty block for an empty type)."""
    if not total:
        return np.zeros(2, np.int64)
    return np.append(np.arange(0, total, block_rows, dtype=np.int64), np.int64(total))


def count_parts(parts: np.ndarray, num_parts: int) -> np.ndarray:
    """How many entries of `parts` fall in each partition."""
    return np.bincount(parts, minlength=num_parts).astype(np.int64)


@dataclass(frozen=True)
class Grouping:
    """Entries grouped by a small integer key (a partition id): a stable order and the group sizes."""

    order: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, num_groups: int) -> "Grouping":
        """Stable grouping; a radix sort when the keys fit 16 bits."""
        small = keys.astype(np.int16, copy=False) if num_groups <= np.iinfo(np.int16).max else keys
        return cls(np.argsort(small, kind="stable"), count_parts(keys, num_groups))

    def ranks(self) -> np.ndarray:
        """Rank of every entry among the entries of its group, in original positions."""
        out = np.empty(len(self.order), dtype=np.int64)
        out[self.order] = np.arange(len(self.order), dtype=np.int64) - np.repeat(self.firsts, self.counts)
        return out

    @property
    def firsts(self) -> np.ndarray:
        """Position of each group's first entry in grouped order."""
        return np.cumsum(self.counts) - self.counts

    def keys_sorted(self) -> np.ndarray:
        """The group key of every entry in grouped order."""
        return np.repeat(np.arange(len(self.counts), dtype=np.int32), self.counts)

    def cut(self, grouped: np.ndarray) -> list[np.ndarray]:
        """Split an array already in grouped order (`arr[order]`) into its groups."""
        return np.split(grouped, np.cumsum(self.counts)[:-1])


def ids_in_block(parts: np.ndarray, bases: np.ndarray, grouping: Grouping | None = None) -> np.ndarray:
    """New IDs of a block's entries: `bases[p]` plus the entry's rank among the block's entries of partition p."""
    return bases[parts] + (grouping or Grouping.of(parts, len(bases))).ranks()


@dataclass(frozen=True)
class IdSpace:
    """The new-ID layout of one kind (nodes or edges) from `counts[t]` = (blocks of type t, partitions) matrices."""

    counts: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, counts: list[np.ndarray]) -> "IdSpace":
        return cls(tuple(np.asarray(c, dtype=np.int64) for c in counts))

    @property
    def num_parts(self) -> int:
        return int(self.counts[0].shape[1])

    @property
    def num_types(self) -> int:
        return len(self.counts)

    def group_counts(self) -> np.ndarray:
        """(partitions, types) sizes of the (partition, type) groups."""
        return np.stack([c.sum(axis=0) for c in self.counts], axis=1)

    def group_starts(self) -> np.ndarray:
        """(partitions, types) first new ID of each group, groups laid out partition-major then type."""
        sizes = self.group_counts()
        return (np.cumsum(sizes.ravel()) - sizes.ravel()).reshape(sizes.shape)

    def block_bases(self, t: int) -> np.ndarray:
        """(blocks, partitions) first new ID of the entries of each block of type t owned by each partition."""
        within = np.cumsum(self.counts[t], axis=0) - self.counts[t]
        return within + self.group_starts()[:, t][None, :]

    def part_starts(self) -> np.ndarray:
        """First new ID of each partition, plus the total at the end."""
        sizes = self.group_counts().sum(axis=1)
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def ranges(self, t: int) -> list[list[int]]:
        """[[start, end), ...] of type t in every partition (a node_map / edge_map entry)."""
        starts, sizes = self.group_starts()[:, t], self.group_counts()[:, t]
        return [[int(s), int(s + n)] for s, n in zip(starts, sizes)]

    def type_of(self, new_ids: np.ndarray) -> np.ndarray:
        """Type id of each new ID (empty groups are skipped by taking the last group starting at or before it)."""
        starts = self.group_starts().ravel()
        return (np.searchsorted(starts, new_ids, side="right") - 1) % self.num_types

    def part_of(self, new_ids: np.ndarray) -> np.ndarray:
        """Owner partition of each new ID."""
        return np.searchsorted(self.part_starts(), new_ids, side="right") - 1

    @property
    def total(self) -> int:
        return int(sum(c.sum() for c in self.counts))
