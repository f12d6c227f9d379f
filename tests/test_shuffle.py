"""shuffle(): generated graphs -> partitions, re-read and checked against the input (tests/invariants.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from invariants import check_partitions

from graphshard.cli import main
from graphshard.commands.shuffle import STORE_CHOICES
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.assignment import write_meta, write_parts
from graphshard.formats.chunked import load_metadata
from graphshard.formats.dgl_binary import load_graph
from graphshard.shuffle import ShuffleOptions, shuffle
from graphshard.shuffle.graphbolt import GraphboltOptions, missing_modules

ALL_ORIG = {"save_orig_nids": True, "save_orig_eids": True}


@pytest.fixture(scope="session")
def shuffle_client(dask_cluster_client):
    return dask_cluster_client


def random_assignment(metadata: Path, folder: Path, num_parts: int, seed: int = 0,
                      fixed: dict[str, int] | None = None, trainers: int = 1) -> Path:
    """A seeded random assignment folder; node types in `fixed` go entirely to the given partition; with `trainers`
    > 1, trainer ids too (`trainer_ids/`, partition = trainer id // trainers)."""
    g = load_metadata(metadata)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for nt in g.node_type:
        n = g.num_nodes(nt)
        parts = np.full(n, fixed[nt]) if fixed and nt in fixed else rng.integers(0, num_parts, n)
        if trainers > 1:
            ids = parts * trainers + rng.integers(0, trainers, n)
            write_parts(folder / "trainer_ids", nt, ids)
        write_parts(folder, nt, parts)
    write_meta(folder, num_parts, "random", trainers=trainers)
    return folder


def run_and_check(client, metadata, tmp_path, num_parts, halo_mode="full", seed=0, fixed=None, **options):
    asg = random_assignment(metadata, tmp_path / "asg", num_parts, seed, fixed)
    opts = ShuffleOptions(halo_mode=halo_mode, **options)
    config = shuffle(metadata, asg, tmp_path / "out", opts, client)
    assert config == (tmp_path / "out" / f"{load_metadata(metadata).graph_name}.json").resolve()
    return config, check_partitions(config, metadata, asg, halo_mode)


@pytest.mark.parametrize("fmt,chunks,num_parts,hops", [
    ("numpy", 3, 1, 1),
    ("csv", 2, 2, 1),
    ("parquet", 4, 4, 2),
    ("mixed", 3, 7, 1),
    ("numpy", 3, 1, 0),
    ("numpy", 1, 4, 3),
    ("numpy", 2, 13, 1),  # more partitions than MASK_PASSES_MAX: cut edges grouped by a sort
])
def test_homogeneous(shuffle_client, make_graph, tmp_path, fmt, chunks, num_parts, hops):
    md = make_graph("rmat", nodes=400, edges=3000, chunks=chunks, fmt=fmt, seed=1)
    _, totals = run_and_check(shuffle_client, md, tmp_path, num_parts, halo_hops=hops, **ALL_ORIG)
    if num_parts > 1 and hops > 0:
        assert totals["halo_nodes"] > 0 and totals["halo_edges"] > 0


@pytest.mark.parametrize("fmt,num_parts,hops", [("numpy", 2, 1), ("parquet", 4, 2), ("csv", 7, 1), ("mixed", 4, 1)])
def test_heterogeneous_with_empty_types(shuffle_client, make_graph, tmp_path, fmt, num_parts, hops):
    """MAG-like graph; every institution in the last partition, so the other partitions have none of them."""
    md = make_graph("mag", papers=200, chunks=3, fmt=fmt, seed=2)
    config, _ = run_and_check(shuffle_client, md, tmp_path, num_parts, halo_hops=hops,
                              fixed={"institution": num_parts - 1}, **ALL_ORIG)
    node_map = json.loads(config.read_text())["node_map"]["institution"]
    assert [hi - lo for lo, hi in node_map[:-1]] == [0] * (num_parts - 1)


@pytest.mark.parametrize("halo_mode", ["full", "in_edges"])
def test_no_halo_with_several_partitions_is_refused_before_work(shuffle_client, make_graph, tmp_path, halo_mode):
    """Without halo nodes a partition cannot hold its in-edges from other partitions, which its partition book
    counts: DistDGL would train on a graph missing them, so the shuffle refuses to start."""
    md = make_graph("rmat", nodes=400, edges=3000, chunks=2, seed=1)
    asg = random_assignment(md, tmp_path / "asg", 3)
    with pytest.raises(GraphshardError, match="halo_hops: expected at least 1 with more than one partition"):
        shuffle(md, asg, tmp_path / "out", ShuffleOptions(halo_hops=0, halo_mode=halo_mode), shuffle_client)
    assert not (tmp_path / "out").exists()


def test_in_edges_mode_and_small_blocks(shuffle_client, make_graph, tmp_path):
    """DGL's pipeline halo (owned in-edges only); several node blocks per type; no orig-ID files."""
    md = make_graph("mag", papers=200, chunks=2, fmt="numpy", seed=3)
    config, _ = run_and_check(shuffle_client, md, tmp_path, 3, halo_mode="in_edges", node_block_rows=37)
    assert not list(config.parent.glob("part*/orig_*.dgl"))


def test_csc_and_hops_two_on_heterogeneous(shuffle_client, make_graph, tmp_path):
    md = make_graph("mag", papers=150, chunks=2, fmt="numpy", seed=4)
    config, _ = run_and_check(shuffle_client, md, tmp_path, 3, halo_hops=2, graph_formats=["coo", "csc"],
                              **ALL_ORIG)
    assert load_graph(config.parent / "part0" / "graph.dgl").formats == ("coo", "csc")


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.blake2b(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_deterministic_and_overwrite(shuffle_client, make_graph, tmp_path):
    md = make_graph("rmat", nodes=300, edges=2000, chunks=2, seed=5)
    asg = random_assignment(md, tmp_path / "asg", 3, seed=5)
    opts = ShuffleOptions(**ALL_ORIG)
    shuffle(md, asg, tmp_path / "a", opts, shuffle_client)
    shuffle(md, asg, tmp_path / "b", opts, shuffle_client, overwrite=False)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert not list(tmp_path.glob(".*")), "staging or scratch folders left behind"
    with pytest.raises(GraphshardError, match="output folder exists"):
        shuffle(md, asg, tmp_path / "a", opts, shuffle_client)
    shuffle(md, asg, tmp_path / "a", ShuffleOptions(), shuffle_client, overwrite=True)
    assert not (tmp_path / "a" / "part0" / "orig_nids.dgl").exists()


def test_scratch_dir_is_cleaned(shuffle_client, make_graph, tmp_path):
    md = make_graph("rmat", nodes=300, edges=2000, chunks=2, seed=5)
    asg = random_assignment(md, tmp_path / "asg", 2)
    scratch = tmp_path / "scratch"
    shuffle(md, asg, tmp_path / "out", ShuffleOptions(scratch_dir=scratch), shuffle_client)
    assert scratch.is_dir() and [p.name for p in scratch.iterdir()] == [".leases"]  # the runs' lease records' folder
    assert not any((scratch / ".leases").iterdir())


# ---- bad input: a clear error naming the file, and no output folder ------------------------------------------

def _broken(tmp_path, md, how):
    asg = random_assignment(md, tmp_path / "asg", 3)
    g = load_metadata(md)
    if how == "line count":
        path = asg / f"{g.node_type[0]}.txt"
        path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    elif how == "num_parts":
        write_meta(asg, 2, "random")
    elif how == "missing type":
        (asg / f"{g.node_type[-1]}.txt").unlink()
    elif how == "no meta":
        (asg / "partition_meta.json").unlink()
    return asg


@pytest.mark.parametrize("how,message", [
    ("line count", "line count"),
    ("num_parts", r"partition id in \[0, 2\)"),
    ("missing type", "no such file"),
    ("no meta", "partition_meta.json"),
])
def test_bad_assignment(shuffle_client, make_graph, tmp_path, how, message):
    md = make_graph("mag", papers=100, chunks=2, seed=6)
    asg = _broken(tmp_path, md, how)
    with pytest.raises(InputError, match=message) as err:
        shuffle(md, asg, tmp_path / "out", ShuffleOptions(), shuffle_client)
    assert str(asg) in str(err.value)
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out*")), "staging folder left behind"


def test_bad_edge_ids(shuffle_client, make_graph, tmp_path):
    """An edge naming a node beyond its type's count is reported with its file, and nothing is published."""
    src_md = make_graph("rmat", nodes=200, edges=1000, chunks=2, seed=7)
    graph_dir = tmp_path / "graph"
    shutil.copytree(src_md.parent, graph_dir)
    g = load_metadata(graph_dir / "metadata.json")
    edge_file = g.path(g.edges[g.edge_type[0]].data[1])
    edges = np.load(edge_file)
    edges[5, 1] = 10_000
    np.save(edge_file, edges)
    asg = random_assignment(graph_dir / "metadata.json", tmp_path / "asg", 2)
    with pytest.raises(InputError, match=r"data\[1\] dst': expected _N IDs in \[0, 200\), found 1 out of range, "
                                         r"first 10000 at row 5"):
        shuffle(graph_dir / "metadata.json", asg, tmp_path / "out", ShuffleOptions(), shuffle_client)
    assert not (tmp_path / "out").exists()


def test_unwritable_output(shuffle_client, make_graph, tmp_path):
    md = make_graph("rmat", nodes=200, edges=1000, chunks=2, seed=7)
    asg = random_assignment(md, tmp_path / "asg", 2)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(GraphshardError, match="cannot create output folder"):
        shuffle(md, asg, blocker / "out", ShuffleOptions(), shuffle_client)


# ---- CLI ---------------------------------------------------------------------------------------------------------

def test_cli(shuffle_client, make_graph, tmp_path, capsys):
    md = make_graph("mag", papers=100, chunks=2, seed=8)
    asg = random_assignment(md, tmp_path / "asg", 2)
    address = shuffle_client.scheduler.address
    args = ["dispatch", "--in", str(md), "--partitions", str(asg), "--out", str(tmp_path / "out"),
            "--halo-hops", "2", "--save-orig-nids", "--save-orig-eids", "--graph-formats", "coo,csc",
            "--scheduler", address]
    assert main(args) == 0
    config = tmp_path / "out" / "mag.json"
    assert str(config) in capsys.readouterr().out
    check_partitions(config, md, asg)
    assert main(args) == 2
    assert "output folder exists" in capsys.readouterr().err
    assert main(args + ["--overwrite", "--halo-mode", "in_edges", "--halo-hops", "1"]) == 0
    check_partitions(config, md, asg, "in_edges")
    bad = ["dispatch", "--in", str(md), "--partitions", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o2"),
           "--scheduler", address]
    assert main(bad) == 2
    assert "nowhere" in capsys.readouterr().err


@pytest.mark.parametrize("extra, words", [
    (["--store-eids"], "--store-eids: only with --graphbolt"),
    pytest.param(["--graphbolt"], "--graphbolt: GraphBolt output is written by DGL's own converter",
                 marks=pytest.mark.skipif(not missing_modules(), reason="DGL and torch are installed")),
])
def test_cli_graphbolt_refusals_before_work(make_graph, tmp_path, capsys, extra, words):
    md = make_graph("rmat", nodes=300, edges=2000, chunks=2, seed=9)
    asg = random_assignment(md, tmp_path / "asg", 2)
    assert main(["dispatch", "--in", str(md), "--partitions", str(asg), "--out", str(tmp_path / "out"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
    assert STORE_CHOICES == tuple(GraphboltOptions.model_fields)  # the flags are DGL's converter's keywords


def test_cli_help():
    with pytest.raises(SystemExit) as exit_:
        main(["dispatch", "--help"])
    assert exit_.value.code == 0


def test_checker_catches_wrong_outputs(shuffle_client, make_graph, tmp_path):
    """The oracle itself fails on a lighter halo than asked (DGL's pipeline's set: its fields, then its halo) and on
    one changed feature value."""
    from graphshard.formats.dgl_binary import load_graph, load_tensor_dict, save_graph, save_tensor_dict

    md = make_graph("rmat", nodes=300, edges=2000, chunks=2, seed=9)
    config, _ = run_and_check(shuffle_client, md, tmp_path, 2, halo_mode="in_edges")
    asg = tmp_path / "asg"
    with pytest.raises(AssertionError, match="part 0: fields"):
        check_partitions(config, md, asg, "full")
    feats_file = config.parent / "part1" / "node_feat.dgl"
    feats = load_tensor_dict(feats_file)
    feats["_N/feat"][3, 0] += 1
    save_tensor_dict(feats_file, feats)
    with pytest.raises(AssertionError, match="rows differ"):
        check_partitions(config, md, asg, "in_edges")
    # with partition_graph's fields instead of the pipeline's (no _TYPE, part_id added), the halo itself is caught
    # (part 0, before part 1)
    ends = np.array([end for _, end in json.loads(config.read_text())["node_map"]["_N"]])
    for part in (0, 1):
        graph = load_graph(config.parent / f"part{part}" / "graph.dgl")
        ndata = {k: v for k, v in graph.ndata.items() if k != "_TYPE"}
        ndata["part_id"] = np.searchsorted(ends, ndata["_ID"], side="right").astype(np.int64)
        save_graph(config.parent / f"part{part}" / "graph.dgl", graph.num_nodes, graph.src, graph.dst, ndata,
                   {k: v for k, v in graph.edata.items() if k != "_TYPE"})
    with pytest.raises(AssertionError, match="differs from DGL's"):
        check_partitions(config, md, asg, "full")


def test_empty_partition_and_rechunked_edge_features(shuffle_client, tmp_path):
    """Edge features split into files unlike the edge files; int, bool and 2-D features; partition 2 gets no node."""
    from graphshard.formats.chunked_writer import ChunkedGraphWriter

    rng = np.random.default_rng(12)
    n, sizes = 150, [400, 250, 350]
    writer = ChunkedGraphWriter(tmp_path / "graph", "toy", ["_N"], ["_N:_E:_N"])
    for size in sizes:
        writer.add_edges("_N:_E:_N", rng.integers(0, n, size), rng.integers(0, n, size), "parquet")
    total = sum(sizes)
    for lo, hi in ((0, 600), (600, total)):
        writer.add_edge_feature("_N:_E:_N", "w2d", rng.random((hi - lo, 3)).astype(np.float32), "numpy")
        writer.add_edge_feature("_N:_E:_N", "flag", rng.random(hi - lo) < 0.5, "numpy")
    writer.set_node_chunks("_N", [70, 80])
    for size in (70, 80):
        writer.add_node_feature("_N", "count", rng.integers(-5, 5, size).astype(np.int32), "csv")
    md = writer.finish()
    asg = tmp_path / "asg"
    asg.mkdir()
    write_parts(asg, "_N", rng.choice([0, 1, 3, 4], n))
    write_meta(asg, 5, "random")
    config = shuffle(md, asg, tmp_path / "out", ShuffleOptions(halo_hops=2, **ALL_ORIG), shuffle_client)
    check_partitions(config, md, asg)
    lo, hi = json.loads(config.read_text())["node_map"]["_N"][2]
    assert lo == hi


def test_trainers_per_machine_give_dgls_trainer_id_features(shuffle_client, make_graph, tmp_path, capsys):
    """`assign --num-trainers-per-machine 2` then `shuffle` (what `graphshard run` does): every node and edge type
    gets DGL's int64 `trainer_id` (a node's trainer, an edge's destination's) from the assignment. Was: none, exit 0,
    while the API and DGL wrote them. Trainer ids that disagree with the partitions, or an input feature of that name,
    are one line each."""
    md = make_graph("mag", papers=120, chunks=2, seed=11)
    address = shuffle_client.scheduler.address
    asg, out = tmp_path / "asg", tmp_path / "out"
    assert main(["assign", "--in", str(md), "--out", str(asg), "--method", "random", "--num-parts", "3",
                 "--num-trainers-per-machine", "2", "--scheduler", address]) == 0
    assert json.loads((asg / "partition_meta.json").read_text())["num_trainers_per_machine"] == 2
    assert main(["shuffle", "--in", str(md), "--partitions", str(asg), "--out", str(out), "--halo-hops", "2",
                 "--scheduler", address]) == 0
    check_partitions(out / "mag.json", md, asg)  # the oracle checks every trainer_id row against trainer_ids/
    hand = random_assignment(md, tmp_path / "hand", 2, trainers=3)  # a user's folder, 4 blocks per type
    check_partitions(shuffle(md, hand, tmp_path / "o1", ShuffleOptions(node_block_rows=40), shuffle_client), md, hand)
    g = load_metadata(md)
    ids = (asg / "trainer_ids" / f"{g.node_type[0]}.txt").read_text().splitlines()
    ids[0] = str((int(ids[0]) + 2) % 6)  # another machine's trainer
    (asg / "trainer_ids" / f"{g.node_type[0]}.txt").write_text("\n".join(ids) + "\n")
    with pytest.raises(InputError, match=f"trainer_ids/{g.node_type[0]}.txt: field 'line 1': expected a trainer of "):
        shuffle(md, asg, tmp_path / "o2", ShuffleOptions(), shuffle_client)
    named = shutil.copytree(md.parent, tmp_path / "graph") / "metadata.json"  # the session's graph stays as it is
    meta = json.loads(named.read_text())
    meta["node_data"][g.node_type[0]]["trainer_id"] = meta["node_data"][g.node_type[0]]["year"]
    named.write_text(json.dumps(meta))
    with pytest.raises(InputError, match=rf"node_data\['{g.node_type[0]}'\]\['trainer_id'\]"):
        shuffle(named, asg, tmp_path / "o3", ShuffleOptions(), shuffle_client)
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o3").exists()
