"""Options of the assignment step (`graphshard assign`), with DGL's meanings where DGL has the option.

Fields:
- `method`: random | metis | parmetis | kaminpar | multilevel | file.
- `seed`: every random choice (random draws, METIS/ParMETIS/KaMinPar seeds) derives from it.
- `balanced` (random): exactly balanced counts per node type (part sizes differ by at most one node).
- `balance_ntypes` (metis, parmetis, multilevel): balance classes; every class becomes one 0/1 METIS constraint column, as in
  DGL's `balance_ntypes`. An entry is either `"ntype"` (one class per node type) or `"<ntype>/<feat>"` (the values of
  an integer or bool node feature of that type, e.g. `"paper/train_mask"`; nodes of the other types form one class of
  their own). Several entries combine into product classes; only non-empty classes become columns.
- `balance_edges` (metis, parmetis, multilevel): balance in-degrees too; as in DGL, one in-degree column per class (or a single
  in-degree column when there are no classes, which then replaces the node-count balance).
- `objtype` (metis): `cut` minimises the edge cut, `vol` the total communication volume.
- `num_trainers_per_machine`: partition into `num_parts * T` parts, record each node's trainer id
  (`trainer_ids/<ntype>.txt`), then merge: part = trainer_id // T.
- `ufactor`: allowed imbalance in thousandths (30 = 1.03), for every constraint.
- `dir` (file): the user's assignment folder.
- `mpi_ranks`, `parmetis_lib` (parmetis): number of MPI ranks; path of a `libparmetis.so` (default: Debian's int64
  PT-Scotch ParMETIS interface).
- `kaminpar_preset` (kaminpar): one of `kaminpar.context_names()`; `kaminpar_threads`: threads KaMinPar uses
  (1, the default, is reproducible for a seed; more threads are faster but give a different result on every run).
- `multilevel_coarse_nodes` (multilevel): coarsen until a level has at most this many nodes, then partition it
  with METIS in one task (the one task that holds a whole graph: this one). `multilevel_block_edges`: input edges
  per block task (blocks = ceil(edges / this); the block count does not depend on the cluster, so results do not
  either). `multilevel_lp_rounds`: label propagation rounds per coarsening level (each moves a seeded half of
  the nodes); `multilevel_refine_rounds`: refinement rounds per level at most. `multilevel_initial`: what partitions
  the coarsest level, `kaminpar` (its strong preset, when only node counts are balanced; METIS otherwise) or `metis`
  (the best of `multilevel_initial_tries` seeds); `multilevel_fm`: a boundary FM pass after each refinement sweep.
- `metis_lib` (metis, multilevel): path of a `libmetis.so` (default: Debian's libmetis5, else the one cmeel-metis ships).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

METHODS = ("random", "metis", "parmetis", "kaminpar", "multilevel", "file")


class AssignOptions(BaseModel):
    """How the assignment step decides each node's partition (see the module docstring for every field)."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["random", "metis", "parmetis", "kaminpar", "multilevel", "file"] = "random"
    seed: int = 0
    balanced: bool = False
    balance_ntypes: list[str] = Field(default_factory=list)
    balance_edges: bool = False
    objtype: Literal["cut", "vol"] = "cut"
    num_trainers_per_machine: int = Field(default=1, ge=1)
    ufactor: int = Field(default=30, ge=1)
    dir: Path | None = None
    mpi_ranks: int = Field(default=2, ge=1)
    parmetis_lib: str | None = None
    parmetis_idx_bits: Literal[32, 64] = 64
    kaminpar_preset: str = "default"
    kaminpar_threads: int = Field(default=1, ge=1)
    metis_lib: str | None = None
    multilevel_coarse_nodes: int = Field(default=250_000, ge=1)
    multilevel_block_edges: int = Field(default=4_000_000, ge=1)
    multilevel_lp_rounds: int = Field(default=6, ge=1)
    multilevel_refine_rounds: int = Field(default=8, ge=0)
    multilevel_initial: Literal["kaminpar", "metis"] = "kaminpar"
    multilevel_initial_tries: int = Field(default=1, ge=1)
    multilevel_fm: bool = True

    @property
    def has_constraints(self) -> bool:
        """True when balance columns beyond plain node counts are asked for."""
        return bool(self.balance_ntypes) or self.balance_edges
