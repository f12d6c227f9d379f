"""The coarsest level's partition: on the input graph itself METIS's partition is a candidate beside KaMinPar's, so
multilevel starts refinement from no more than METIS's cut; a coarser level keeps KaMinPar's alone."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from graphshard.assign.multilevel import hierarchy, initial
from graphshard.assign.multilevel.store import open_ro
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import load_metadata


@pytest.mark.parametrize("index", [0, 1])
def test_metis_is_a_candidate_on_the_input_graph_only(rmat_small, tmp_path, monkeypatch, index):
    plan = hierarchy.Plan(4, AssignOptions(method="multilevel"))
    level = replace(hierarchy.build_input(load_metadata(rmat_small), plan, tmp_path / "ml", None), index=index)
    monkeypatch.setattr(initial, "kaminpar_parts", lambda ip, ix, vw, ew, nparts, *a: np.arange(len(vw)) % nparts)
    cut, _ = initial.partition_coarsest(level, nparts=4, balance=plan.balance, seed=0, ufactor=30,
                                        method="kaminpar", tries=1, metis_lib=None)
    indptr, indices, ew = initial.assemble(level)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[:, plan.balance])
    metis = initial._cut(indptr, indices, ew, initial.metis_parts(indptr, indices, vw, ew, 4, 0, 30, None))
    striped = initial._cut(indptr, indices, ew, np.arange(level.nodes) % 4)
    assert metis < striped  # the stand-in for KaMinPar cuts far more than METIS
    assert cut == (metis if index == 0 else striped), (cut, metis, striped)
