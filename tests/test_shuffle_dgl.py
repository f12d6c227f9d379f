"""the shuffle's halo equals DGL 2.1's own `partition_graph` on the same graph and the same assignment.

DGL runs in its own venv (bench/dgl_compat.sh builds /work/dgl-venv) through bench/dgl_partition.py; its random
assignment is read back from its orig-ID files and given to dispatch. Per partition, the inner and halo node sets and
the inner and halo edge sets are compared in original (type, per-type ID) terms, for num_hops 0, 1 and 2.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_shuffle import shuffle_client  # noqa: F401 - the shared cluster fixture

from graphshard.formats.assignment import write_meta, write_parts
from graphshard.formats.chunked import load_metadata
from graphshard.formats.dgl_binary import load_graph, load_tensor_dict
from graphshard.shuffle import ShuffleOptions, shuffle

DGL_PYTHON = Path(os.environ.get("DGL_VENV", "/work/dgl-venv")) / "bin" / "python"
REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.dgl, pytest.mark.skipif(not DGL_PYTHON.exists(), reason="no DGL venv")]


def _run_dgl(metadata: Path, out: Path, num_parts: int, hops: int) -> subprocess.CompletedProcess:
    return subprocess.run([str(DGL_PYTHON), str(REPO / "bench" / "dgl_partition.py"), "--in", str(metadata),
                           "--out", str(out), "--parts", str(num_parts), "--method", "random", "--hops", str(hops),
                           "--save-orig-ids"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _dgl_partition(metadata: Path, out: Path, num_parts: int, hops: int) -> Path:
    proc = _run_dgl(metadata, out, num_parts, hops)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Path(json.loads(proc.stdout.strip().splitlines()[-1])["config"])


def _orig_of_new(config_path: Path) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(config, type and original per-type ID of every new node ID, same for every new edge ID)."""
    config = json.loads(config_path.read_text())
    out = []
    for kind, fname, mapping, types in (("node", "orig_nids.dgl", config["node_map"], config["ntypes"]),
                                        ("edge", "orig_eids.dgl", config["edge_map"], config["etypes"])):
        total = config["num_nodes"] if kind == "node" else config["num_edges"]
        tid, orig = np.full(total, -1, np.int64), np.full(total, -1, np.int64)
        for p in range(config["num_parts"]):
            ids = load_tensor_dict(config_path.parent / config[f"part-{p}"]["part_graph"].replace("graph.dgl", fname))
            for name, t in types.items():
                lo, hi = mapping[name][p]
                tid[lo:hi], orig[lo:hi] = t, ids[name]
        out += [tid, orig]
    return config, *out


def _sets(config_path: Path) -> list[dict[str, set]]:
    """Per partition: inner/halo nodes and inner/halo edges as sets of (type name, original per-type ID)."""
    config, ntid, norig, etid, eorig = _orig_of_new(config_path)
    result = []
    for p in range(config["num_parts"]):
        g = load_graph(config_path.parent / config[f"part-{p}"]["part_graph"])
        nid, eid = g.ndata["_ID"], g.edata["_ID"]
        inner_n, inner_e = g.ndata["inner_node"].astype(bool), g.edata["inner_edge"].astype(bool)
        nname = np.array(sorted(config["ntypes"], key=config["ntypes"].get))
        ename = np.array(sorted(config["etypes"], key=config["etypes"].get))
        result.append({
            "inner_nodes": set(zip(nname[ntid[nid[inner_n]]], norig[nid[inner_n]])),
            "halo_nodes": set(zip(nname[ntid[nid[~inner_n]]], norig[nid[~inner_n]])),
            "inner_edges": set(zip(ename[etid[eid[inner_e]]], eorig[eid[inner_e]])),
            "halo_edges": set(zip(ename[etid[eid[~inner_e]]], eorig[eid[~inner_e]])),
        })
    return result


@pytest.mark.parametrize("kind,num_parts,hops", [("rmat", 3, 1), ("rmat", 4, 2), ("mag", 3, 2)])
def test_same_partitions_as_dgl(shuffle_client, make_graph, tmp_path, kind, num_parts, hops):  # noqa: F811
    md = (make_graph("rmat", nodes=600, edges=5000, chunks=2, seed=21) if kind == "rmat"
          else make_graph("mag", papers=1000, chunks=2, seed=21))  # every type in every part: DGL needs it
    dgl_config = _dgl_partition(md, tmp_path / "dgl", num_parts, hops)
    g = load_metadata(md)
    dgl_meta, ntid, norig, _, _ = _orig_of_new(dgl_config)
    asg = tmp_path / "asg"
    asg.mkdir()
    part_of_new = np.concatenate([np.full(hi - lo, p) for p, (lo, hi) in
                                  enumerate(_part_ranges(json.loads(dgl_config.read_text())))])
    for nt in g.node_type:
        parts = np.empty(g.num_nodes(nt), np.int64)
        mine = ntid == dgl_meta["ntypes"][nt]  # DGL numbers types in sorted name order
        parts[norig[mine]] = part_of_new[mine]
        write_parts(asg, nt, parts)
    write_meta(asg, num_parts, "random")
    ours = shuffle(md, asg, tmp_path / "ours", ShuffleOptions(halo_hops=hops, save_orig_nids=True,
                                                               save_orig_eids=True), shuffle_client)
    for p, (want, got) in enumerate(zip(_sets(dgl_config), _sets(ours))):
        for key in want:
            assert got[key] == want[key], \
                f"partition {p}: {key} differ from DGL's ({len(got[key])} vs {len(want[key])})"


def _part_ranges(config: dict) -> list[tuple[int, int]]:
    """[start, end) of every partition in the new node-ID space."""
    ranges = np.array([config["node_map"][nt] for nt in config["ntypes"]])
    return [(int(ranges[:, p, 0].min()), int(ranges[:, p, 1].max())) for p in range(config["num_parts"])]


def test_dgl_cannot_do_hops_zero_with_cut_edges(make_graph, tmp_path):
    """Why the shuffle refuses num_hops=0 with several partitions (ShuffleOptions.halo_problem): DGL drops the cut
    edges and then fails its own edge count check, so there is no set DistDGL could train on to compare with."""
    md = make_graph("rmat", nodes=600, edges=5000, chunks=2, seed=21)
    proc = _run_dgl(md, tmp_path / "dgl", 3, 0)
    assert proc.returncode != 0 and "AssertionError" in proc.stderr
