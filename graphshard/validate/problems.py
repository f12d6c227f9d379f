"""What a failed check reports: the partition, the file and the check, and the table of checks the validator runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

# Every check the validator runs, by name, with the invariant it proves (reference formats.md §5 numbers).
CHECKS: dict[str, str] = {
    "config": "partition config JSON has every key DGL reads, with consistent types and counts",
    "id-ranges": "node_map/edge_map ranges are partition-major, type-minor, gap-free and non-overlapping (§5.3)",
    "files": "every file the config names exists and parses as a DGL binary file",
    "reserved-dtypes": "_ID int64, inner_node/inner_edge uint8, part_id int64, _TYPE int32 (nodes: int16 "
                       "of older sets too; heterographs only) (§5.1)",
    "inner-nodes": "inner nodes take local IDs 0..n-1 and their _ID is exactly the partition's node_map range, "
                   "in order (§5.2-3)",
    "halo-nodes": "halo nodes are owned elsewhere, appear once, and carry the owner's part_id and type",
    "inner-edges": "inner edges' _ID is exactly the partition's edge_map range and their destinations are inner "
                   "(§5.2-4)",
    "edge-types": "edge _TYPE agrees with edge_map and with the node types of both ends (§5.4)",
    "features": "feature tensors have one row per inner node/edge of their type, the same keys and dtypes in "
                "every partition",
    "counts": "inner nodes and edges of all partitions add up to the config's and the input's counts (§5.2)",
    "orig-ids": "orig_nids/orig_eids hold a permutation of each type's original IDs (§5.5)",
    "halo-edges": "edges kept for halo nodes are copies of their owners' edges",
    "halo-completeness": "in-neighbourhoods of inner nodes (and of halo levels < num_hops) are complete; "
                         "out-edges to halo nodes are all present (hops >= 1, §5.7)",
    "edge-identity": "every edge's original (src, dst) equals the input edge with its original ID (§5.5)",
    "feature-values": "every feature row equals the input row of its original ID (§5.6)",
    "trainer-ids": "trainer_id // trainers_per_machine == partition (§5.8)",
    "digests": "every file the set's digests file lists has the size and xxh3_128 listed there",
}


@dataclass(frozen=True)
class Problem:
    """One violated invariant: which check, in which partition (None = the whole set) and file, and what was found."""

    check: str
    message: str
    partition: int | None = None
    file: str | None = None

    def __str__(self) -> str:
        where = "all partitions" if self.partition is None else f"partition {self.partition}"
        return f"{where}: {self.file or '-'}: [{self.check}] {self.message}"

    def to_dict(self) -> dict:
        return asdict(self)


def first_values(values, limit: int = 5, count: int | None = None) -> str:
    """A short rendering of the first few offending values for a message (`count`: how many there are in all, when
    `values` holds only the first ones)."""
    values = list(values)
    count = len(values) if count is None else count
    shown = ", ".join(str(int(v)) if hasattr(v, "__int__") else str(v) for v in values[:limit])
    return shown + (f", ... ({count} in all)" if count > limit else "")


class Hits:
    """What a check found, gathered piece by piece: how many, and the first few (with a paired value each)."""

    def __init__(self, limit: int = 5):
        self.count, self.limit, self.first, self.paired = 0, limit, [], []

    def add(self, found: np.ndarray, paired: np.ndarray | None = None) -> None:
        take = self.limit - len(self.first)
        if take > 0 and found.size:
            self.first += found[:take].tolist()
            self.paired += [] if paired is None else paired[:take].tolist()
        self.count += int(found.size)

    def __bool__(self) -> bool:
        return self.count > 0

    def text(self) -> str:
        return first_values(self.first, count=self.count)

    def paired_text(self) -> str:
        return first_values(self.paired, count=self.count)


def problem_lines(report: dict) -> list[str]:
    """Each problem of a report dict as one line.

    Parameters
    ----------
    report : dict
        What `validate` returned.

    Returns
    -------
    list of str
        `part<i> <file>: <check>: <message>` per problem, in the report's order.
    """
    return [str(Problem(**p)) for p in report["problems"]]
