"""Balance constraints with DGL's meaning: `balance_ntypes` classes become 0/1 weight columns, `balance_edges` adds
an in-degree column per class (the in-degree column alone without classes), one METIS constraint per column.

Entries of `balance_ntypes`: `"ntype"` = one class per node type; `"<ntype>/<feat>"` = the values of a 1-D integer or
bool node feature of that type (nodes of other types share one extra class). Several entries combine into product
classes. Codes are computed over any homogeneous (type-major) ID range, so that MPI ranks agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.formats.readers import RowIndex, read_rows

FEATURE_RADIX = 1 << 20  # feature values must lie in [0, FEATURE_RADIX); code 0 is "node of another type"


@dataclass(frozen=True)
class BalanceEntry:
    """One parsed `balance_ntypes` entry: the node type split (feat None) or a feature of one type."""

    ntype: str | None
    feat: str | None

    @property
    def radix(self) -> int:
        return FEATURE_RADIX + 1 if self.feat else 0


def parse_entries(graph: ChunkedGraph, entries: list[str]) -> list[BalanceEntry]:
    """Check every entry against the graph's node types and features."""
    source = graph.metadata_path or "metadata.json"
    parsed = []
    for text in entries:
        if text == "ntype":
            parsed.append(BalanceEntry(None, None))
            continue
        nt, _, feat = text.partition("/")
        if nt not in graph.node_type or not feat:
            raise InputError(source, "balance_ntypes",
                             f"'ntype' or '<ntype>/<feature>' with ntype in {graph.node_type}", repr(text))
        if feat not in graph.node_data.get(nt, {}):
            raise InputError(source, f"node_data['{nt}']", f"a feature '{feat}' (named by balance_ntypes)",
                             sorted(graph.node_data.get(nt, {})))
        parsed.append(BalanceEntry(nt, feat))
    radices = [e.radix or len(graph.node_type) for e in parsed]
    if float(np.prod([float(r) for r in radices])) >= 2.0 ** 62:
        raise InputError(source, "balance_ntypes", "at most 3 feature entries (product classes must fit in int64)",
                         entries)
    return parsed


def _feature_values(graph: ChunkedGraph, entry: BalanceEntry, lo: int, hi: int) -> np.ndarray:
    """Values of a class feature for per-type rows [lo, hi), checked for length, shape and range."""
    spec = graph.node_data[entry.ntype][entry.feat]
    index = RowIndex.of(graph, spec)
    where = graph.path(spec.data[0])
    n = graph.num_nodes(entry.ntype)
    if index.total != n:
        raise InputError(where, f"node_data['{entry.ntype}']['{entry.feat}']",
                         f"{n} rows (one per '{entry.ntype}' node) for a balance column", f"{index.total} rows")
    vals = read_rows(graph, spec, lo, hi, index)
    if vals.ndim == 2 and vals.shape[1] == 1:
        vals = vals[:, 0]
    if vals.ndim != 1 or not (np.issubdtype(vals.dtype, np.integer) or vals.dtype == np.bool_):
        raise InputError(where, f"node_data['{entry.ntype}']['{entry.feat}']",
                         "a 1-D integer or bool feature for a balance column", f"{vals.dtype} of shape {vals.shape}")
    vals = vals.astype(np.int64)
    if len(vals) and (vals.min() < 0 or vals.max() >= FEATURE_RADIX):
        raise InputError(where, f"node_data['{entry.ntype}']['{entry.feat}']",
                         f"balance class values in [0, {FEATURE_RADIX})", f"range [{vals.min()}, {vals.max()}]")
    return vals


def class_codes(graph: ChunkedGraph, entries: list[BalanceEntry], start: int, stop: int) -> np.ndarray:
    """Product-class code of every homogeneous node in [start, stop) (mixed radix over the entries)."""
    off = graph.type_node_offsets
    tid = np.searchsorted(off, np.arange(start, stop), side="right") - 1
    codes = np.zeros(stop - start, dtype=np.int64)
    for entry in entries:
        if entry.feat is None:
            codes = codes * len(graph.node_type) + tid
            continue
        t = graph.ntype_id(entry.ntype)
        lo, hi = max(start, int(off[t])), min(stop, int(off[t + 1]))
        part = np.zeros(stop - start, dtype=np.int64)
        if hi > lo:
            part[lo - start:hi - start] = _feature_values(graph, entry, lo - int(off[t]), hi - int(off[t])) + 1
        codes = codes * entry.radix + part
    return codes


def weight_columns(codes: np.ndarray | None, classes: np.ndarray | None,
                   in_degrees: np.ndarray | None) -> np.ndarray | None:
    """(n, ncon) weights, as DGL's `metis_partition_assignment` makes them: one 0/1 column per class, then with
    in-degrees (`balance_edges`) one in-degree column per class (without classes: the in-degree column alone, node
    counts then unbalanced); None = unit."""
    if classes is None:
        return None if in_degrees is None else in_degrees.reshape(-1, 1).astype(np.int64)
    onehot = (codes[:, None] == classes[None, :]).astype(np.int64)
    return onehot if in_degrees is None else np.concatenate([onehot, onehot * in_degrees[:, None]], axis=1)


@dataclass(frozen=True)
class Attainable:
    """Which constraint columns METIS can meet (`keep`) and a tolerance per kept column (`ubvec`, None = 1 + ufactor
    / 1000 for all)."""

    keep: np.ndarray
    ubvec: np.ndarray | None

    @property
    def dropped(self) -> list[int]:
        return np.flatnonzero(~self.keep).tolist()

    def info(self, labels: list[str] | None = None) -> dict:
        """The report's record of where METIS was asked for other than the configured balance: the columns left out
        (by label, else by index) and the widened tolerances; empty when neither."""
        dropped = [labels[c] if labels else c for c in self.dropped]
        return {**({"constraints_dropped": dropped} if dropped else {}),
                **({"tolerances": [round(float(u), 4) for u in self.ubvec]} if self.ubvec is not None else {})}

    def columns(self, weights: np.ndarray) -> np.ndarray | None:
        """The kept columns of `weights` (None when none is kept: unit weights)."""
        return None if not self.keep.any() else weights if self.keep.all() else weights[:, self.keep]


def attainable(totals: np.ndarray, heaviest: np.ndarray, nparts: int, ufactor: int) -> Attainable:
    """The balance (Par)METIS can reach in whole nodes, from each column's total and heaviest node weight. A column
    totalling less than `nparts` (a class with fewer nodes than parts) cannot be spread and is dropped; a column whose
    fullest part must exceed 1 + ufactor / 1000 times the mean (a mean under about `1000 / ufactor` that is not
    whole, or one node heavier than that) gets the tolerance that part needs. Given an
    unattainable bound METIS gives up on balance and leaves parts with no node of the other classes (measured: a
    class of 3 nodes at k=4, or of 200 at k=16)."""
    totals, heaviest = np.asarray(totals, dtype=np.float64), np.asarray(heaviest, dtype=np.float64)
    keep = totals >= nparts
    mean, heavy = np.maximum(totals[keep], 1) / nparts, heaviest[keep]
    fullest = np.maximum(np.ceil(mean), heavy)  # the least the fullest part can weigh in whole weights
    ubvec = np.maximum(1 + ufactor / 1000, fullest / mean)
    return Attainable(keep, ubvec if (ubvec > 1 + ufactor / 1000).any() else None)


def class_label(graph: ChunkedGraph, entries: list[BalanceEntry], code: int) -> str:
    """A readable name of a product class, e.g. `ntype=paper&paper/train_mask=1`."""
    pieces = []
    for entry in reversed(entries):
        radix = entry.radix or len(graph.node_type)
        code, value = divmod(int(code), radix)
        if entry.feat is None:
            pieces.append(f"ntype={graph.node_type[value]}")
        else:
            pieces.append(f"{entry.ntype}/{entry.feat}={value - 1}" if value else f"not {entry.ntype}")
    return "&".join(reversed(pieces))


@dataclass(frozen=True)
class Constraints:
    """(n, ncon) METIS weights (None = unit weights), the class codes of the columns and readable column names."""

    weights: np.ndarray | None
    classes: np.ndarray | None
    labels: list[str]


def class_columns(graph: ChunkedGraph, balance_ntypes: list[str]) -> tuple[np.ndarray | None, list[str]]:
    """Each homogeneous node's column among the graph's product classes (int32, None without entries) and the columns'
    labels: what per-partition sums of the constraint columns need, without an (n, ncon) weight matrix."""
    entries = parse_entries(graph, balance_ntypes)
    if not entries:
        return None, []
    classes, column = np.unique(class_codes(graph, entries, 0, graph.total_nodes), return_inverse=True)
    return column.astype(np.int32), [class_label(graph, entries, c) for c in classes]


def graph_constraints(graph: ChunkedGraph, balance_ntypes: list[str], in_degrees: np.ndarray | None,
                      start: int = 0, stop: int | None = None, classes: np.ndarray | None = None) -> Constraints:
    """Constraint columns for a homogeneous range; `classes` defaults to the codes present in the range."""
    stop = graph.total_nodes if stop is None else stop
    entries = parse_entries(graph, balance_ntypes)
    suffix = "*in_degree" if in_degrees is not None else ""
    if not entries:
        weights = weight_columns(None, None, in_degrees)
        return Constraints(weights, None, [] if weights is None else ["in_degree"])
    codes = class_codes(graph, entries, start, stop)
    classes = np.unique(codes) if classes is None else classes
    labels = [class_label(graph, entries, c) for c in classes]
    labels += [label + suffix for label in labels] if suffix else []
    return Constraints(weight_columns(codes, classes, in_degrees), classes, labels)
