"""Per-step predictions of a run: memory per worker and of the flow process, scratch and output bytes, Dask tasks,
time. Pure arithmetic on `GraphSizes` and `Settings`, so the advice can re-plan with other settings.

Structural sizes come from the code (dtypes of the ID map, parts and buckets; `random.BLOCK`, `TEXT_BLOCK`,
`piecewise.PIECE_ROWS`, `VOL_MARK_BYTES`, the configured `node_block_rows` and `multilevel_block_edges`); what only a
measurement knows is in `coefficients.json`. A worker's peak is its baseline plus, per thread, the largest task of
the step (tasks of one step run side by side on a worker's threads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from graphshard.assign.base import TEXT_BLOCK
from graphshard.assign.options import MAX_LEVELS, SAMPLED_INPUT, multilevel_blocks
from graphshard.assign.random import BLOCK as RANDOM_BLOCK
from graphshard.assign.report import VOL_MARK_BYTES
from graphshard.formats.assignment import PART_DTYPE
from graphshard.plan import coefficients
from graphshard.plan.sizes import GraphSizes
from graphshard.shuffle.local_ids import WINDOW_IDS
from graphshard.shuffle.plan import id_dtype_for
from graphshard.storage import windowed
from graphshard.validate import piecewise
from graphshard.validate.checks import KEPT_BYTES
from graphshard.validate.per_partition import owner_dtype
from graphshard.validate.remote_share import BATCHES

PART = np.dtype(PART_DTYPE).itemsize
FLOW_METHODS = ("metis", "kaminpar", "parmetis")  # the whole graph in one host's processes (flow process or MPI ranks)


@dataclass(frozen=True)
class Settings:
    """The config's figures the plan depends on (`settings.of(cfg)` builds it from a PipelineConfig)."""

    num_parts: int
    method: str = "random"
    trainers: int = 1
    balance_edges: bool = False
    balance_columns: int = 0
    ufactor: int = 30  # allowed imbalance, per mille
    block_edges: int = 4_000_000
    coarse_nodes: int = 250_000
    coarse_edges: int = 4_000_000
    lp_rounds: int = 6
    refine_rounds: int = 8
    vcycles: int = 0
    regions: bool = True
    halo_hops: int = 1
    halo_mode: str = "full"
    orig_nids: bool = False
    orig_eids: bool = False
    formats: tuple[str, ...] = ("coo",)
    node_block_rows: int = 1 << 20
    validate: bool = True
    full: bool = False
    remote_share: bool = True
    fanouts: tuple[int, ...] = (10, 25)  # the assignment's sample_fanouts, input layer first
    batch_size: int = 1000
    workers: int = 2
    threads: int = 1
    cores: int = 2  # cores the workers share (the local machine's for a local cluster)


@dataclass(frozen=True)
class StepPlan:
    """One step's predictions; `peak_task` names the task that sets the worker peak and `driver` what sizes it
    ('chunk', 'block', 'partition', 'graph', 'fixed')."""

    step: str
    detail: str
    worker_peak: int
    flow_peak: int
    scratch: int
    output: int
    tasks: int
    seconds: tuple[float, float]
    peak_task: str
    driver: str


@dataclass(frozen=True)
class Shape:
    """A partition's expected size: owned and local edges and nodes of the largest partition."""

    cut: float
    owned_edges: float
    local_edges: float
    owned_nodes: float
    local_nodes: float


def gb(n: float) -> str:
    """Bytes for a person: kB below 1 MB, MB below 1 GB, else GB (decimal units, as Dask's memory_limit strings)."""
    if n < 1e3:
        return f"{n:,.0f} B"
    if n < 1e6:
        return f"{n / 1e3:,.0f} kB"
    return f"{n / 1e6:,.0f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"


def edge_imbalance(s: Settings) -> float:
    """The largest partition's edges over the mean. With `balance_edges` (in-degree balanced: a partition's owned
    edges) the bound, 1 + ufactor/1000, times `edge_imbalance_balanced` (multilevel fills parts to the bound: R-MAT
    100M 1.0300 at k=8 with ufactor 30, R-MAT 50k 1.025-1.030 at k = 4 to 28), flat in k. Else measured at k=4
    (`edge_imbalance`), times (k/4)^exponent where a node-balanced method's hubs make it grow with k
    (`edge_imbalance_k_exponent`; multilevel on R-MAT: 2.92 at k=4, 3.47 at k=15, 4.53 at k=19: fitted through k=4
    and k=19, over-predicting k=15 by 15%)."""
    c = coefficients.load()
    if s.balance_edges and s.method in c["edge_imbalance_balanced"]:
        return (1 + s.ufactor / 1000) * c["edge_imbalance_balanced"][s.method]
    return c["edge_imbalance"][s.method] * (s.num_parts / 4) ** c["edge_imbalance_k_exponent"].get(s.method, 0.0)


def node_imbalance(s: Settings) -> float:
    """The largest partition's nodes over the mean: 1 but with `balance_edges`, where a method balancing only the
    in-degrees gives the hubs' partitions few nodes and the rest many (`node_imbalance_balanced` at k=4, times
    (k/4)^`node_imbalance_balanced_k_exponent`: multilevel, R-MAT 50k 1.64 at k=4, 2.38 at 8, 3.65 at 19, 5.66 at 28,
    the exponent; R-MAT 100M 3.06 at k=8, the factor)."""
    c = coefficients.load()
    if not s.balance_edges or s.method not in c["node_imbalance_balanced"]:
        return 1.0
    return c["node_imbalance_balanced"][s.method] * (s.num_parts / 4) ** c["node_imbalance_balanced_k_exponent"]


def shape(g: GraphSizes, s: Settings) -> Shape:
    """The largest partition, from the method's expected cut and edge imbalance (coefficients; `cut_balanced` with
    `balance_edges`: in-degree balance costs cut)."""
    c = coefficients.load()
    k = s.num_parts
    cuts = c["cut_balanced"] if s.balance_edges and s.method in c["cut_balanced"] else c["cut"]
    cut = (1 - 1 / (k * s.trainers)) if s.method == "random" else min(cuts[s.method], 1 - 1 / k)
    owned = g.edges / k * edge_imbalance(s) if k > 1 else g.edges
    if s.halo_hops == 0:
        local, halo_nodes = owned * (1 - cut), 0.0
    else:
        out_edges = owned * cut if s.halo_mode == "full" else 0.0
        local = owned + out_edges * (1 if s.halo_hops == 1 else s.halo_hops)
        ends = cut * owned * (1 + (s.halo_mode == "full")) * s.halo_hops  # cut in-edges' sources, out-edges' ends
        halo_nodes = min(g.nodes * (1 - 1 / k), c["halo_nodes_per_cut_edge"] * ends)
    nodes = min(g.nodes, g.nodes / k * node_imbalance(s))
    return Shape(cut, owned, local, nodes, nodes + halo_nodes)


def _seconds(core_seconds: float, s: Settings, tasks: int, parallel: bool = True) -> tuple[float, float]:
    c = coefficients.load()
    cores = max(1, min(s.workers * s.threads, s.cores)) if parallel else 1
    cs = c["core_seconds"]
    central = cs["per_step"] + tasks * cs["scheduler_per_task"] + (core_seconds + tasks * cs["per_task"]) / cores
    lo, hi = c["time_spread"]
    return (central * lo, central * hi)


def _worker(task_bytes: float, s: Settings) -> int:
    return int(coefficients.load()["worker_base"] + s.threads * task_bytes)


def _flow(step: str, g: GraphSizes) -> int:
    """The flow process in a step: its baseline plus what it holds per node of the graph (the assign step parses the
    `<ntype>.txt` files there, validation gathers per-node summaries; `flow_bytes_per_node`). The shuffle's own flow
    side holds no per-node data (tracemalloc, 2026-11-25: 1.1 MB at 100k nodes, 1.2 MB at 1M): its figure is the
    resident memory the assign step leaves in the same process, which the shuffle's samples still see."""
    c = coefficients.load()
    return int(c["flow_base"] + c["flow_bytes_per_node"].get(step, 0) * g.nodes)


def ingest(g: GraphSizes, s: Settings) -> StepPlan:
    """One task per input file checks it and hashes it (the file's bytes and the checks' temporaries)."""
    c = coefficients.load()
    tasks = g.edge_chunks + g.feature_files
    task = c["ingest_bytes_per_file_byte"] * g.largest_file
    secs = _seconds(c["core_seconds"]["ingest_per_byte"] * g.input_bytes, s, tasks)
    return StepPlan("ingest", "check + hash every input file", _worker(task, s), c["flow_base"], 0, 200 * tasks,
                    tasks, secs, f"check-file (largest file {gb(g.largest_file)})", "chunk")


def _assignment_bytes(g: GraphSizes, s: Settings) -> int:
    """The `<ntype>.txt` files: one line of digits per node."""
    return g.nodes * (len(str(max(s.num_parts * s.trainers - 1, 0))) + 1)


def _report(g: GraphSizes, s: Settings) -> tuple[int, float, float]:
    """(tasks, task bytes, core seconds) of the assignment report's edge pass (skipped when validation measures the
    cut, unless balance_edges needs the degrees): one task per edge chunk, volume marks bounded by VOL_MARK_BYTES."""
    if s.validate and not s.balance_edges:
        return 0, 0.0, 0.0
    c = coefficients.load()
    marks = min(g.nodes * s.num_parts * s.trainers, VOL_MARK_BYTES)
    return (g.edge_chunks, g.largest_chunk * c["report_bytes_per_edge"] + marks,
            g.edges * c["core_seconds"]["report_per_edge"])


CLASS_COLUMN_BYTES = 40  # per node: class codes, type ids and np.unique's sort, permutation and inverse (int64 each)


def _classes(g: GraphSizes, s: Settings) -> int:
    """With `balance_ntypes` the report numbers every node's balance class in the flow process (`class_columns`), a
    transient of `CLASS_COLUMN_BYTES` per node of the graph. The in-degrees of `balance_edges` are summed per (column,
    partition) in the chunk tasks: nothing per node (before, every chunk's int64 array over the nodes was gathered in
    the flow process: R-MAT 100M, 20 chunks, 1.27 GB)."""
    return CLASS_COLUMN_BYTES * g.nodes if s.balance_columns > s.balance_edges else 0


def assign(g: GraphSizes, s: Settings) -> StepPlan:
    """The configured method, then the report's edge pass when it runs."""
    c = coefficients.load()
    r_tasks, r_task, r_secs = _report(g, s)
    text = _assignment_bytes(g, s)
    scratch = PART * g.nodes  # the report's binary parts
    cs = c["core_seconds"]
    if s.method in FLOW_METHODS:
        flow = c["flow_base"] + max(c["flow_bytes_per_edge"][s.method] * g.edges, _classes(g, s))  # one after the other
        secs = _seconds(cs[f"assign:{s.method}_per_edge"] * g.edges, s, 0, parallel=False)
        return StepPlan("assign", f"{s.method}: the whole graph in the flow host", _worker(r_task, s), int(flow),
                        scratch, text, r_tasks, (secs[0] + r_secs, secs[1] + r_secs),
                        f"{s.method} in the flow process ({g.edges:,} edges)", "graph")
    if s.method == "multilevel":
        return _multilevel(g, s, r_tasks, r_task, r_secs, text, scratch)
    tasks = sum(math.ceil(n / RANDOM_BLOCK) for n in g.nodes_per_type) if s.method == "random" else g.node_types
    unit = min(RANDOM_BLOCK if s.method == "random" else TEXT_BLOCK, max(g.nodes_per_type))
    task = unit * c["random_bytes_per_node"]
    secs = _seconds(cs[f"assign:{s.method}_per_node"] * g.nodes + r_secs, s, tasks + r_tasks)
    peak = "report-cut (one edge chunk)" if r_task > task else f"{s.method} block of {unit:,} nodes"
    return StepPlan("assign", s.method, _worker(max(task, r_task), s), _flow("assign", g) + _classes(g, s), scratch,
                    text, tasks + r_tasks, secs, peak, "chunk" if r_task > task else "fixed")


def _multilevel(g: GraphSizes, s: Settings, r_tasks: int, r_task: float, r_secs: float, text: int,
                scratch: int) -> StepPlan:
    """Level-0 routing (one chunk's packed keys), block tasks (a block's CSR), METIS on the coarsest level (at most
    `multilevel_coarse_edges` edges: its memory goes with its edges, not its nodes)."""
    c = coefficients.load()
    blocks = multilevel_blocks(g.edges, s.block_edges)
    tasks_ = {"ml-route (one edge chunk)": g.largest_chunk * c["ml_route_bytes_per_edge"],
              "ml-block (one level-0 block)": g.edges / blocks * c["ml_block_bytes_per_edge"],
              "ml-initial (METIS on the coarsest level, or the input graph)":
                  min(g.edges, s.coarse_edges) * c["ml_coarsest_bytes_per_edge"],
              "report-cut (one edge chunk)": r_task}
    peak = max(tasks_, key=tasks_.get)
    tasks = _multilevel_tasks(g, s) + r_tasks
    # every level is kept until the refinement reaches it; a graph renumbered into regions (regions(): known only
    # once it has coarsened; not R-MAT, on which these are fitted) holds level 0 and its edges' buckets meanwhile
    work = scratch + sum(c["ml_scratch_bytes_per_edge"] * e + c["ml_scratch_bytes_per_node"] * n
                         for n, e, _ in ml_levels(g, s))
    cycles = 1 + s.vcycles * c["ml_vcycle_share"] + metis_input(g, s)  # the candidate's refinement: at most a cycle
    metis = c["core_seconds"]["assign:metis_per_edge"] * min(g.edges, s.coarse_edges) * metis_input(g, s)
    secs = _seconds(c["core_seconds"]["assign:multilevel_per_edge"] * g.edges * cycles + metis + r_secs, s, tasks)
    driver = "chunk" if peak.startswith(("ml-route", "report")) else "block" if "block" in peak else "fixed"
    flow = _flow("assign", g) + c["ml_flow_extra"] + _classes(g, s)
    return StepPlan("assign", f"multilevel: {blocks} level-0 blocks", _worker(tasks_[peak], s), int(flow),
                    int(work), text, tasks, secs, peak, driver)


def ml_levels(g: GraphSizes, s: Settings) -> list[tuple[float, float, int]]:
    """(nodes, edges, blocks) of the levels the coarsening is expected to make, the input first, in two phases
    (assign/multilevel/coarsen.py). Far above `multilevel_coarse_nodes`, a level shrinks its nodes `ml_shrink` times
    (down to that size) and keeps `ml_far_edge_keep` of its edges. Then, while the edges exceed
    `multilevel_coarse_edges`, each level keeps `ml_near_edge_keep` of them. A coarse level has as many blocks as its
    finer level's edges need, never more (`options.multilevel_blocks`, as `hierarchy.contract` counts them)."""
    c = coefficients.load()
    nodes, edges = float(g.nodes), float(g.edges)
    out = [(nodes, edges, multilevel_blocks(int(edges), s.block_edges))]

    def level(n: float, e: float) -> None:
        out.append((n, e, multilevel_blocks(int(out[-1][1]), s.block_edges, out[-1][2])))

    while nodes > s.coarse_nodes and len(out) < MAX_LEVELS:
        nodes, edges = max(float(s.coarse_nodes), nodes / c["ml_shrink"]), edges * c["ml_far_edge_keep"]
        level(nodes, edges)
    keep = c["ml_near_edge_keep"]
    while edges > s.coarse_edges and len(out) < MAX_LEVELS:
        nodes, edges = nodes * math.sqrt(keep), edges * keep
        level(nodes, edges)
    return out


def _multilevel_tasks(g: GraphSizes, s: Settings) -> int:
    """Level 0 (a task per chunk, a classes task per block with `balance_ntypes`, a task per block), each
    coarsening level (per block: `multilevel_lp_rounds` LP rounds of two task groups, as a level
    meets its node target only with the last round's grouping, the numbering and the contraction; the coarse
    blocks), METIS on the coarsest, and per level the refinement rounds (`ml_refine_rounds` on average, at most
    `multilevel_refine_rounds`: a level ends on a round that gains too little) and (but the coarsest) the
    projection, a task per block each (`ml_levels`); each of `multilevel_vcycles` coarsens and refines again; then,
    on a graph one task holds whole that still coarsens, METIS's partition of it, refined and compared; METIS's
    regions of a level of several blocks (a graph renumbered into them coarsens again; not counted: R-MAT, on which
    the coefficients are fitted, is never renumbered)."""
    sizes = [b for _, _, b in ml_levels(g, s)]
    coarsen = sum((2 * s.lp_rounds + 2) * b + nxt for b, nxt in zip(sizes, sizes[1:]))
    rounds = min(s.refine_rounds, coefficients.load()["ml_refine_rounds"])
    refine = round(rounds * sum(sizes)) + sum(sizes[:-1])
    classes = s.balance_columns > s.balance_edges  # ml-classes runs with balance_ntypes only
    candidate = metis_input(g, s) * (1 + round(rounds * sizes[0]) + 2 * sizes[0])  # METIS, refinement, two cuts
    return g.edge_chunks + sizes[0] * (1 + classes) + (1 + s.vcycles) * (coarsen + 1 + refine) + candidate + \
        regions(g, s)


def regions(g: GraphSizes, s: Settings) -> int:
    """1 when the input level's regions are found (assign/multilevel/regions.py: it has several blocks and coarsens),
    else 0; whether it is renumbered into them depends on the graph (few edges between them, as on meshes)."""
    levels = ml_levels(g, s)
    return int(s.regions and len(levels) > 1 and levels[0][2] > 1)


def metis_input(g: GraphSizes, s: Settings) -> int:
    """1 when METIS's partition of the input graph (or of a sample of it) is a candidate
    (`hierarchy.submit_metis_input`: a graph that coarsens, of at most `SAMPLED_INPUT` x `multilevel_coarse_edges`
    edges), else 0."""
    coarsens = g.nodes > s.coarse_nodes or g.edges > s.coarse_edges
    return int(coarsens and g.edges <= SAMPLED_INPUT * s.coarse_edges)


def _id_bytes(g: GraphSizes) -> int:
    return np.dtype(id_dtype_for(g.nodes)).itemsize


def shuffle_scratch(g: GraphSizes, s: Settings, p: Shape) -> int:
    """Binary parts, the ID map, edge buckets (+ out-edge buckets of cut edges), node buckets."""
    idb = _id_bytes(g)
    edge_row = 2 * idb + 8 * s.orig_eids + g.edge_feat_bytes
    out_edges = g.edges * p.cut * (2 * idb + 4) if s.halo_mode == "full" and s.halo_hops >= 1 and s.num_parts > 1 else 0
    node_row = 8 * s.orig_nids + g.node_feat_bytes
    return int((PART + idb) * g.nodes + edge_row * g.edges + out_edges + node_row * g.nodes)


def partition_bytes(g: GraphSizes, s: Settings, p: Shape) -> int:
    """One partition's files: graph.dgl (COO + reserved fields, + CSC/CSR), features, original-ID files."""
    extra = len([f for f in s.formats if f != "coo"])
    graph = p.local_edges * (16 + 13 + 16 * extra + 16 * ("coo" not in s.formats)) + p.local_nodes * (19 + 8 * extra)
    feats = p.owned_nodes * g.node_feat_bytes + p.owned_edges * g.edge_feat_bytes
    return int(graph + feats + 8 * (s.orig_nids * p.owned_nodes + s.orig_eids * p.owned_edges))


def _mean_nodes(p: Shape, imbalance: float) -> Shape:
    """The largest partition with the mean partition's nodes (for the partition set's total bytes)."""
    if imbalance == 1.0:
        return p
    owned = p.owned_nodes / imbalance
    return replace(p, owned_nodes=owned, local_nodes=p.local_nodes - p.owned_nodes + owned)


def _local_id_bytes(g: GraphSizes, p: Shape) -> float:
    """A write task's new -> local ID table (`shuffle.local_ids`): dense over at most `WINDOW_IDS` new IDs, so it
    stops growing with the graph there (before: 3 mark bytes and a 4-8 byte table per node of the graph); past one
    window, a piece of the IDs (at least the partition's local nodes) is grouped by window, 10 B per ID."""
    table = min(g.nodes, WINDOW_IDS) * np.dtype(id_dtype_for(int(p.local_nodes))).itemsize
    return table + (g.nodes > WINDOW_IDS) * 10 * max(WINDOW_IDS, p.local_nodes)


def shuffle(g: GraphSizes, s: Settings) -> StepPlan:
    """Route node blocks and edge chunks to owner buckets, then build and write one partition per task."""
    c, p, idb = coefficients.load(), shape(g, s), _id_bytes(g)
    out = s.halo_mode == "full" and s.halo_hops >= 1 and s.num_parts > 1
    per_edge = 16 + PART + 4 * idb + 8 + 16 * s.orig_eids + (PART + 2 * idb + 4) * out + 2 * g.edge_feat_bytes
    route = g.largest_chunk * per_edge * c["route_temp_factor"]
    node_block = min(s.node_block_rows, g.nodes) * (PART + idb + 8 + 16 * s.orig_nids + 2 * g.node_feat_bytes)
    extra = len([f for f in s.formats if f != "coo"])
    part = (p.local_edges * (c["partition_bytes_per_local_edge"] + c["extra_format_bytes_per_edge"] * extra)
            + p.local_nodes * c["partition_bytes_per_local_node"] + _local_id_bytes(g, p)
            + p.owned_nodes * g.node_feat_bytes + p.owned_edges * g.edge_feat_bytes
            + 8 * (s.orig_nids * p.owned_nodes + s.orig_eids * p.owned_edges))
    candidates = {"route-edge-chunks (one edge chunk)": route, "route-node-blocks (one node block)": node_block,
                  "write-partitions (one partition)": part}
    peak = max(candidates, key=candidates.get)
    blocks = sum(max(1, math.ceil(n / s.node_block_rows)) for n in g.nodes_per_type)
    tasks = g.node_types + g.features + blocks + g.edge_chunks + s.num_parts
    output = partition_bytes(g, s, _mean_nodes(p, node_imbalance(s))) * s.num_parts / (
        edge_imbalance(s) if s.num_parts > 1 else 1)
    secs = _seconds(c["core_seconds"]["shuffle_per_edge"] * (g.edges + p.local_edges * s.num_parts) / 2, s, tasks)
    driver = "partition" if peak.startswith("write") else "chunk" if "edge" in peak else "block"
    return StepPlan("shuffle", f"{s.num_parts} partitions, ~{p.local_edges:,.0f} local edges in the largest",
                    _worker(candidates[peak], s), _flow("shuffle", g), shuffle_scratch(g, s, p), int(output), tasks,
                    secs, peak, driver)


REMOTE_NODE_BYTES = 25  # per local node: `_ID` as int64, its position in the wanted set, the lookup's temporaries
REMOTE_DRAW_BYTES = 64  # per drawn in-edge in a task: frontier and in-CSR positions, their unique sort, source, batch
REMOTE_PAIR_BYTES = 48  # per drawn pair in the flow process: (batch, source), their keys, np.unique's sort


def _by_method(table: dict[str, float], method: str) -> float:
    """A coefficient measured per method: the method's own, else the one for the other methods."""
    return table.get(method, table["other"])


def remote_share(g: GraphSizes, s: Settings, p: Shape) -> tuple[float, float, int]:
    """(task bytes, flow-process bytes, tasks) of validation's remote-share estimate (validate/remote_share.py; on by
    default): per layer, a task per partition reads its edges piece by piece twice and holds its local nodes' IDs and
    the draws for the frontier nodes it owns; the flow process gathers each layer's drawn (batch, source) pairs, at
    most per batch its frontier (batch size x (1 + earlier fanouts), at most the graph's nodes) x fanout, at most the
    graph's edges, over up to `BATCHES` batches per partition (`remote_share_pair_share` of that bound: more where a
    partition gathers the hubs, as its seeds have more in-edges to draw). A task holds
    the mean partition's share of the draws (at 20M-500M these tasks stayed below the input checksums, so a larger
    share for a partition that gathers the hubs was not measurable)."""
    if not s.remote_share:
        return 0.0, 0.0, 0
    c = coefficients.load()
    seeds = min(BATCHES * s.batch_size, g.nodes / s.num_parts)  # per partition
    batches = s.num_parts * math.ceil(seeds / s.batch_size)
    frontier, pairs = min(s.batch_size, seeds), 0.0  # per batch
    for fanout in reversed(s.fanouts):  # DGL samples from the last fanout (the seeds' layer) to the first
        pairs = max(pairs, batches * min(frontier * fanout, g.edges))
        frontier = min(frontier * (1 + fanout), g.nodes)
    drawn = pairs * _by_method(c["remote_share_pair_share"], s.method)
    task = p.local_nodes * REMOTE_NODE_BYTES + drawn / s.num_parts * REMOTE_DRAW_BYTES
    return task, drawn * REMOTE_PAIR_BYTES, s.num_parts * len(s.fanouts)


def validate(g: GraphSizes, s: Settings) -> StepPlan:
    """A scan task per partition (one piece of `piecewise.PIECE_ROWS` edges + the partition's node arrays + its
    original and halo edge IDs, kept or marked, whichever is smaller: `checks.Marks` + a window of the maps it reads,
    `storage.windowed`); checksum tasks per input edge chunk (its rows, their new IDs through windows of the node
    maps) and node feature file (edge features too with original edge IDs); scratch maps
    (`_validate_scratch`); then the remote-share estimate (`remote_share`), two more passes over the edges per
    layer."""
    c, p = coefficients.load(), shape(g, s)
    halo_edges = s.halo_mode == "full" and s.halo_hops >= 1 and s.num_parts > 1
    ids = min(KEPT_BYTES * p.owned_edges, g.edges) * (s.orig_eids + halo_edges)  # checks.Marks: values or marks
    scan = (piecewise.PIECE_ROWS * c["validate_piece_bytes_per_row"]
            + p.local_nodes * c["validate_bytes_per_local_node"] + ids + min(KEPT_BYTES * p.local_nodes, g.nodes)
            + _windows(8 * g.nodes * s.orig_nids, g.edges * s.orig_eids))
    checksums = g.largest_chunk * c["validate_checksum_bytes_per_edge"] + _windows(8 * g.nodes, g.nodes) * s.orig_nids
    remote, remote_flow, remote_tasks = remote_share(g, s, p)
    checked = g.feature_files - (not s.orig_eids) * g.edge_feature_files  # edge features: by their edge IDs
    tasks = s.num_parts * (2 + s.orig_nids) + g.edge_chunks + checked + remote_tasks
    rows = g.edges * (2 if s.full else 1) + p.local_edges * s.num_parts * (1 + 2 * len(s.fanouts) * s.remote_share)
    secs = _seconds(c["core_seconds"]["validate_per_edge"] * rows, s, tasks)
    candidates = {"scan (one partition, piece by piece)": scan, "input-checksums (one input edge chunk)": checksums,
                  "remote-share (one partition's nodes and draws)": remote}
    peak = max(candidates, key=candidates.get)
    return StepPlan("validate", "full" if s.full else "sampled rows + checksums", _worker(candidates[peak], s),
                    int(_flow("validate", g) + remote_flow), _validate_scratch(g, s), 100_000 + 2_000 * s.num_parts,
                    tasks, secs, peak, "partition")


def _windows(*maps: float) -> float:
    """What a task holds of the scratch maps it reads: each whole, or one window of it (`storage.windowed`)."""
    return sum(min(m, windowed.WINDOW_BYTES) for m in maps)


def _validate_scratch(g: GraphSizes, s: Settings) -> int:
    """Validation's maps over the graph (per_partition.create_arrays): new IDs and owners of the nodes with original
    node IDs, owners of the edges with original edge IDs, in-degrees and edge ends with two halo hops."""
    owner = np.dtype(owner_dtype(s.num_parts)).itemsize
    return int(s.orig_nids * (8 + owner) * g.nodes + s.orig_eids * owner * g.edges
               + (s.halo_hops >= 2) * (8 * g.nodes + 16 * g.edges))


def plan_steps(g: GraphSizes, s: Settings) -> list[StepPlan]:
    """The rows of the plan, in run order; after `multilevel`, the workers keep what that step added to them
    (`ml_worker_retained`), and the flow process keeps `ml_flow_extra` over the shuffle's own peak, which a later
    step's larger allocations reuse: it gives the step's per-node arrays back (R-MAT 500M: 0.78 GB in assign, 0.61
    in the shuffle, 2.22 in validation, whose own prediction is 2.41)."""
    first = [ingest(g, s), assign(g, s)]
    later = [shuffle(g, s)] + ([validate(g, s)] if s.validate else [])
    if s.method == "multilevel":
        c = coefficients.load()
        kept = later[0].flow_peak + c["ml_flow_extra"]
        later = [replace(st, worker_peak=st.worker_peak + c["ml_worker_retained"],
                         flow_peak=max(st.flow_peak, kept)) for st in later]
    return first + later
