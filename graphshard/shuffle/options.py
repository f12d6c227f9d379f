"""Options of the shuffle + write step (a contract with the config and flow layers: keep the field names)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphshard._deprecated import renamed
from graphshard.storage.field import Where


class ShuffleOptions(BaseModel):
    """How partitions are built and written.

    `halo_mode` "full" builds the halo exactly as DGL's `partition_graph` does for `halo_hops` (1, >= 2);
    "in_edges" writes what DGL's distributed pipeline writes: owned in-edges and their sources as halo nodes (one hop
    whatever `halo_hops` says). `halo_hops` 0 is for one partition only (`halo_problem`).
    `scratch_dir` holds the bucket files of the exchange (default: inside the output's staging folder).
    `node_block_rows` is the number of nodes one Dask task handles when computing new IDs and routing node features.
    """

    model_config = ConfigDict(extra="forbid")

    halo_hops: int = Field(default=1, ge=0)
    halo_mode: Literal["full", "in_edges"] = "full"
    save_orig_nids: bool = False
    save_orig_eids: bool = False
    graph_formats: list[Literal["coo", "csc", "csr"]] = Field(default_factory=lambda: ["coo"])
    scratch_dir: Where | None = None
    node_block_rows: int = Field(default=1 << 20, ge=1)

    def halo_problem(self, num_parts: int) -> str | None:
        """What `halo_hops` must be instead, when it cannot give `num_parts` partitions DGL can train on: with 0 and
        several partitions, each would lack the in-edges from other partitions' nodes that its partition book counts
        (DGL's own partition_graph fails on it)."""
        if self.halo_hops == 0 and num_parts > 1:
            return ("at least 1 with more than one partition: without halo nodes a partition cannot hold its "
                    "in-edges from other partitions, which its partition book counts (DGL's partition_graph fails "
                    "on 0 too)")
        return None

    @field_validator("graph_formats")
    @classmethod
    def _formats(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("graph_formats must name at least one of coo, csc, csr")
        return list(dict.fromkeys(v))


__getattr__ = renamed(__name__, {"DispatchOptions": "graphshard.shuffle.options:ShuffleOptions"})
