"""Options of the assignment step (`graphshard assign`), with DGL's meanings where DGL has the option.

Fields:
- `method`: random | metis | parmetis | kaminpar | multilevel | file.
- `seed`: every random choice (random draws, METIS/ParMETIS/KaMinPar seeds) derives from it; in [0, 2^31 - 1], what
  numpy's generators (no negative seeds) and METIS's and KaMinPar's 32-bit seed options all take.
- `balanced` (random): exactly balanced counts per node type (part sizes differ by at most one node).
- `balance_ntypes` (metis, parmetis, multilevel): balance classes; every class becomes one 0/1 METIS constraint column,
  as in DGL's `balance_ntypes`. An entry is either `"ntype"` (one class per node type) or `"<ntype>/<feat>"` (the
  values of an integer or bool node feature of that type, e.g. `"paper/train_mask"`; nodes of the other types form one
  class of their own). Several entries combine into product classes; only non-empty classes become columns.
- `balance_edges` (metis, parmetis, multilevel): balance in-degrees too; as in DGL, one in-degree column per class
  (or a single in-degree column when there are no classes, which then replaces the node-count balance).
- `objtype` (metis; kaminpar and multilevel `cut` or `fetch`): `cut` minimises the edge cut, `vol` the total
  communication volume, `fetch` what neighbour-sampled training fetches from other partitions: every edge weighs
  the expected times sampling takes it (graphshard/assign/fetch.py), and the weighted cut is minimised.
- `sample_fanouts` (with `fetch`): the training's fanouts per layer, input layer first as in DGL's
  `NeighborSampler([10, 25])`. `sample_seeds` (with `fetch`): `"<ntype>/<feat>"`, the nodes whose feature is
  non-zero seed the mini-batches (e.g. `"paper/train_mask"`); unset: the first feature entry of `balance_ntypes`,
  else every node. `sample_batch_size` (with `fetch`): seeds per mini-batch (a node is fetched once per batch).
  `fetch_refine_rounds` (metis, kaminpar with `fetch`): rounds of the post-pass that moves and swaps nodes to lower
  the expected remote share itself (graphshard/assign/fetch_refine.py); 0 turns it off.
- `num_trainers_per_machine`: partition into `num_parts * T` parts, record each node's trainer id
  (`trainer_ids/<ntype>.txt`), then merge: part = trainer_id // T.
- `ufactor`: allowed imbalance in thousandths (30 = 1.03), for every constraint.
- `dir` (file): the user's assignment folder.
- `mpi_ranks`, `parmetis_lib` (parmetis): number of MPI ranks; path of a `libparmetis.so` (default: Debian's int64
  PT-Scotch ParMETIS interface).
- `kaminpar_preset` (kaminpar): one of `kaminpar.context_names()`; `kaminpar_threads`: threads KaMinPar uses
  (1, the default, is reproducible for a seed; more threads are faster but give a different result on every run).
- `multilevel_coarse_nodes` (multilevel): coarsen until a level has at most this many nodes, then partition it
  with METIS in one task (the one task that holds a whole graph: this one); `multilevel_coarse_edges`: and at most
  this many edges (coarsening goes on while a level has more: this bounds that task's memory, about 140 B per edge,
  whatever the graph); a graph within the edge cap but over the node cap is also partitioned whole by METIS in one
  such task, and that partition, refined, is kept when it cuts less. `multilevel_block_edges`: input edges
  per block task at most (blocks: `multilevel_blocks`; the block count does not depend on the cluster, so results
  do not either). `multilevel_lp_rounds`: label propagation rounds per coarsening level (each moves a seeded half of
  the nodes); `multilevel_refine_rounds`: refinement rounds per level at most. `multilevel_initial`: what partitions
  the coarsest level, `kaminpar` (its strong preset, when only node counts are balanced; METIS otherwise; on the
  input graph itself, the smaller cut of the two) or `metis`,
  the best of `multilevel_initial_tries` seeds; `multilevel_fm`: a boundary FM pass after each refinement sweep;
  `multilevel_jet`: a Jet pass (moves that may overfill a part, then a rebalance) before it in each level's first
  refinement round, and in each of the first `multilevel_jet_rounds` on a level of several blocks (default 2: more
  rounds cut a little less for more time).
  `multilevel_vcycles`: cycles after the first, each coarsening again with clusters kept within the parts found
  and refining back (about one more coarsening and refinement each). `multilevel_regions`: a graph of several
  blocks whose first coarsening splits into one region per block with few edges between them (a mesh, a geometric
  graph) is renumbered so that each block is a region, and partitioned again (about one more coarsening).
- `metis_lib` (metis, multilevel): path of a `libmetis.so` (default: Debian's libmetis5, else the one cmeel-metis
  ships). `metis_niter` (metis): refinement iterations per uncoarsening level (METIS_OPTION_NITER; unset: METIS's
  default, 10); `partition_graph` sets 1, as DGL's `partition_graph` does (faster, a slightly larger cut).
- `random`, `metis`, `parmetis`, `kaminpar`, `multilevel`, `file`: per-method blocks holding the options only that
  method reads (e.g. `metis: {balance_ntypes: [paper/train_mask]}`); the chosen method's block overrides the flat
  values, the other blocks are not read, so switching `method` is one edit.

Which method honours which option is data (`HONOURS`, `CONFLICTS`), read by the config check without importing any
partitioner: a flat option the chosen method does not honour is ignored with a warning (as DGL's `partition_graph`
does for random's balance arguments), unless ignoring it would silently give another result than asked for (e.g.
`balance_ntypes` with kaminpar): that is refused before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, create_model

from graphshard.errors import GraphshardError
from graphshard.storage.field import Where

METHODS = ("random", "metis", "parmetis", "kaminpar", "multilevel", "file")
SEED_MAX = 2**31 - 1  # METIS's and KaMinPar's seed options are 32-bit ints
COMMON = frozenset({"method", "seed", "ufactor", "num_trainers_per_machine"})  # read by every method
MULTILEVEL = frozenset({"multilevel_coarse_nodes", "multilevel_coarse_edges", "multilevel_block_edges",
                        "multilevel_lp_rounds", "multilevel_refine_rounds", "multilevel_initial",
                        "multilevel_initial_tries", "multilevel_fm", "multilevel_jet", "multilevel_jet_rounds",
                        "multilevel_vcycles", "multilevel_regions"})
FETCH = frozenset({"objtype", "sample_fanouts", "sample_seeds", "sample_batch_size"})  # the objective, fetch's inputs
FETCH_REFINE = frozenset({"fetch_refine_rounds"})  # whole-graph methods: the post-pass on the expected remote share
#: method -> the options it reads besides COMMON (what its `assign.<method>` block may hold)
HONOURS: dict[str, frozenset[str]] = {
    "random": frozenset({"balanced"}),
    "metis": frozenset({"balance_ntypes", "balance_edges", "metis_lib", "metis_niter"}) | FETCH | FETCH_REFINE,
    "parmetis": frozenset({"balance_ntypes", "balance_edges", "mpi_ranks", "parmetis_lib", "parmetis_idx_bits"}),
    "kaminpar": frozenset({"kaminpar_preset", "kaminpar_threads"}) | FETCH | FETCH_REFINE,
    "multilevel": frozenset({"balance_ntypes", "balance_edges", "metis_lib"}) | MULTILEVEL | FETCH,
    "file": frozenset({"dir"}),
}
_CONSTRAINTS = "KaMinPar balances node counts only: no balance constraints"
#: (method, option) -> why ignoring the option would give another partition than asked for: refused, not ignored
CONFLICTS: dict[tuple[str, str], str] = {
    ("kaminpar", "balance_ntypes"): _CONSTRAINTS,
    ("kaminpar", "balance_edges"): _CONSTRAINTS,
    ("kaminpar", "objtype"): "KaMinPar minimises the (weighted) edge cut only: objtype cut or fetch",
    ("parmetis", "objtype"): "ParMETIS_V3_PartKway minimises the edge cut only",
    ("multilevel", "objtype"): "its refinement minimises the (weighted) edge cut only: objtype cut or fetch",
}
#: (method, option) -> the only values the method honours; another value is refused with CONFLICTS' reason
ONLY_VALUES: dict[tuple[str, str], tuple] = {
    ("kaminpar", "objtype"): ("cut", "fetch"),
    ("multilevel", "objtype"): ("cut", "fetch"),
}
#: why a method ignores an option, by method, else by option (the warning's reason)
IGNORED_BECAUSE: dict[str, str] = {
    "random": "it draws parts at random and, as DGL's partition_graph, ignores balance and objective options",
    "file": "the assignment folder is used as it is",
    "balanced": "random only: this method balances node counts itself, within ufactor",
}


# More than one multilevel block: a multiple of this many, so that a round's tasks fill 2 or 4 threads evenly (a
# round waits for its slowest thread). R-MAT 1M / 20M on 2 workers: 5 -> 8 level-0 blocks (levels 1-2: 5, 3 -> 8,
# 4), 31.9 -> 29.3 s, cut 10.34% -> 10.19%, worker peak 0.76 -> 0.60 GB (BENCHMARKS.md, issue 18, "blocks that
# fill the threads").
BLOCK_MULTIPLE = 4
MAX_LEVELS = 30  # a multilevel hierarchy's levels at most (the plan's model counts them too)
# METIS partitions a seeded sample of `multilevel_coarse_edges` of the input level's edges when it has more, up to
# this many times as many: a sample of half or more of the edges (2/3 measured: a block model 900k and
# Barabasi-Albert 1.2M with 6M edges, whose many levels lost to METIS by 1.5-3.4%; BENCHMARKS.md, issue 18,
# "METIS's partition of a sample of the input graph").
SAMPLED_INPUT = 2


def multilevel_blocks(edges: int, block_edges: int, most: int | None = None) -> int:
    """Blocks of a multilevel level for `edges` undirected edges: enough for `block_edges` each, rounded up to a
    multiple of BLOCK_MULTIPLE when more than one, and at most `most` (a coarse level: its finer level's count)."""
    blocks = max(1, -(-edges // block_edges))
    if blocks > 1:
        blocks = -(-blocks // BLOCK_MULTIPLE) * BLOCK_MULTIPLE
    return blocks if most is None else min(blocks, most)


class FlatOptions(BaseModel):
    """Every option of every method, flat (see the module docstring for each field)."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["random", "metis", "parmetis", "kaminpar", "multilevel", "file"] = "random"
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    balanced: bool = False
    balance_ntypes: list[str] = Field(default_factory=list)
    balance_edges: bool = False
    objtype: Literal["cut", "vol", "fetch"] = "cut"
    sample_fanouts: list[PositiveInt] = Field(default_factory=lambda: [10, 25], min_length=1)
    sample_seeds: str | None = None
    sample_batch_size: int = Field(default=1000, ge=1)
    fetch_refine_rounds: int = Field(default=20, ge=0)
    num_trainers_per_machine: int = Field(default=1, ge=1)
    ufactor: int = Field(default=30, ge=1)
    dir: Where | None = None
    mpi_ranks: int = Field(default=2, ge=1)
    parmetis_lib: str | None = None
    parmetis_idx_bits: Literal[32, 64] = 64
    kaminpar_preset: str = "default"
    kaminpar_threads: int = Field(default=1, ge=1)
    metis_lib: str | None = None
    metis_niter: int | None = Field(default=None, ge=1)
    multilevel_coarse_nodes: int = Field(default=250_000, ge=1)
    multilevel_coarse_edges: int = Field(default=4_000_000, ge=1)
    multilevel_block_edges: int = Field(default=4_000_000, ge=1)
    multilevel_lp_rounds: int = Field(default=6, ge=1)
    multilevel_refine_rounds: int = Field(default=8, ge=0)
    multilevel_initial: Literal["kaminpar", "metis"] = "kaminpar"
    multilevel_initial_tries: int = Field(default=1, ge=1)
    multilevel_fm: bool = True
    multilevel_jet: bool = True
    multilevel_jet_rounds: int = Field(default=2, ge=1)
    multilevel_vcycles: int = Field(default=0, ge=0)
    multilevel_regions: bool = True


class MethodBlock(BaseModel):
    """Base of the per-method blocks (`assign.<method>`): only the options that method reads, unset = the flat value."""

    model_config = ConfigDict(extra="forbid")


def _block(method: str) -> type[MethodBlock]:
    """The `assign.<method>` block model: that method's options, typed as in AssignOptions, all optional."""
    fields = {name: (FlatOptions.model_fields[name].annotation | None, None) for name in sorted(HONOURS[method])}
    return create_model(f"{method.capitalize()}Block", __base__=MethodBlock, **fields)


RandomBlock, MetisBlock, ParmetisBlock, KaminparBlock, MultilevelBlock, FileBlock = map(_block, METHODS)


class AssignOptions(FlatOptions):
    """How the assignment step decides each node's partition: the flat options plus one block per method."""

    random: RandomBlock | None = None
    metis: MetisBlock | None = None
    parmetis: ParmetisBlock | None = None
    kaminpar: KaminparBlock | None = None
    multilevel: MultilevelBlock | None = None
    file: FileBlock | None = None

    @property
    def has_constraints(self) -> bool:
        """True when balance columns beyond plain node counts are asked for."""
        return bool(self.balance_ntypes) or self.balance_edges


@dataclass(frozen=True)
class IgnoredOption:
    """A flat option the chosen method does not read: `warning()` is the one line a user sees."""

    method: str
    option: str

    def warning(self, key: str) -> str:
        why = IGNORED_BECAUSE.get(self.method) or IGNORED_BECAUSE.get(self.option, "not read by this method")
        return f"{key} is ignored by method '{self.method}' ({why})"


class OptionConflict(GraphshardError):
    """An option the chosen method cannot honour and must not ignore; `line(key)` names it as the user wrote it."""

    def __init__(self, method: str, option: str):
        self.method, self.option = method, option
        super().__init__(self.line(option))

    def line(self, key: str, block: str = "") -> str:
        able = [m for m in METHODS if self.option in HONOURS[m] and (m, self.option) not in CONFLICTS]
        move = f", move it under {' or '.join(f'{block}{m}' for m in able)}" if block else ""
        return (f"{key}: method '{self.method}' cannot honour it ({CONFLICTS[(self.method, self.option)]}); "
                f"remove {key}{move}, or choose method {' or '.join(able)}")

    def __reduce__(self):
        return (type(self), (self.method, self.option))


def resolve(options: AssignOptions) -> tuple[AssignOptions, list[IgnoredOption]]:
    """The options the chosen method runs with: its block over the flat values, the flat options it does not read
    back at their defaults (so they neither change its result nor its cache key), no blocks; and what was ignored.
    Raises OptionConflict for a flat option the method cannot honour and must not ignore."""
    method = options.method
    values = options.model_dump(exclude=set(METHODS))
    defaults = AssignOptions().model_dump(exclude=set(METHODS))
    ignored = []
    for name, value in values.items():
        if name in COMMON or name in HONOURS[method] or value == defaults[name]:
            continue
        if (method, name) in CONFLICTS:
            raise OptionConflict(method, name)
        ignored.append(IgnoredOption(method, name))
        values[name] = defaults[name]
    block = getattr(options, method)
    if block is not None:
        values.update(block.model_dump(exclude_none=True))
    for name, allowed in ONLY_VALUES.items():
        if name[0] == method and values[name[1]] not in allowed:
            raise OptionConflict(method, name[1])
    return AssignOptions(**values), ignored
