"""DGL binary files (formats.md §4): byte layout, round trips, CSR/CSC, bad files."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from graphshard.errors import InputError
from graphshard.formats.dgl_binary import (
    GRAPH_FILE_MAGIC,
    NDARRAY_MAGIC,
    TENSOR_DICT_MAGIC,
    compressed,
    index_graph,
    index_tensor_dict,
    load_graph,
    load_tensor_dict,
    save_graph,
    save_tensor_dict,
)


def _tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "_N/feat": rng.standard_normal((7, 3)).astype(np.float32),
        "paper/year": np.arange(7, dtype=np.int64),
        "paper/train_mask": np.array([1, 0, 1, 1, 0, 0, 1], dtype=bool),
        "half": rng.standard_normal(5).astype(np.float16),
        "u16": np.arange(4, dtype=np.uint16),
        "i8_2d": np.arange(6, dtype=np.int8).reshape(3, 2),
        "f64_3d": rng.standard_normal((2, 2, 2)),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "scalar": np.array(3.5, dtype=np.float64),
    }


def test_tensor_dict_round_trip(tmp_path: Path) -> None:
    tensors = _tensors()
    save_tensor_dict(tmp_path / "t.dgl", tensors)
    back = load_tensor_dict(tmp_path / "t.dgl")
    assert list(back) == list(tensors)
    for name, arr in tensors.items():
        expected = arr.astype(np.uint8) if arr.dtype == bool else arr
        assert back[name].dtype == expected.dtype, name
        assert back[name].shape == expected.shape, name
        np.testing.assert_array_equal(back[name], expected)
    raw, index = (tmp_path / "t.dgl").read_bytes(), index_tensor_dict(tmp_path / "t.dgl")
    for name, at in index.items():  # indexing: each array's dtype, shape and where its bytes lie
        assert (at.dtype, at.shape) == (back[name].dtype, back[name].shape), name
        assert raw[at.offset:at.offset + back[name].nbytes] == back[name].tobytes(), name


def test_tensor_dict_byte_layout(tmp_path: Path) -> None:
    """The exact bytes of a one-entry dict, written out by hand from the spec."""
    save_tensor_dict(tmp_path / "t.dgl", {"ab": np.array([[1, 2, 3]], dtype=np.int32)})
    expected = struct.pack("<QQQ", TENSOR_DICT_MAGIC, 1, 1)
    expected += struct.pack("<Q", 2) + b"ab"
    expected += struct.pack("<QQiii", NDARRAY_MAGIC, 0, 1, 0, 2) + struct.pack("<BBH", 0, 32, 1)
    expected += struct.pack("<qqq", 1, 3, 12) + struct.pack("<3i", 1, 2, 3)
    assert (tmp_path / "t.dgl").read_bytes() == expected


def test_empty_tensor_dict(tmp_path: Path) -> None:
    save_tensor_dict(tmp_path / "e.dgl", {})
    assert (tmp_path / "e.dgl").read_bytes() == struct.pack("<QQQ", TENSOR_DICT_MAGIC, 0, 0)
    assert load_tensor_dict(tmp_path / "e.dgl") == {}


def test_non_contiguous_and_big_endian_inputs_are_stored_as_values(tmp_path: Path) -> None:
    base = np.arange(20, dtype=np.int64).reshape(4, 5)
    tensors = {"strided": base[:, ::2], "fortran": np.asfortranarray(base), "be": base.astype(">i4")}
    save_tensor_dict(tmp_path / "t.dgl", tensors)
    back = load_tensor_dict(tmp_path / "t.dgl")
    for name, arr in tensors.items():
        np.testing.assert_array_equal(back[name], arr)
    assert back["be"].dtype == np.dtype("<i4")


def test_unsupported_dtype_is_refused_without_leaving_a_file(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="complex"):
        save_tensor_dict(tmp_path / "t.dgl", {"c": np.zeros(2, dtype=np.complex64)})
    assert list(tmp_path.iterdir()) == []


def _graph(num_nodes: int = 9, num_edges: int = 30, seed: int = 1):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = rng.integers(0, num_nodes, num_edges)
    ndata = {"_ID": np.arange(100, 100 + num_nodes, dtype=np.int64),
             "inner_node": (np.arange(num_nodes) < 5).astype(np.uint8),
             "_TYPE": np.zeros(num_nodes, dtype=np.int16)}
    edata = {"_ID": np.arange(num_edges, dtype=np.int64)[::-1].copy(),
             "inner_edge": np.ones(num_edges, dtype=np.uint8),
             "_TYPE": np.zeros(num_edges, dtype=np.int32)}
    return num_nodes, src, dst, ndata, edata


@pytest.mark.parametrize("formats", [("coo",), ("coo", "csc"), ("csc",), ("csr",), ("coo", "csr", "csc")])
def test_graph_round_trip(tmp_path: Path, formats: tuple[str, ...]) -> None:
    n, src, dst, ndata, edata = _graph()
    save_graph(tmp_path / "g.dgl", n, src, dst, ndata, edata, formats=formats)
    g = load_graph(tmp_path / "g.dgl")
    assert g.num_nodes == n and g.num_edges == len(src)
    assert set(g.formats) == set(formats)
    np.testing.assert_array_equal(g.src, src)
    np.testing.assert_array_equal(g.dst, dst)
    for written, read in ((ndata, g.ndata), (edata, g.edata)):
        assert list(read) == list(written)
        for name in written:
            assert read[name].dtype == written[name].dtype
            np.testing.assert_array_equal(read[name], written[name])


def test_graph_header_and_trailer(tmp_path: Path) -> None:
    n, src, dst, ndata, edata = _graph()
    save_graph(tmp_path / "g.dgl", n, src, dst, ndata, edata)
    raw = (tmp_path / "g.dgl").read_bytes()
    assert struct.unpack_from("<QQQQ", raw, 0) == (GRAPH_FILE_MAGIC, 2, 2, 1)
    assert raw[32:4096] == b"\0" * (4096 - 32)
    gdata_start = struct.unpack_from("<Q", raw, 4096)[0]
    assert gdata_start == 4096 + 8 + 8  # empty label dict
    blob_size = struct.unpack_from("<Q", raw, len(raw) - 8)[0]
    assert blob_size == 16
    count, first = struct.unpack_from("<QQ", raw, len(raw) - 8 - blob_size)
    assert (count, first) == (1, gdata_start)


def test_csc_is_csr_of_reversed_graph(tmp_path: Path) -> None:
    n, src, dst = 4, np.array([0, 2, 3, 1, 2]), np.array([1, 1, 0, 3, 1])
    indptr, indices, eids = compressed(dst, src, n)
    np.testing.assert_array_equal(indptr, [0, 1, 4, 4, 5])
    np.testing.assert_array_equal(indices, [3, 0, 2, 2, 1])  # sources, grouped by destination, edge-ID order inside
    np.testing.assert_array_equal(eids, [2, 0, 1, 4, 3])
    save_graph(tmp_path / "g.dgl", n, src, dst, formats=("csc",))
    raw = (tmp_path / "g.dgl").read_bytes()
    for arr in (indptr, indices, eids):  # the CSC section holds these arrays verbatim
        assert arr.tobytes() in raw


def test_graph_without_edges_or_data(tmp_path: Path) -> None:
    empty = np.zeros(0, dtype=np.int64)
    save_graph(tmp_path / "g.dgl", 3, empty, empty, formats=("coo", "csc"))
    g = load_graph(tmp_path / "g.dgl")
    assert (g.num_nodes, g.num_edges, g.ndata, g.edata) == (3, 0, {}, {})


def test_graph_writer_checks_shapes(tmp_path: Path) -> None:
    n, src, dst, ndata, edata = _graph()
    with pytest.raises(ValueError, match="ndata\\['_ID'\\]"):
        save_graph(tmp_path / "g.dgl", n + 1, src, dst, ndata, edata)
    with pytest.raises(ValueError, match="unknown graph formats"):
        save_graph(tmp_path / "g.dgl", n, src, dst, formats=("coo", "dense"))
    assert list(tmp_path.iterdir()) == []


def test_saved_files_are_deterministic(tmp_path: Path) -> None:
    n, src, dst, ndata, edata = _graph()
    for name in ("a.dgl", "b.dgl"):
        save_graph(tmp_path / name, n, src, dst, ndata, edata, formats=("coo", "csc"))
    assert (tmp_path / "a.dgl").read_bytes() == (tmp_path / "b.dgl").read_bytes()


@pytest.mark.parametrize("cut", [10, 4096, 4200, -3])
def test_truncated_graph_names_the_file(tmp_path: Path, cut: int) -> None:
    n, src, dst, ndata, edata = _graph()
    path = tmp_path / "graph.dgl"
    save_graph(path, n, src, dst, ndata, edata)
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(InputError, match="graph.dgl.*truncated|graph.dgl.*expected") as loaded:
        load_graph(path)
    with pytest.raises(InputError) as indexed:  # the same walk, seeking over the data: the same error
        index_graph(path)
    assert str(indexed.value) == str(loaded.value)


def test_wrong_magic_and_missing_file(tmp_path: Path) -> None:
    save_tensor_dict(tmp_path / "t.dgl", {"a": np.zeros(2)})
    with pytest.raises(InputError, match="magic number"):
        load_graph(tmp_path / "t.dgl")
    with pytest.raises(InputError, match="nope.dgl"):
        load_tensor_dict(tmp_path / "nope.dgl")


def test_memmap_input_round_trips(tmp_path: Path) -> None:
    """Memory-mapped arrays (how the shuffle holds large columns) are written as their values."""
    mm = np.lib.format.open_memmap(tmp_path / "big.npy", mode="w+", dtype=np.int64, shape=(1_000_000,))
    mm[:] = np.arange(1_000_000)
    save_tensor_dict(tmp_path / "t.dgl", {"ids": mm})
    np.testing.assert_array_equal(load_tensor_dict(tmp_path / "t.dgl")["ids"], mm)


def test_csc_rows_are_sorted_by_edge_type_when_typed(tmp_path: Path) -> None:
    """Like DGL's partitioner (sort_csc_by_tag), in-edges of a node are grouped by `_TYPE`, then edge-ID order."""
    src, dst = np.array([0, 1, 2, 3, 0]), np.array([4, 4, 4, 4, 1])
    etype = np.array([1, 0, 1, 0, 0], dtype=np.int32)
    indptr, indices, eids = compressed(dst, src, 5, etype)
    np.testing.assert_array_equal(indptr, [0, 0, 1, 1, 1, 5])
    np.testing.assert_array_equal(eids, [4, 1, 3, 0, 2])
    np.testing.assert_array_equal(indices, [0, 1, 3, 0, 2])
    save_graph(tmp_path / "g.dgl", 5, src, dst, edata={"_TYPE": etype}, formats=("csc",))
    raw = (tmp_path / "g.dgl").read_bytes()
    assert eids.tobytes() in raw
    g = load_graph(tmp_path / "g.dgl")
    np.testing.assert_array_equal(g.src, src)
    np.testing.assert_array_equal(g.dst, dst)
