"""Our DGL binary files against DGL 2.1 itself, both ways (run with bench/dgl_compat.sh test)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
from dgl.data.utils import load_tensors, save_tensors  # noqa: E402

from graphshard.formats.dgl_binary import load_graph, load_tensor_dict, save_graph, save_tensor_dict  # noqa: E402

pytestmark = pytest.mark.dgl

FORMAT_SETS = [("coo",), ("csc",), ("csr",), ("coo", "csc"), ("coo", "csr", "csc")]


def _arrays(seed: int = 0, n: int = 50, m: int = 300):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ndata = {"_ID": rng.permutation(n).astype(np.int64), "inner_node": (rng.random(n) < 0.7).astype(np.uint8),
             "part_id": rng.integers(0, 4, n), "_TYPE": rng.integers(0, 3, n).astype(np.int16),
             "feat": rng.standard_normal((n, 5)).astype(np.float32)}
    edata = {"_ID": rng.permutation(m).astype(np.int64), "inner_edge": np.ones(m, dtype=np.uint8),
             "_TYPE": rng.integers(0, 2, m).astype(np.int32), "w": rng.random(m)}
    return n, src, dst, ndata, edata


def _np(t) -> np.ndarray:
    return t.numpy()


@pytest.mark.parametrize("formats", FORMAT_SETS)
def test_our_graph_loads_in_dgl(tmp_path: Path, formats) -> None:
    n, src, dst, ndata, edata = _arrays()
    save_graph(tmp_path / "graph.dgl", n, src, dst, ndata, edata, formats=formats)
    (g,), labels = dgl.load_graphs(str(tmp_path / "graph.dgl"))
    assert labels == {}
    assert g.ntypes == ["_N"] and g.etypes == ["_E"]
    assert g.num_nodes() == n and g.num_edges() == len(src)
    assert set(g.formats()["created"]) == set(formats)  # exactly the formats asked, as DGL saves them
    u, v = g.edges(order="eid")
    np.testing.assert_array_equal(_np(u), src)
    np.testing.assert_array_equal(_np(v), dst)
    for ours, theirs in ((ndata, g.ndata), (edata, g.edata)):
        assert set(theirs.keys()) == set(ours)
        for name, arr in ours.items():
            assert _np(theirs[name]).dtype == arr.dtype, name
            np.testing.assert_array_equal(_np(theirs[name]), arr)
    # DGL answers structure queries from the stored formats: in-edges come from our CSC when that is all there is
    eids = _np(g.in_edges(7, form="eid"))
    np.testing.assert_array_equal(np.sort(eids), np.flatnonzero(dst == 7))


@pytest.mark.parametrize("formats", FORMAT_SETS)
def test_dgl_graph_loads_in_ours(tmp_path: Path, formats) -> None:
    n, src, dst, ndata, edata = _arrays(seed=1)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    for name, arr in ndata.items():
        g.ndata[name] = torch.from_numpy(arr)
    for name, arr in edata.items():
        g.edata[name] = torch.from_numpy(arr)
    g.create_formats_()
    dgl.save_graphs(str(tmp_path / "graph.dgl"), [g], formats=list(formats))
    ours = load_graph(tmp_path / "graph.dgl")
    assert set(ours.formats) == set(formats)
    assert ours.num_nodes == n
    np.testing.assert_array_equal(ours.src, src)
    np.testing.assert_array_equal(ours.dst, dst)
    for mine, written in ((ours.ndata, ndata), (ours.edata, edata)):
        assert set(mine) == set(written)
        for name, arr in written.items():
            assert mine[name].dtype == arr.dtype, name
            np.testing.assert_array_equal(mine[name], arr)


@pytest.mark.parametrize("formats", [("coo",), ("coo", "csc"), ("coo", "csr")])
def test_our_file_is_byte_identical_to_dgl(tmp_path: Path, formats) -> None:
    """Same graph, one node and one edge field: DGL's save_graphs and ours write the same bytes.

    Only the 4 KiB header's padding differs: DGL leaves it uninitialised, we write zeros.
    """
    n, src, dst, _, _ = _arrays(seed=2)
    ndata, edata = {"_ID": np.arange(n, dtype=np.int64)}, {"_ID": np.arange(len(src), dtype=np.int64)}
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    g.ndata["_ID"], g.edata["_ID"] = torch.from_numpy(ndata["_ID"]), torch.from_numpy(edata["_ID"])
    dgl.save_graphs(str(tmp_path / "theirs.dgl"), [g], formats=list(formats))
    save_graph(tmp_path / "ours.dgl", n, src, dst, ndata, edata, formats=formats)
    ours, theirs = (tmp_path / "ours.dgl").read_bytes(), (tmp_path / "theirs.dgl").read_bytes()
    assert ours[:32] == theirs[:32]
    assert ours[4096:] == theirs[4096:]


def test_tensor_dicts_both_ways(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    tensors = {"paper/feat": rng.standard_normal((9, 4)).astype(np.float32), "paper/label": rng.integers(0, 5, 9),
               "author/age": rng.integers(0, 90, 3).astype(np.int32), "paper/year": np.arange(9, dtype=np.int16),
               "paper/half": rng.standard_normal(9).astype(np.float16), "empty/x": np.zeros((0, 2), np.float64),
               "mask": np.array([True, False, True])}
    save_tensor_dict(tmp_path / "ours.dgl", tensors)
    theirs = load_tensors(str(tmp_path / "ours.dgl"))
    assert set(theirs) == set(tensors)
    for name, arr in tensors.items():
        expected = arr.astype(np.uint8) if arr.dtype == bool else arr
        assert _np(theirs[name]).dtype == expected.dtype, name
        np.testing.assert_array_equal(_np(theirs[name]), expected)

    save_tensors(str(tmp_path / "theirs.dgl"), {k: torch.from_numpy(v) for k, v in tensors.items()})
    back = load_tensor_dict(tmp_path / "theirs.dgl")
    assert set(back) == set(tensors)
    for name, arr in tensors.items():
        np.testing.assert_array_equal(back[name], arr.astype(back[name].dtype))
        assert back[name].shape == arr.shape
    save_tensors(str(tmp_path / "empty.dgl"), {})
    assert load_tensor_dict(tmp_path / "empty.dgl") == {}
