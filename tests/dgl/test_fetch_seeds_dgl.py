"""`objtype: fetch` with the mini-batch seeds a subset (a `train_mask`, as DistDGL trains), measured by DGL's own
DataLoader + NeighborSampler seeded at each partition's training nodes, and the estimate against that sampling.

Run inside the DGL venv: `bash bench/dgl_compat.sh test`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # bench/dgl_share.py

from dgl_share import dgl_share  # noqa: E402

from graphshard.assign import REPORT_FILE, assign  # noqa: E402
from graphshard.assign.fetch import input_edges, seed_mask  # noqa: E402
from graphshard.assign.options import AssignOptions  # noqa: E402
from graphshard.formats.assignment import read_parts  # noqa: E402
from graphshard.formats.chunked import load_metadata  # noqa: E402
from graphshard.generate import generate_rmat  # noqa: E402
from graphshard.shuffle import ShuffleOptions, shuffle  # noqa: E402
from graphshard.validate.layout import load_layout  # noqa: E402
from graphshard.validate.remote_share import Sampling, estimate  # noqa: E402

pytestmark = pytest.mark.dgl
FANOUTS, BATCH, TRAIN = [10, 25], 100, "_N/train_mask"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """R-MAT 12k / 120k with 20% of the nodes in train_mask: (metadata, DGL graph, seed mask)."""
    meta = generate_rmat(tmp_path_factory.mktemp("g") / "g", nodes=12_000, edges=120_000, chunks=2, seed=5,
                         train_share=0.2)
    g = load_metadata(meta)
    src, dst = input_edges(g)
    graph = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=g.total_nodes)
    return meta, graph, seed_mask(g, TRAIN, 0, g.total_nodes) > 0


def parts_of(meta: Path, out: Path, k: int, **opts) -> tuple[np.ndarray, dict]:
    """Every node's part and the assignment report's imbalance per constraint, balanced per train-mask class."""
    assign(meta, out, k, AssignOptions(method="metis", balance_ntypes=[TRAIN], sample_batch_size=BATCH, **opts))
    return read_parts(out, "_N", load_metadata(meta).total_nodes, k), json.loads((out / REPORT_FILE).read_text())


@pytest.mark.parametrize("k, bound", [(4, 0.9), (16, 0.95)])  # k=16 measured 0.91x (a small graph: see BENCHMARKS)
def test_fetch_lowers_what_dgl_samples_from_training_seeds(seeded, tmp_path, k, bound):
    meta, graph, seeds = seeded
    cut, _ = parts_of(meta, tmp_path / "cut", k)
    fetch, report = parts_of(meta, tmp_path / "fetch", k, objtype="fetch")
    assert report["sampling"]["seeds"] == TRAIN
    assert max(report["imbalance"].values()) <= 1.03 + 1e-9, report["imbalance"]  # both train-mask classes
    theirs = {name: dgl_share(graph, parts, seeds, FANOUTS, BATCH, 8, 1)["overall"]
              for name, parts in (("cut", cut), ("fetch", fetch))}
    assert theirs["fetch"] <= bound * theirs["cut"], theirs
    config = shuffle(meta, tmp_path / "fetch", tmp_path / "set", ShuffleOptions(), None)
    written = estimate(load_layout(config), Sampling(tuple(FANOUTS), BATCH, 8, 3, TRAIN))
    assert abs(written["overall"] - theirs["fetch"]) <= 0.03, (written["overall"], theirs)
