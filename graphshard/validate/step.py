"""The validation run: phase zero (original node ID maps) per partition, then phase one per partition alongside the
input checksums per input chunk, global checks on the client, phase two per partition, then the report dict. Tasks
run on Dask when a client is given (one partition per task, so memory is bounded by the largest partition), else in
this process one after the other.
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from distributed import Client

from graphshard.daskrun import TaskGroup, everywhere, gather_tasks, homes, settle, submit_tasks
from graphshard.errors import GraphshardError
from graphshard.formats.assignment import TRAINER_FEAT
from graphshard.formats.chunked import ChunkedGraph, load_metadata, metadata_location
from graphshard.storage import Location, Storage
from graphshard.storage.copies import CopyCache, drop_copies
from graphshard.validate import against_input, checks, file_digests, hashing, per_partition, piecewise
from graphshard.validate.across_partitions import Levels, check_claims
from graphshard.validate.edges import EndsOutside, edge_pieces
from graphshard.validate.layout import Layout, check_layout, load_layout
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS, load_part, part_copies
from graphshard.validate.per_partition import ScanSetup, create_arrays, halo_rule_problems
from graphshard.validate.prefetch import Ahead, fetch_ahead
from graphshard.validate.problems import CHECKS, Problem, first_values, problem_lines
from graphshard.validate.quality import assignment_report_data, quality
from graphshard.validate.remote_share import Sampling, estimate
from graphshard.validate.rows import EdgeRows, feature_rows, stacked
from graphshard.validate.sampling import SAMPLE_SIZE, rule_text
from graphshard.validate.scratch import scratch_beside


def _scan(part: int, layout: Layout, setup: ScanSetup, ahead: Ahead | None) -> dict:
    fetch_ahead(layout, ahead, ahead.after(part) if ahead else None)  # the worker's next scan's files, meanwhile
    with setup.scratch.kept_open(), piecewise.heap_for_pieces(), part_copies(layout, part) as layout:
        return per_partition.scan_partition(layout, part, setup)


def _cross(part: int, layout: Layout, setup: ScanSetup, mode: str, broken: frozenset[int],
           graph: ChunkedGraph | None, indexes: dict) -> tuple[list[Problem], list[Problem]]:
    """Phase two for one partition: orig-ID claims, then halo completeness and with --full every row compared with
    the input, read again from the partition's files piece by piece (the sampled rows are compared by the input
    checksum tasks). Returns (the claims' problems, the others')."""
    with setup.scratch.kept_open(), piecewise.heap_for_pieces(), part_copies(layout, part) as layout:
        piecewise.set_piece_rows(setup.piece_rows)
        return check_claims(layout, part, setup), _cross_checks(part, layout, setup, mode, broken, graph, indexes)


def _cross_checks(part: int, layout: Layout, setup: ScanSetup, mode: str, broken: frozenset[int],
                  graph: ChunkedGraph | None, indexes: dict) -> list[Problem]:
    problems: list[Problem] = []
    levels = layout.halo_hops >= 1 and mode == "full" and part not in broken and setup.level_arrays
    compare = graph is not None and setup.with_input
    if not (levels or (compare and setup.full)):
        return problems
    data = load_part(layout, part, with_feats=compare and setup.full)
    view = checks.make_view(data.graph, part, layout.rel(part, "part_graph")) if data.graph is not None else None
    sink = _FullCompare(layout, graph, setup.scratch, part, indexes) if compare and setup.full else None
    halo = Levels(view, data.graph, layout, setup.scratch, broken) if levels and view is not None else None
    with_rows = sink is not None and view is not None and data.orig_eids is not None
    rows = EdgeRows(data, view, layout, sink) if with_rows else None
    tallies = [t for t in (halo, rows) if t is not None]
    try:
        for piece in edge_pieces(data.graph) if tallies else ():
            for tally in tallies:
                tally.add(piece)
        if halo is not None:
            problems += halo.problems()
    except EndsOutside:  # reported by phase one
        pass
    if sink is not None:
        feature_rows(data, layout, sink)
        problems += sink.problems()
    return problems


class _FullCompare:
    """--full: every row of the partition compared with its input row, piece by piece (a rows sink, rows.py)."""

    def __init__(self, layout: Layout, graph, scratch, part: int, indexes: dict):
        self.layout, self.graph, self.scratch, self.part, self.found = layout, graph, scratch, part, {}
        self.indexes = indexes

    def declare(self, kind: str, key: str, n: int) -> None:
        self.found[(kind, key)] = against_input.Comparison(self.layout, self.graph, self.scratch, self.part, kind,
                                                           key, _row_file(self.layout, self.part, kind),
                                                           self.indexes.get((kind, key)))

    def take(self, kind: str, key: str, n: int, rank, orig, rows) -> None:
        self.found[(kind, key)].add(orig, stacked(rows))

    def problems(self) -> list[Problem]:
        return [p for _, c in sorted(self.found.items(), key=lambda kv: kv[0]) for p in c.problems()]


def _row_file(layout: Layout, part: int, kind: str) -> str:
    """The files a row comparison of this kind reads, for messages."""
    if kind == "edges":
        return f"{layout.rel(part, 'part_graph')}, {layout.extra_rel(part, ORIG_EIDS)}"
    return layout.rel(part, "node_feats" if kind == "node_feat" else "edge_feats")


def _missing_features(layout: Layout, summaries: list[dict], graph) -> list[Problem]:
    """Every input feature is in every partition's feature file."""
    problems = []
    for kind, data, types in (("node_feats", graph.node_data, layout.ntypes), ("edge_feats", graph.edge_data,
                                                                             layout.etypes)):
        wanted = {f"{t}/{f}" for t, feats in data.items() for f in feats}
        for s in summaries:
            if s[kind] is None:
                continue
            held = {"/".join(k) for key in s[kind] if (k := checks.split_feature_key(key, types, types[0]))}
            for key in sorted(wanted - held):
                problems.append(Problem("features", f"input feature '{key}' is missing", s["part"],
                                        layout.rel(s["part"], kind)))
    return problems


def _node_maps(part: int, layout: Layout, setup: ScanSetup, ahead: Ahead | None) -> None:
    fetch_ahead(layout, ahead, ahead.first(part) if ahead else None)  # the worker's first scan's files, meanwhile
    with setup.scratch.kept_open(), part_copies(layout, part) as layout:
        per_partition.node_maps(layout, part, setup)


def _input_sums(job: tuple, layout: Layout, setup: ScanSetup, graph: ChunkedGraph, indexes: dict,
                samples: dict) -> tuple[dict, dict]:
    piecewise.set_piece_rows(setup.piece_rows)
    with setup.scratch.kept_open(), piecewise.heap_for_pieces():
        return against_input.input_chunk_sums(layout, graph, setup.scratch, job, indexes, samples)


def _sample_problems(layout: Layout, graph: ChunkedGraph, keys: dict[int, list], results: list[dict]) -> dict:
    """Per partition, the problems of its sampled rows: every input chunk task's tallies of them merged, per
    (kind, key) in order, and a feature the input lacks."""
    tallies: dict[tuple, against_input.Tally] = {}
    for found in results:
        for k, t in found.items():
            tallies[k] = tallies[k].merged(t) if k in tallies else t
    problems: dict[int, list[Problem]] = {}
    for part, wanted in keys.items():
        mine = problems.setdefault(part, [])
        for kind, key in sorted(wanted):
            file = _row_file(layout, part, kind)
            missing = against_input.missing_key(graph, kind, key, part, file)
            mine += [missing] if missing else tallies.get((part, kind, key), against_input.Tally()).problems(
                kind, key, part, file)
    return problems


def _global_checks(layout: Layout, summaries: list[dict], setup: ScanSetup) -> list[Problem]:
    """Checks over all partitions' summaries: feature keys/dtypes agree, orig IDs cover every ID, trainer ids."""
    problems = []
    for kind, file_key in (("node_feats", "node_feats"), ("edge_feats", "edge_feats")):
        sigs = [(s["part"], s[kind]) for s in summaries if s[kind] is not None]
        if sigs:
            ref_part, ref = sigs[0]
            for p, sig in sigs[1:]:
                if sig != ref:
                    diff = sorted(set(map(str, sig.items())) ^ set(map(str, ref.items())))
                    problems.append(Problem("features", f"keys/dtypes differ from partition {ref_part}'s: "
                                            f"{first_values(diff, 3)}", p, layout.rel(p, file_key)))
    for flag, name, types, prefix in (("orig_nids", ORIG_NIDS, layout.ntypes, "node_new"),
                                      ("orig_eids", ORIG_EIDS, layout.etypes, "edge_owner")):
        if not getattr(setup, flag):
            continue
        for p in [s["part"] for s in summaries if not s[f"has_{flag}"]]:
            problems.append(Problem("orig-ids", "file is missing (other partitions have one)", p,
                                    layout.extra_rel(p, name)))
        for t, typ in enumerate(types):
            unclaimed = setup.scratch.count_equal(f"{prefix}_{t}", -1)
            if unclaimed:
                first = setup.scratch.first_equal(f"{prefix}_{t}", -1)
                problems.append(Problem("orig-ids", f"'{typ}': {unclaimed} original IDs are listed by no partition "
                                        f"(first: {first_values(first)}): the files are not a permutation", None,
                                        name))
    problems += _trainer_checks(layout, summaries)
    return problems


def _trainer_checks(layout: Layout, summaries: list[dict]) -> list[Problem]:
    """trainer_id // trainers_per_machine == partition, trainers_per_machine from the config or the largest id."""
    ranges = {s["part"]: s["trainer_ids"] for s in summaries if s["trainer_ids"]}
    if not ranges:
        return []
    top = max(mx for r in ranges.values() for _, mx in r.values())
    per_machine = int(layout.raw.get("num_trainers_per_machine") or -(-(top + 1) // layout.num_parts))
    problems = []
    for p, r in ranges.items():
        for key, (lo, hi) in r.items():
            if lo // per_machine != p or hi // per_machine != p:
                problems.append(Problem("trainer-ids", f"'{key}' spans trainers {lo}..{hi}, expected "
                                        f"{p * per_machine}..{(p + 1) * per_machine - 1} ({per_machine} trainers per "
                                        "machine)", p, layout.rel(p, "node_feats")))
    return problems


def _input_checks(layout: Layout, graph: ChunkedGraph) -> list[Problem]:
    """Types and counts of the partition set equal the input graph's."""
    problems = []
    name = layout.config_path.name
    if set(graph.node_type) != set(layout.ntypes) or set(graph.edge_type) != set(layout.etypes):
        problems.append(Problem("counts", f"types {sorted(layout.ntypes)}, {sorted(layout.etypes)} differ from the "
                                f"input's {sorted(graph.node_type)}, {sorted(graph.edge_type)}", None, name))
        return problems
    for types, counts, get, what in ((layout.ntypes, layout.nodes_per_type(), graph.num_nodes, "nodes"),
                                     (layout.etypes, layout.edges_per_type(), graph.num_edges, "edges")):
        for t, typ in enumerate(types):
            if int(counts[t]) != get(typ):
                problems.append(Problem("counts", f"'{typ}': {int(counts[t])} {what} in the ranges, the input has "
                                        f"{get(typ)}", None, name))
    return problems


def _compare_sums(layout: Layout, part_sums: list[dict], input_sums: list[dict]) -> list[Problem]:
    """Per (partition, key): the partition's checksum against the input rows it owns."""
    totals: dict[tuple[str, str], list[int]] = {}
    for result in input_sums:
        for key, sums in result.items():
            acc = totals.setdefault(key, [0] * layout.num_parts)
            for p, s in enumerate(sums):
                acc[p] = hashing.add(acc[p], s)
    problems = []
    for p, sums in enumerate(part_sums):
        for (kind, key), value in sorted(sums.items()):
            if (kind, key) in totals and totals[(kind, key)][p] != value:
                check, file = (("edge-identity", f"{layout.rel(p, 'part_graph')}, {layout.extra_rel(p, ORIG_EIDS)}")
                               if kind == "edges" else
                               ("feature-values", layout.rel(p, "node_feats" if kind == "node_feat" else "edge_feats")))
                problems.append(Problem(check, f"'{key}': the checksum over all rows differs from the input rows this "
                                        "partition owns: at least one row differs (run with --full to list them)",
                                        p, file))
    return problems


def _status(problems: list[Problem], skipped: dict[str, str]) -> list[dict]:
    failed: dict[str, int] = {}
    for pr in problems:
        failed[pr.check] = failed.get(pr.check, 0) + 1
    rows = []
    for name, what in CHECKS.items():
        status = "failed" if name in failed else ("skipped" if name in skipped else "passed")
        rows.append({"name": name, "invariant": what, "status": status, "problems": failed.get(name, 0),
                     "note": skipped.get(name, "") if status == "skipped" else ""})
    return rows


def _skips(layout: Layout, setup: ScanSetup, metadata: Location | None, summaries: list[dict],
           digest_problems: list[Problem]) -> dict[str, str]:
    skipped = {}
    if setup.listed is None and not digest_problems:
        skipped["digests"] = f"no {file_digests.digests_file(layout)} beside the config (graphshard writes one)"
    if not (setup.orig_nids or setup.orig_eids):
        skipped["orig-ids"] = "no orig_nids.dgl/orig_eids.dgl (shuffle --save-orig-nids --save-orig-eids)"
    if layout.halo_hops < 1:
        skipped["halo-edges"] = skipped["halo-completeness"] = "halo_hops is 0"
    if metadata is None:
        skipped["edge-identity"] = skipped["feature-values"] = "no --input graph given"
    else:
        if not (setup.orig_nids and setup.orig_eids):
            skipped["edge-identity"] = "needs orig_nids.dgl and orig_eids.dgl"
        if not setup.orig_nids:
            skipped["feature-values"] = "needs orig_nids.dgl (and orig_eids.dgl for edge features)"
    if not any(s["trainer_ids"] for s in summaries):
        skipped["trainer-ids"] = f"no '{TRAINER_FEAT}' node feature"
    return skipped


def _part_label(item) -> str:
    return f"part{item[0] if isinstance(item, tuple) else item}"


def _input_label(job: tuple) -> str:
    return "/".join(x for x in (job[0], job[1], job[2]) if x) + f"/chunk{job[3]}"


def _by_key(summaries: list[dict]) -> dict[tuple[str, str], dict[int, tuple]]:
    """The scans' sampled rows (taken out of the summaries) per (kind, key): {part: (original IDs, rows)}."""
    found: dict[tuple[str, str], dict[int, tuple]] = {}
    for s in summaries:
        for k, rows in s.pop("samples").items():
            found.setdefault(k, {})[s["part"]] = rows
    return found


def _run_tasks(client: Client | None, layout: Layout, setup: ScanSetup, graph: ChunkedGraph | None,
               problems: list[Problem]) -> tuple[list[dict], str, list[tuple], list[dict], dict]:
    """Every task of the run, the workers kept busy: the node maps first (small), then the scans, the client's
    global checks as the scans end, then the cross-checks (which read what every scan wrote) beside the input
    tasks (one read of each input chunk: its checksums, which read the maps and the edge claims, and the scans'
    sampled rows in it). Adds the scans' and global problems to `problems`; a failure settles every task in flight
    before the scratch folder goes. Returns the summaries, the halo mode, the cross-checks' results, the input
    checksums and the sampled rows' problems per partition."""
    groups: list[TaskGroup] = []
    parts = list(range(layout.num_parts))
    ahead = Ahead(tuple(homes(client, layout.num_parts))) if layout.cache is not None else None
    consts = dict(layout=layout, setup=setup, place=_placed(ahead.homes) if ahead and client else None)
    try:
        groups.append(submit_tasks(client, "validate", "node-maps", _node_maps, parts if setup.orig_nids else [],
                                   label=_part_label, priority=1, share=on_store(layout), ahead=ahead, **consts))
        groups.append(submit_tasks(client, "validate", "scan", _scan, parts, label=_part_label,
                                   share=on_store(layout), ahead=ahead, **consts))
        gather_tasks(client, groups[0])
        # the input's file headers, read once here and shipped (with its metadata) to every task that compares with it
        indexes = against_input.row_indexes(graph) if setup.with_input else {}
        summaries = gather_tasks(client, groups[1])[0]
        mode, broken = _after_scans(layout, setup, graph, summaries, problems)
        samples = _by_key(summaries)
        input_jobs = against_input.input_jobs(graph, setup.orig_eids) if setup.with_input else []
        groups.append(submit_tasks(client, "validate", "input-checksums", _input_sums, input_jobs,
                                   label=_input_label, graph=graph, indexes=indexes, samples=samples,
                                   layout=layout, setup=setup, share=on_store(layout, graph)))
        groups.append(submit_tasks(client, "validate", "cross-check", _cross, parts, label=_part_label, mode=mode,
                                   broken=broken, graph=graph, indexes=indexes, share=on_store(layout, graph),
                                   **consts))
        crossed, input_results = gather_tasks(client, groups[3], groups[2])
    except BaseException:
        if client is not None:
            settle(client, [f for g in groups for f in g.futures + g.shared])
        raise
    keys = {p: [k for k, rows in samples.items() if p in rows] for p in parts}
    sampled = _sample_problems(layout, graph, keys, [r[1] for r in input_results]) if graph is not None else {}
    return summaries, mode, crossed, [r[0] for r in input_results], sampled


def _after_scans(layout: Layout, setup: ScanSetup, graph: ChunkedGraph | None, summaries: list[dict],
                 problems: list[Problem]) -> tuple[str, frozenset[int]]:
    """The checks over all scans' summaries (into `problems`); the halo mode and the partitions phase one found
    broken, for phase two."""
    for s in summaries:
        problems += s["problems"]
    problems += _global_checks(layout, summaries, setup)
    mode = "full" if any(s["halo_edge_count"] for s in summaries) else "in_edges"
    problems += halo_rule_problems(layout, summaries, mode)
    if graph is not None:
        problems += _missing_features(layout, summaries, graph)
    return mode, frozenset(s["part"] for s in summaries if s["stats"] is None)


def validate(config_path: str | Path | Location, input_metadata: str | Path | Location | None = None,
             full: bool = False, client: Client | None = None, seed: int = 0, sample_size: int = SAMPLE_SIZE,
             step_times: dict[str, float] | None = None, assignment_report: str | Path | None = None,
             scratch_dir: str | Path | None = None, *, storage: Storage | None = None,
             remote_share: bool = True) -> dict:
    """Check every invariant of formats.md §5 on a partition set and measure its quality (step 3 of the pipeline).

    Problems are returned, not raised: `report["ok"]` is False when any check failed and `report["problems"]` lists
    each one (partition, file, check, message). An unreadable config raises InputError.

    Parameters
    ----------
    config_path : str, Path or Location
        The partition config (`<graph_name>.json`): a path or a URL (the workers read the set from the store).
    input_metadata : str, Path or Location, optional
        The input chunked graph (a path or URL): the partitions are then compared with it row by row (sampled) and
        by checksums.
    full : bool
        Compare every row with the input instead of a seeded sample.
    client : distributed.Client, optional
        One task per partition (and per input chunk) on this cluster; None works here.
    seed, sample_size : int
        The sample's seed and its size per (partition, type or feature).
    step_times : dict, optional
        Seconds per pipeline step, shown in the report.
    assignment_report : str or Path, optional
        The assignment step's report, shown beside the measured figures.
    scratch_dir : str or Path, optional
        Where the shared arrays go (default: beside the partition set; a set on a store: the system's temporary
        folder).
    storage : Storage, optional
        What locations given as URLs are read through; None: credentials from the environment.
    remote_share : bool
        Also estimate the remote share of mini-batch input nodes (validate/remote_share.py: more passes over every
        partition's edges); False: `quality["remote_share"]` is None.

    Returns
    -------
    dict
        The report: `ok`, `problems`, `num_problems`, `checks`, `quality`, ... (what `write_report` writes).
    """
    started = time.perf_counter()
    layout = load_layout(config_path, storage)
    metadata = metadata_location(input_metadata) if input_metadata is not None else None
    problems = check_layout(layout)
    listed, digest_problems = file_digests.read_listing(layout)
    problems += digest_problems
    graph = load_metadata(metadata, layout.storage) if metadata is not None else None  # once for the whole step
    if graph is not None:
        problems += _input_checks(layout, graph)
    objects = layout.storage.identities(layout.base_dir)  # a set on a store: which files exist, from one listing
    has = {f: any(layout.file(layout.extra_file(p, f)).exists() for p in range(layout.num_parts))
           for f in (ORIG_NIDS, ORIG_EIDS)}
    with step_copies(layout, client, objects) as layout:
        with scratch_beside(layout.base_dir, scratch_dir, layout.storage, client) as scratch:
            setup = create_arrays(layout, scratch, has[ORIG_NIDS], has[ORIG_EIDS], metadata is not None, full, seed,
                                  sample_size)
            setup = dataclasses.replace(setup, listed=listed)
            summaries, mode, crossed, input_sums, sampled = _run_tasks(client, layout, setup, graph, problems)
        for part, (claims, others) in enumerate(crossed):
            problems += claims + sampled.get(part, []) + others
        problems += _compare_sums(layout, [s["sums"] for s in summaries], input_sums)
        share = (None if problems or not remote_share
                 else remote_share_estimate(layout, assignment_report, seed, client))
    skipped = _skips(layout, setup, metadata, summaries, digest_problems)
    elapsed = time.perf_counter() - started
    times = dict(step_times or {})
    times.setdefault("validate", elapsed)
    return {
        "graph_name": layout.graph_name,
        "config": str(layout.config_path),
        "input": str(metadata) if metadata else None,
        "ok": not problems,
        "num_problems": len(problems),
        "problems": [p.to_dict() for p in problems],
        "checks": _status(problems, skipped),
        "sampling": {"full": full, "seed": seed, "sample_size": sample_size, "rule": rule_text(full, sample_size)},
        "halo_mode": mode if layout.halo_hops >= 1 else "none",
        "quality": {**quality(layout, summaries, assignment_report), "remote_share": share},
        "step_times": times,
    }


@contextmanager
def step_copies(layout: Layout, client: Client | None, objects: dict[str, tuple] | None = None) -> Iterator[Layout]:
    """The layout the step's tasks read: for a set on a store, one naming the step's copies of partition files (each
    object fetched once per worker and kept there for the step's later tasks, under a byte budget:
    storage/copies.py), deleted on every worker when the step ends; a local set as it is. `objects`: the set's
    listing (`Storage.identities`), which the tasks then take instead of listing their partition's folder."""
    if layout.is_local:
        yield layout
        return
    cache = CopyCache.fresh(objects=objects)
    try:
        yield dataclasses.replace(layout, cache=cache)
    finally:
        everywhere(client, drop_copies, cache.name)


def on_store(layout: Layout, graph: ChunkedGraph | None = None) -> tuple[str, ...]:
    """The task constants that read a store through their `Storage` (the layout of a set on a store, an input graph
    on a store): sent once per worker (`submit_tasks(share=)`), so that each worker makes one S3 client for them,
    not one per task. Local ones go with the tasks as before."""
    return tuple(name for name, local in (("layout", layout.is_local), ("graph", graph is None or graph.base.is_local))
                 if not local)


def part_homes(layout: Layout, client: Client | None) -> Callable[[int | tuple], str | None] | None:
    """For a set on a store, where a partition's tasks prefer to run (`daskrun.homes`: one worker per partition for
    the whole step, which then holds its copies; items are partitions or tuples led by one); None for a local set
    (scheduled as before)."""
    if layout.cache is None or client is None:
        return None
    return _placed(homes(client, layout.num_parts))


def _placed(at: Sequence[str | None]) -> Callable[[int | tuple], str | None]:
    """`submit_tasks(place=)` for items that are partitions or tuples led by one, from each partition's home."""
    return lambda item: at[item[0] if isinstance(item, tuple) else item]


def remote_share_estimate(layout: Layout, assignment_report: str | Path | None, seed: int,
                          client: Client | None) -> dict:
    """The estimated remote share of mini-batch input nodes (validate/remote_share.py), for the fanouts and batch size
    the assignment was run with (`objtype: fetch`), else DGL's GraphSAGE example's."""
    data, _ = assignment_report_data(layout, assignment_report)
    return estimate(layout, Sampling.from_assignment(data, seed), client, part_homes(layout, client),
                    on_store(layout))


def raise_on_problems(report: dict) -> None:
    """For callers that want an exception: a GraphshardError listing every problem, one per line.

    Parameters
    ----------
    report : dict
        What `validate` returned.

    Raises
    ------
    GraphshardError
        When `report["ok"]` is False.
    """
    if not report["ok"]:
        raise GraphshardError("validation failed:\n" + "\n".join(problem_lines(report)))
