"""The set's digests file and `graphshard fetch`: from a local path and from moto's S3, byte-identical files that
graphshard's reader loads, a subset of parts, a tampered object refused in one line, bad locations in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from flow_helpers import wait_for
from s3_helpers import DUMMY_SECRET, authenticating_server, free_port

import graphshard
from graphshard.cli import main
from graphshard.digests import read_digest
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.partition_reader import load_partition
from graphshard.runprefix import RUNS, with_prefix
from graphshard.storage import Storage, location

NAME = "ogbn-tiny"  # the chunked format refuses this name: partition_graph renames the config (and digests) back


@pytest.fixture(scope="module")
def part_set(tmp_path_factory, dask_cluster_client) -> Path:
    """A validated 3-part heterogeneous set written by partition_graph (orig-ID files included); its config path."""
    rng = np.random.default_rng(5)
    num_nodes = {"user": 400, "item": 150}
    edges = {("user", "buys", "item"): (rng.integers(0, 400, 2500), rng.integers(0, 150, 2500)),
             ("user", "follows", "user"): (rng.integers(0, 400, 1200), rng.integers(0, 400, 1200))}
    node_feats = {"user": {"feat": rng.random((400, 8), dtype=np.float32)}, "item": {"label": rng.integers(0, 5, 150)}}
    out = tmp_path_factory.mktemp("set") / "out"
    graphshard.partition_graph(edges, NAME, 3, out, part_method="random", num_nodes=num_nodes, node_feats=node_feats,
                               validate=True, client=dask_cluster_client)
    return out / f"{NAME}.json"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _upload(folder: Path, url: str) -> None:
    storage = Storage()
    for rel in _files(folder):
        storage.upload(folder / rel, location(url).join(rel))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["fetch", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_set_carries_its_digests(part_set: Path):
    """Every partition file, with the size and xxh3_128 its writer took; the validated set accepts the file."""
    folder = part_set.parent
    doc = json.loads((folder / f"{NAME}.digests.json").read_text())
    part_files = {rel for rel in _files(folder) if rel.startswith("part")}
    assert doc["algorithm"] == "xxh3_128" and doc["num_parts"] == 3 and set(doc["files"]) == part_files
    assert {"part0/graph.dgl", "part2/node_feat.dgl", "part1/edge_feat.dgl"} <= part_files
    for rel, entry in doc["files"].items():
        assert entry == {"size": (folder / rel).stat().st_size, "digest": read_digest(folder / rel)}
    assert json.loads((folder / "report.json").read_text())["ok"]
    assert not (folder / "ogbn_tiny.digests.json").exists() and len(list(folder.glob("*.digests.json"))) == 1


def test_shuffle_digests_and_fetch_orig_ids(rmat_small: Path, tmp_path: Path, dask_cluster_client, capsys):
    """The shuffle step library function (as `graphshard run`/`shuffle` call it) lists the orig-ID files too, and
    fetch copies them with their part."""
    from graphshard.assign import assign
    from graphshard.assign.options import AssignOptions
    from graphshard.shuffle import ShuffleOptions, shuffle

    assignment = assign(rmat_small, tmp_path / "assignment", 2, AssignOptions(method="random"),
                        client=dask_cluster_client)
    config = shuffle(rmat_small, assignment, tmp_path / "set", ShuffleOptions(save_orig_nids=True,
                      save_orig_eids=True), dask_cluster_client)
    doc = json.loads(config.with_name("rmat.digests.json").read_text())
    assert {"part1/orig_nids.dgl", "part1/orig_eids.dgl"} <= set(doc["files"])
    assert all(read_digest(config.parent / rel) == e["digest"] for rel, e in doc["files"].items())
    code, _, _ = _run(capsys, str(config), "--out", str(tmp_path / "got"), "--parts", "1")
    got = _files(tmp_path / "got")
    assert code == 0 and sorted(got) == ["part1/edge_feat.dgl", "part1/graph.dgl", "part1/node_feat.dgl",
                                         "part1/orig_eids.dgl", "part1/orig_nids.dgl", "rmat.digests.json",
                                         "rmat.json"]
    assert all(got[k] == (config.parent / k).read_bytes() for k in got)


def test_fetch_local_whole_set(part_set: Path, tmp_path: Path, capsys):
    code, out, err = _run(capsys, str(part_set), "--out", str(tmp_path / "got"))
    assert code == 0 and err == "" and "fetched part(s) 0,1,2" in out
    got, src = _files(tmp_path / "got"), _files(part_set.parent)
    assert got == {k: v for k, v in src.items() if not k.startswith("report.")}  # byte for byte
    for p in range(3):
        mine, theirs = load_partition(tmp_path / "got" / part_set.name, p), load_partition(part_set, p)
        np.testing.assert_array_equal(mine.graph.src, theirs.graph.src)
        np.testing.assert_array_equal(mine.node_feats["user/feat"], theirs.node_feats["user/feat"])


def test_fetch_s3_subset(part_set: Path, s3_bucket: str, tmp_path: Path, capsys):
    _upload(part_set.parent, f"{s3_bucket}/sets/tiny")
    url = f"{s3_bucket}/sets/tiny/{part_set.name}"
    code, out, _ = _run(capsys, url, "--out", str(tmp_path / "got"), "--parts", "2,0", "--transfers", "3")
    assert code == 0 and "fetched part(s) 0,2" in out
    got, src = _files(tmp_path / "got"), _files(part_set.parent)
    assert sorted(got) == sorted(k for k in src if k.startswith(("part0/", "part2/", NAME)))
    assert all(got[k] == src[k] for k in got)
    config = tmp_path / "got" / part_set.name
    part = load_partition(config, 2)
    assert part.book.num_partitions() == 3 and part.graph_name == NAME  # the config still describes every part
    with pytest.raises(InputError, match="part1/graph.dgl: expected a readable DGL graph file"):
        load_partition(config, 1)  # not fetched


def test_fetch_the_sets_folder(part_set: Path, s3_bucket: str, tmp_path: Path, capsys):
    """CONFIG_URL may be the set's folder, as `validate --partitions` takes it (was: 'cannot read:
    IsADirectoryError' for a local folder)."""
    _upload(part_set.parent, f"{s3_bucket}/sets/tiny")
    for i, where in enumerate((str(part_set.parent), f"{s3_bucket}/sets/tiny/")):
        code, out, err = _run(capsys, where, "--out", str(tmp_path / f"got{i}"), "--parts", "1")
        assert code == 0 and "fetched part(s) 1" in out, err
        assert (tmp_path / f"got{i}" / part_set.name).read_bytes() == part_set.read_bytes()


def test_tampered_object_refused(part_set: Path, s3_bucket: str, tmp_path: Path, capsys):
    _upload(part_set.parent, f"{s3_bucket}/set")
    storage = Storage()
    target = f"{s3_bucket}/set/part1/node_feat.dgl"
    data = bytearray(storage.read_bytes(target))
    data[-1] ^= 0xFF
    storage.write_bytes(target, bytes(data))
    code, out, err = _run(capsys, f"{s3_bucket}/set/{part_set.name}", "--out", str(tmp_path / "got"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"graphshard fetch: error: {target}: xxh3_128 ") and "nothing was fetched" in err
    assert os.listdir(tmp_path) == []  # neither the folder nor its staging sibling


def test_bad_parts_and_missing_digests(part_set: Path, tmp_path: Path, capsys):
    code, _, err = _run(capsys, str(part_set), "--out", str(tmp_path / "a"), "--parts", "1,7")
    assert code == 2 and "expected ids in 0..2" in err and "[7]" in err
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / part_set.name).write_bytes(part_set.read_bytes())
    code, _, err = _run(capsys, str(bare / part_set.name), "--out", str(tmp_path / "b"))
    assert code == 2 and "no digests file beside the partition config" in err
    broken = json.loads(part_set.read_text())
    del broken["edge_map"]
    (bare / part_set.name).write_text(json.dumps(broken))
    (bare / f"{NAME}.digests.json").write_bytes((part_set.parent / f"{NAME}.digests.json").read_bytes())
    code, _, err = _run(capsys, str(bare / part_set.name), "--out", str(tmp_path / "c"))
    assert code == 2 and err.startswith(f"graphshard fetch: error: {bare / part_set.name}: field 'edge_map'")
    assert sorted(os.listdir(tmp_path)) == ["bare"]


@pytest.mark.parametrize("text, found", [(b"\x00\xffnot json", "found 'utf-8' codec can't decode"),
                                         (b"", "found Expecting value"), (b"[1, 2]", "found list"),
                                         (b'{"ok": true}', "found the keys ['ok']")])
def test_not_a_partition_config(text: bytes, found: str, part_set: Path, s3_bucket: str, tmp_path: Path, capsys):
    """A config URL naming bytes that are not a partition config (a wrong file, an error page, a report) is one
    line saying so, before any digests file is looked for (was 'internal error: UnicodeDecodeError',
    'AttributeError: 'list' object has no attribute 'items'', or 'no digests file beside the partition config')."""
    _upload(part_set.parent, f"{s3_bucket}/set")
    Storage().write_bytes(f"{s3_bucket}/set/{part_set.name}", text)
    code, out, err = _run(capsys, f"{s3_bucket}/set/{part_set.name}", "--out", str(tmp_path / "got"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: {s3_bucket}/set/{part_set.name}: expected ") and found in err
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("case", ["unreachable", "bucket", "credentials"])
def test_bad_locations(case: str, s3_env, tmp_path: Path, capsys, monkeypatch):
    """One line naming the URL and what to change, never the secret; nothing created."""
    url = "s3://no-such-bucket-7/sets/g.json"
    expected = {"unreachable": "cannot reach the store", "bucket": "bucket 'no-such-bucket-7' does not exist",
                "credentials": "the store refused the credentials"}[case]
    if case == "unreachable":
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    if case == "credentials":
        with authenticating_server() as server:
            monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
            code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"))
    else:
        code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"graphshard fetch: error: {url}: {expected}") and DUMMY_SECRET not in err
    assert os.listdir(tmp_path) == []
    log = max(Path(os.environ["GRAPHSHARD_LOG_DIR"]).glob("fetch-*.log"), key=lambda p: p.stat().st_mtime)
    assert url in log.read_text() and DUMMY_SECRET not in log.read_text()  # the traceback there: no secret either


def _publish(folder: Path, url: str, run: str = "0123456789abcdef") -> str:
    """`folder`'s set on the store as a publish lays it out: files under `.runs/<run>/`, the config naming them;
    returns the config's URL."""
    for rel in _files(folder):
        if rel != f"{NAME}.json":
            Storage().upload(folder / rel, location(url).join(f"{RUNS}/{run}/{rel}"))
    Storage().write_bytes(f"{url}/{NAME}.json", with_prefix((folder / f"{NAME}.json").read_text(),
                                                           f"{RUNS}/{run}").encode())
    return f"{url}/{NAME}.json"


def _meanwhile(monkeypatch, action) -> None:
    """Run `action(src)` once, after fetch opened its first part file and before it reads it."""
    done, original = [], Storage.open_read

    def opened(self, where, *args, **kwargs):
        fh = original(self, where, *args, **kwargs)
        if not done and "/part" in str(where):
            done.append(where)
            action(str(where))
        return fh

    monkeypatch.setattr(Storage, "open_read", opened)


@pytest.mark.parametrize("when", ["before", "during"])
def test_part_object_missing(when: str, part_set: Path, s3_bucket: str, tmp_path: Path, capsys, monkeypatch):
    """A part object the config names is gone (before the fetch, or deleted while it reads the file): one line
    naming it and saying the set is incomplete (was 'correct the location' before, 'internal error:
    FileNotFoundError: The specified key does not exist.' during)."""
    url = _publish(part_set.parent, f"{s3_bucket}/set")
    gone = f"{s3_bucket}/set/{RUNS}/0123456789abcdef/part1/graph.dgl"
    if when == "before":
        Storage().delete_prefix(gone)
    else:
        _meanwhile(monkeypatch, lambda src: Storage().delete_prefix(src))
    code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"), "--parts", "1", "--transfers", "1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: {s3_bucket}/set/{RUNS}/0123456789abcdef/part1/")
    assert "not on the store, though the set's config names it" in err
    assert os.listdir(tmp_path) == []


def test_set_replaced_while_fetching(part_set: Path, s3_bucket: str, tmp_path: Path, capsys, monkeypatch):
    """A publish replaces the set mid-fetch (its new config written, the files this fetch reads deleted): one
    line saying so and to fetch again (was 'internal error: FileNotFoundError: The specified key does not
    exist.', exit 1)."""
    url = _publish(part_set.parent, f"{s3_bucket}/set")

    def republish(src: str) -> None:
        _publish(part_set.parent, f"{s3_bucket}/set", run="fedcba9876543210")
        Storage().delete_prefix(f"{s3_bucket}/set/{RUNS}/0123456789abcdef")

    _meanwhile(monkeypatch, republish)
    code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"), "--transfers", "1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: {url}: the set was published again while this fetch read it")
    assert os.listdir(tmp_path) == []
    assert _run(capsys, url, "--out", str(tmp_path / "got"))[0] == 0  # the new set, fetched again


def test_store_unreachable_mid_copy(part_set: Path, s3_bucket: str, tmp_path: Path, capsys, monkeypatch):
    """The store stops answering while a file is copied: the same line as before any request (was 'internal
    error: EndpointConnectionError: ...', exit 1)."""
    from botocore.exceptions import EndpointConnectionError

    url = _publish(part_set.parent, f"{s3_bucket}/set")
    original = Storage.open_read

    def cut(self, where, *args, **kwargs):
        fh = original(self, where, *args, **kwargs)
        if "/part" in str(where):
            fh.read = lambda *a: (_ for _ in ()).throw(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
        return fh

    monkeypatch.setattr(Storage, "open_read", cut)
    code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"error: {s3_bucket}/set/{RUNS}/0123456789abcdef/part" in err and "cannot reach the store" in err
    assert DUMMY_SECRET not in err and os.listdir(tmp_path) == []


def _fill(folder: Path, leave: int) -> None:
    """Take all but `leave` bytes of the free space of `folder`'s filesystem."""
    (folder / "filler").write_bytes(b"\0" * max(0, shutil.disk_usage(folder).free - leave))


def test_not_enough_room_before_any_download(part_set: Path, tiny_tmpfs: Path, tmp_path: Path, capsys,
                                             monkeypatch):
    """Less free space at --out than the listed files take: one line before any download (was 'internal error:
    OSError: [Errno 28] No space left on device', exit 1, after copying what fitted)."""
    _fill(tiny_tmpfs, 64 << 10)
    _meanwhile(monkeypatch, lambda src: pytest.fail(f"{src} was read"))
    code, out, err = _run(capsys, str(part_set), "--out", str(tiny_tmpfs / "got"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: --out {tiny_tmpfs / 'got'}: the fetched files take 0.")
    assert "MB free of 1.0 MB there" in err and "nothing was fetched" in err
    assert os.listdir(tiny_tmpfs) == ["filler"]


def test_disk_fills_up_while_fetching(part_set: Path, tiny_tmpfs: Path, capsys, monkeypatch):
    """Another writer fills the disk after the space check: one line, no traceback (was 'internal error: OSError:
    [Errno 28] No space left on device', exit 1)."""
    _meanwhile(monkeypatch, lambda src: _fill(tiny_tmpfs, 0))
    code, out, err = _run(capsys, str(part_set), "--out", str(tiny_tmpfs / "got"), "--transfers", "1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: --out {tiny_tmpfs / 'got'}: no space left on device (")
    assert "free space there or fetch to a larger filesystem; nothing was fetched" in err
    assert os.listdir(tiny_tmpfs) == ["filler"]


HANG_AFTER_OPEN = """
import sys, time
from pathlib import Path
from graphshard.cli import main
from graphshard.storage import Storage
original = Storage.open_read
def opened(self, where, *args, **kwargs):
    fh = original(self, where, *args, **kwargs)
    if "/part1/" in str(where):
        Path(sys.argv[1]).touch()
        time.sleep(600)
    return fh
Storage.open_read = opened
sys.exit(main(sys.argv[2:]))
"""


def test_killed_fetch_then_fetched_again(part_set: Path, s3_bucket: str, tmp_path: Path):
    """A fetch SIGKILLed mid-download leaves no config in its staging folder (written last), and the next fetch
    into the same --out deletes that folder (was: left for good, with the config that named the missing files)."""
    url = _publish(part_set.parent, f"{s3_bucket}/set")
    marker, host = tmp_path / "opened", tmp_path / "host"
    host.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HANG_AFTER_OPEN, str(marker), "fetch", url, "--out",
                             str(host / "got"), "--transfers", "1"], stderr=subprocess.DEVNULL)
    try:
        wait_for(marker.exists, 60, "the fetch to open a part1 file")
    finally:
        proc.kill()
        proc.wait()
    stages = list(host.iterdir())
    assert [p.name.startswith(".got.tmp-") for p in stages] == [True]
    assert (stages[0] / "part0" / "graph.dgl").exists() and not (stages[0] / f"{NAME}.json").exists()
    assert main(["fetch", url, "--out", str(host / "got")]) == 0
    assert os.listdir(host) == ["got"]


def test_overwrite_replaces_a_set_only(part_set: Path, tmp_path: Path, capsys):
    """--overwrite replaces an earlier fetch or another set, but not a folder of other files: `--out .` with
    --overwrite in a project folder deleted everything in it."""
    got = tmp_path / "got"
    assert _run(capsys, str(part_set), "--out", str(got), "--parts", "0")[0] == 0
    code, out, err = _run(capsys, str(part_set), "--out", str(got), "--parts", "1", "--overwrite")
    assert code == 0 and err == "" and sorted(os.listdir(got)) == [f"{NAME}.digests.json", f"{NAME}.json", "part1"]
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("mine")
    code, out, err = _run(capsys, str(part_set), "--out", str(project), "--overwrite")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: --out {project}: --overwrite replaces a folder holding a "
                          "partition set, and this one holds other files (train.py)")
    assert os.listdir(project) == ["train.py"] and sorted(os.listdir(tmp_path)) == ["got", "project"]


def test_out_is_a_link_a_file_or_a_mount_point(part_set: Path, tiny_tmpfs: Path, tmp_path: Path, capsys):
    """A link to a folder (a larger disk): the set lands there, the link stays (was: the link replaced by a folder
    on the link's disk); a file: refused even with --overwrite (was: replaced, a hidden copy of it left beside); a
    mount point: refused before any download (was 'internal error: OSError: [Errno 16] Device or resource busy',
    exit 1, the finished staging folder left beside it)."""
    disk = tiny_tmpfs / "set"
    assert _run(capsys, str(part_set), "--out", str(disk), "--parts", "0")[0] == 0
    (tmp_path / "link").symlink_to(disk)
    code, out, err = _run(capsys, str(part_set), "--out", str(tmp_path / "link"), "--parts", "2", "--overwrite")
    assert code == 0 and (tmp_path / "link").is_symlink() and sorted(os.listdir(disk)) == [
        f"{NAME}.digests.json", f"{NAME}.json", "part2"] and os.listdir(tiny_tmpfs) == ["set"]
    (tmp_path / "file").write_text("x")
    for flags in ((), ("--overwrite",)):
        code, out, err = _run(capsys, str(part_set), "--out", str(tmp_path / "file"), *flags)
        assert code == 2 and err.startswith(f"graphshard fetch: error: {tmp_path / 'file'}: a file is there, not a "
                                            "folder"), err
    assert sorted(os.listdir(tmp_path)) == ["file", "link", "tiny"]
    (tiny_tmpfs / "set").rename(tiny_tmpfs / "moved")
    (tiny_tmpfs / f"{NAME}.json").write_bytes(part_set.read_bytes())  # a set's config: --overwrite would take it
    code, out, err = _run(capsys, str(part_set), "--out", str(tiny_tmpfs), "--overwrite")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: {tiny_tmpfs}: a mount point, which --overwrite cannot replace")
    assert sorted(os.listdir(tiny_tmpfs)) == ["moved", f"{NAME}.json"] and "tiny" in os.listdir(tmp_path)


def test_out_is_a_link_to_nothing_yet_or_a_link_loop(part_set: Path, tmp_path: Path, capsys):
    """A link to a folder not made yet (a larger disk's folder-to-be): the set lands at its target and the link stays
    (was: 'cannot move the finished output into place (Not a directory)'); a link loop: one line naming it (was:
    'internal error: RuntimeError'). `generate --out` behaves the same."""
    (tmp_path / "link").symlink_to(tmp_path / "disk" / "set")
    code, out, err = _run(capsys, str(part_set), "--out", str(tmp_path / "link"), "--parts", "1")
    assert code == 0 and (tmp_path / "link").is_symlink(), err
    assert sorted(os.listdir(tmp_path / "disk" / "set")) == [f"{NAME}.digests.json", f"{NAME}.json", "part1"]
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    for argv in (["fetch", str(part_set), "--out"], ["generate", "rmat", "--nodes", "64", "--edges", "128", "--out"]):
        code = main([*argv, str(tmp_path / "loop1")])
        out, err = capsys.readouterr()
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{tmp_path / 'loop1'}: a symbolic link that cannot be followed" in err, err
    (tmp_path / "link2").symlink_to(tmp_path / "disk" / "graph")
    assert main(["generate", "rmat", "--nodes", "64", "--edges", "128", "--out", str(tmp_path / "link2")]) == 0
    assert (tmp_path / "link2").is_symlink() and (tmp_path / "disk" / "graph" / "metadata.json").is_file()


def test_larger_object_is_not_read_past_its_listed_size(part_set: Path, s3_bucket: str, tmp_path: Path, capsys,
                                                          monkeypatch):
    """An object longer than its listed size (other bytes at the key) is refused once the copy passes that size:
    not downloaded whole first, which the space check (listed sizes) does not allow for."""
    monkeypatch.setattr("graphshard.fetch.COPY_BLOCK", 64 << 10)
    url = _publish(part_set.parent, f"{s3_bucket}/set")
    target = f"{s3_bucket}/set/{RUNS}/0123456789abcdef/part1/node_feat.dgl"
    listed = (part_set.parent / "part1" / "node_feat.dgl").stat().st_size
    Storage().write_bytes(target, b"\1" * (listed + (4 << 20)))
    read, original = [], Storage.open_read

    def counted(self, where, *args, **kwargs):
        fh = original(self, where, *args, **kwargs)
        read_block = fh.read
        fh.read = lambda *a: read.append(len(block := read_block(*a))) or block
        return fh

    monkeypatch.setattr(Storage, "open_read", counted)
    code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"), "--parts", "1")
    assert code == 2 and err.startswith(f"graphshard fetch: error: {target}: more than {listed:,} bytes, but the "
                                        f"set's digests file lists {listed:,} bytes"), err
    assert sum(read) < listed + (1 << 20) and os.listdir(tmp_path) == []


def test_published_set_without_its_files(part_set: Path, s3_bucket: str, tmp_path: Path, capsys):
    """A published config whose run prefix is gone (its files deleted by hand, a publish that did not finish):
    the set is incomplete (was 'no digests file ...: publish the set again with this graphshard', as if an older
    graphshard had written it)."""
    url = _publish(part_set.parent, f"{s3_bucket}/set")
    Storage().delete_prefix(f"{s3_bucket}/set/{RUNS}")
    code, out, err = _run(capsys, url, "--out", str(tmp_path / "got"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"graphshard fetch: error: {s3_bucket}/set/{RUNS}/0123456789abcdef/{NAME}.digests.json: "
                          f"not on the store, though the config names files under {RUNS}/0123456789abcdef/")
    assert "the set is incomplete" in err and os.listdir(tmp_path) == []


def test_another_fetch_finishes_first(part_set: Path, tmp_path: Path, capsys, monkeypatch):
    """Two fetches into one --out at once: the one that finishes second says the folder exists and leaves nothing
    (was: its finished staging folder left beside the other's set)."""
    got = tmp_path / "got"
    _meanwhile(monkeypatch, lambda src: shutil.copytree(part_set.parent, got))
    code, out, err = _run(capsys, str(part_set), "--out", str(got), "--transfers", "1")
    assert code == 2 and err.startswith(f"graphshard fetch: error: {got}: output folder exists"), err
    assert os.listdir(tmp_path) == ["got"]


def test_overwrite_keeps_the_files_already_there(part_set: Path, tmp_path: Path, capsys):
    """Adding a part to an earlier fetch (`--parts 0,1 --overwrite` after `--parts 0`), or re-running a training
    host's fetch: the files the folder holds with the set's digests are linked into the new one, not downloaded; a
    file that differs from its digest is downloaded again."""
    got = tmp_path / "got"
    assert _run(capsys, str(part_set), "--out", str(got), "--parts", "0")[0] == 0
    part0 = sorted(p.relative_to(got) for p in (got / "part0").rglob("*") if p.is_file())
    inodes = {rel: (got / rel).stat().st_ino for rel in part0}
    damaged = got / part0[0]
    damaged.write_bytes(b"x" * damaged.stat().st_size)  # same size, other bytes
    code, out, err = _run(capsys, str(part_set), "--out", str(got), "--parts", "0,1", "--overwrite")
    files = len(part0) + sum(1 for p in (part_set.parent / "part1").iterdir() if p.is_file())
    assert code == 0 and err == "" and f"({files} files: {files - len(part0) + 1} downloaded, " in out, out
    assert f" bytes, {len(part0) - 1} already there; digests checked)" in out, out
    assert {rel: (got / rel).stat().st_ino for rel in part0[1:]} == {rel: inodes[rel] for rel in part0[1:]}
    assert (got / part0[0]).read_bytes() == (part_set.parent / part0[0]).read_bytes()  # downloaded again
    assert sorted(os.listdir(got)) == [f"{NAME}.digests.json", f"{NAME}.json", "part0", "part1"]


def test_a_failed_file_stops_the_other_transfers_at_their_next_block(tmp_path: Path, monkeypatch):
    """When one file fails (or Ctrl-C), the files in flight stop after their current 8 MiB block instead of
    streaming to their end: before, a fetch of a large part kept downloading it after the error was known."""
    import threading
    import time

    from graphshard import fetch as fetch_module
    from graphshard.formats.set_digests import FileEntry

    def endless(storage, src):  # a file of 1,000 slow blocks (10 s)
        if src.name == "bad.bin":
            raise GraphshardError(f"{src}: damaged")
        for _ in range(1000):
            time.sleep(0.01)
            yield b"x"

    monkeypatch.setattr(fetch_module, "_blocks", endless)
    huge = FileEntry(size=10**12, digest="0" * 32)
    jobs = [(location(str(tmp_path / n)), tmp_path / "out" / n, huge, None) for n in ("big.bin", "bad.bin")]
    threads, start = threading.active_count(), time.perf_counter()
    with pytest.raises(GraphshardError, match="bad.bin: damaged"):
        fetch_module._copy_all(Storage(), jobs, transfers=2)
    assert time.perf_counter() - start < 5 and threading.active_count() <= threads  # the pool's threads ended too


def test_a_fetch_into_the_sets_own_folder_is_refused(part_set: Path, tmp_path: Path, capsys):
    """`fetch SET/x.json --out SET --parts 0 --overwrite` replaced the set's own folder with part 0: its other parts
    were deleted (exit 0)."""
    own = tmp_path / "set"
    shutil.copytree(part_set.parent, own)
    before = sorted(p.relative_to(own) for p in own.rglob("*"))
    for out in (own, own / "sub", tmp_path):
        code, _, err = _run(capsys, str(own / part_set.name), "--out", str(out), "--parts", "0", "--overwrite")
        assert code == 2 and "the set's own folder" in err and err.count("\n") == 1, err
    assert sorted(p.relative_to(own) for p in own.rglob("*")) == before
