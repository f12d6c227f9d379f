"""multilevel's memory per task is set by the configured sizes, not the graph: the coarsest level, which one task
partitions whole, stays within `multilevel_coarse_nodes` nodes AND `multilevel_coarse_edges` edges on a hub-heavy
graph (where a level at the node cap still carries several times the edge cap), balanced and deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.options import AssignOptions

# Chung-Lu (power law, exponent 2.5) 5,000 nodes / 80,000 edges: with these sizes the level after the node cap held
# 1,241 nodes and 28,935 edges (4.8x the edge cap) before the cap on edges
CAPS = {"multilevel_coarse_nodes": 1500, "multilevel_coarse_edges": 6000, "multilevel_block_edges": 6000}


def _run(md: Path, out: Path, client=None) -> dict:
    assign(md, out, 4, AssignOptions(method="multilevel", **CAPS), client=client)
    return json.loads((out / REPORT_FILE).read_text())


def _parts(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.txt"))}


def test_coarsest_level_within_the_edge_cap_balanced_and_deterministic(make_graph, tmp_path, dask_cluster_client):
    md = make_graph("chunglu", nodes=5000, edges=80000, chunks=2)
    report = _run(md, tmp_path / "a")
    levels = report["partitioner"]["levels"]
    coarsest = levels[-1]
    assert coarsest["nodes"] <= CAPS["multilevel_coarse_nodes"], levels
    assert coarsest["edges"] <= CAPS["multilevel_coarse_edges"], levels
    # the node cap alone was reached a level earlier, with the edges above the cap: coarsening went on for the edges
    within_nodes = [lv for lv in levels if lv["nodes"] <= CAPS["multilevel_coarse_nodes"]]
    assert within_nodes[0]["edges"] > CAPS["multilevel_coarse_edges"] and len(within_nodes) >= 2, levels
    assert report["imbalance"]["nodes"] <= 1.03, report["imbalance"]
    assert 0 < report["edge_cut"]["fraction"] < 0.75, report["edge_cut"]  # random would cut 3/4
    _run(md, tmp_path / "b", client=dask_cluster_client)
    first = _parts(tmp_path / "a")
    assert first and first == _parts(tmp_path / "b")


def test_windowed_gathers_give_the_same_parts(rmat_small, tmp_path, monkeypatch):
    """Neighbour lookups in a level's maps read a window of rows at a time (store.gather over storage.windowed, so
    that a task's RSS holds a window of each map, not every page of it): tiny windows give the same bytes."""
    from graphshard.assign.multilevel import store
    from graphshard.storage import windowed

    small = {"multilevel_coarse_nodes": 300, "multilevel_block_edges": 8000}
    assign(rmat_small, tmp_path / "one", 4, AssignOptions(method="multilevel", **small))
    monkeypatch.setattr(windowed, "WINDOW_BYTES", 97 * 8)
    assign(rmat_small, tmp_path / "windows", 4, AssignOptions(method="multilevel", **small))
    first = _parts(tmp_path / "one")
    assert first and first == _parts(tmp_path / "windows")
    values = np.arange(1000 * 3, dtype=np.int64).reshape(1000, 3)
    store.save_array(tmp_path / "a.npy", values)
    rows = np.random.default_rng(0).integers(0, 1000, 5000)
    assert np.array_equal(store.gather(tmp_path / "a.npy", rows), values[rows])


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("k", [19, 96])
def test_balance_edges_at_a_large_k_stays_balanced_or_ends(make_graph, tmp_path, monkeypatch, k):
    """With `balance_edges` the balanced column is the in-degree. At k=19 no cluster outweighs a part (clusters as
    heavy as the heaviest hub's 10,204 in-degree once made coarse nodes no refinement could balance: 1.60), so
    KaMinPar partitions the coarsest level (METIS's partition beside it) and the in-degrees stay within 1 + ufactor.
    At k=96 that hub alone outweighs a part: KaMinPar's balancer would not end, so METIS alone partitions the
    coarsest level, and the hub's part holds little beside it."""
    from graphshard.assign.multilevel import initial

    heaviest, kaminpar = [], []
    real, real_kaminpar = initial.metis_parts, initial.kaminpar_parts

    def spy(ip, ix, vw, ew, nparts, *a, **kw):
        if nparts == k:  # not the regions' partition (a part per block: regions.py)
            heaviest.append(int(vw.max()))
        return real(ip, ix, vw, ew, nparts, *a, **kw)

    def spy_kaminpar(*a, **kw):
        kaminpar.append(True)
        return real_kaminpar(*a, **kw)
    monkeypatch.setattr(initial, "metis_parts", spy)
    monkeypatch.setattr(initial, "kaminpar_parts", spy_kaminpar)
    md = make_graph("rmat", nodes=50_000, edges=800_000, seed=1, chunks=4)
    caps = {"multilevel_coarse_nodes": 2500, "multilevel_block_edges": 32000, "multilevel_coarse_edges": 32000}
    assign(md, tmp_path / "a", k, AssignOptions(method="multilevel", balance_edges=True, **caps))
    imbalance = json.loads((tmp_path / "a" / REPORT_FILE).read_text())["imbalance"]["in_degree"]
    average = 800_000 / k
    if k == 19:
        assert kaminpar and heaviest[0] <= average and imbalance <= 1.05, (heaviest, imbalance)
    else:
        assert not kaminpar and heaviest and heaviest[0] > 1.03 * average, heaviest
        assert imbalance <= (heaviest[0] + 0.03 * average) / average, (heaviest, imbalance)


@pytest.mark.parametrize("labels", [2000, 2 * 5300 + 1, 2 * 5300 + 2, 2**40])  # direct table, then hashed
def test_compact_labels_numbers_in_first_seen_order(labels):
    from graphshard.assign.multilevel.kernels import compact_labels

    rng = np.random.default_rng(3)
    own, nbr = rng.integers(0, 500, 300), rng.integers(0, 2000, 5000)
    found, own_l, nbr_l = compact_labels(own, nbr, labels)
    both = np.concatenate([own, nbr])
    uniq, first = np.unique(both, return_index=True)
    assert np.array_equal(found, uniq[np.argsort(first)])
    assert np.array_equal(found[own_l], own) and np.array_equal(found[nbr_l], nbr)
    assert own_l.dtype == nbr_l.dtype == np.int32  # block-local indices: half the bytes the kernels stream


def test_local_rows_marks_other_blocks_and_narrows():
    from graphshard.assign.multilevel.kernels import local_rows

    indices = np.array([5, 9, 10, 14, 15, 2**40, 0], dtype=np.int64)
    loc = local_rows(indices, 10, 15)
    assert loc.dtype == np.int32 and loc.tolist() == [-1, -1, 0, 4, -1, -1, -1]


PEAK_SCRIPT = """
import numpy as np
from graphshard.assign.multilevel.kernels import compact_labels
import sys
labels = int(sys.argv[1])
compact_labels(np.arange(4), np.arange(8), 8)  # compiled or loaded before the measurement, both tables
compact_labels(np.arange(4), np.arange(8), 2**40)
entries = 2**23 + 1000  # just past a power of two: a table sized to the next one doubled here
own, nbr = np.arange(entries // 8, dtype=np.int64), np.arange(entries - entries // 8, dtype=np.int64) % 65536
def status(key):
    return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1]) * 1024
open("/proc/self/clear_refs", "w").write("5")
base = status("VmRSS")
compact_labels(own, nbr, labels)
print((status("VmHWM") - base) / entries)
"""


@pytest.mark.parametrize("labels", [2 * (2**23 + 1000) + 1, 2**40])  # the largest direct table; a hashed one
def test_compact_labels_memory_follows_the_block_smoothly(labels):
    """The label table's memory per entry stays the same just past 2^23 entries (where a power-of-two table of
    int64 keys and slots jumped from 32 to 64 bytes per entry): here at most 16 bytes per entry in all (14 measured:
    int32 slots and local indices, the label list no longer than the labels), whether the table is indexed by the
    label (a label range within the hashed table's size) or hashed."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(labels)], capture_output=True, text=True,
                         check=True)
    per_entry = float(out.stdout.split()[-1])
    assert per_entry <= 16, per_entry
