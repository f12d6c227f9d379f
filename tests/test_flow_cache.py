"""Step artifacts and manifests (no Prefect): keys, content hashes, atomic builds, stale staging cleanup."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from graphshard.formats.chunked import load_metadata
from graphshard.pipeline.cache import StepStore, step_key
from graphshard.pipeline.manifest import HashCache, folder_manifest, graph_files


def test_step_key_depends_on_inputs_section_and_version(monkeypatch):
    base = step_key("assign", {"graph": "a"}, {"num_parts": 2})
    assert base == step_key("assign", {"graph": "a"}, {"num_parts": 2})
    assert base != step_key("assign", {"graph": "b"}, {"num_parts": 2})
    assert base != step_key("assign", {"graph": "a"}, {"num_parts": 3})
    assert base != step_key("shuffle", {"graph": "a"}, {"num_parts": 2})
    monkeypatch.setattr("graphshard.pipeline.cache.__version__", "999")
    assert base != step_key("assign", {"graph": "a"}, {"num_parts": 2})


def test_input_manifest_follows_content_not_paths(tmp_path, rmat_small):
    import shutil

    graph = load_metadata(rmat_small)
    files = graph_files(graph)
    assert "metadata.json" in files and len(files) > 4
    first = HashCache(tmp_path / "h.json").manifest(files)
    copy = tmp_path / "copy"
    shutil.copytree(rmat_small.parent, copy)
    moved = HashCache(tmp_path / "h.json").manifest(graph_files(load_metadata(copy / "metadata.json")))
    assert moved.digest == first.digest  # same bytes elsewhere: same digest
    chunk = copy / graph.edges["_N:_E:_N"].data[0]
    data = bytearray(chunk.read_bytes())
    data[-1] ^= 1
    chunk.write_bytes(bytes(data))  # same size, new content, new mtime
    assert HashCache(tmp_path / "h.json").manifest(graph_files(load_metadata(copy / "metadata.json"))).digest \
        != first.digest


def test_hash_cache_reuses_unchanged_files(tmp_path, monkeypatch):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    cache = HashCache(tmp_path / "h.json")
    cache.manifest({"a.bin": f})
    calls = []
    monkeypatch.setattr("graphshard.pipeline.manifest.hash_file", lambda p, algorithm: calls.append(p) or "h")
    HashCache(tmp_path / "h.json").manifest({"a.bin": f})
    assert calls == []
    f.write_bytes(b"y" * 100)
    os.utime(f, ns=(1, 1))
    HashCache(tmp_path / "h.json").manifest({"a.bin": f})
    assert calls == [f]


def test_hash_cache_sees_a_copy_that_keeps_size_mtime_and_inode(tmp_path, monkeypatch):
    """`cp -p` of other bytes over an input file keeps its size, mtime and inode; only its ctime tells (git's
    index compares it too). The partitions of the old bytes must not be reused."""
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    HashCache(tmp_path / "h.json").manifest({"a.bin": f})
    before = f.stat()
    time.sleep(0.01)
    f.write_bytes(b"y" * 100)
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = f.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    calls = []
    monkeypatch.setattr("graphshard.pipeline.manifest.hash_file", lambda p, algorithm: calls.append(p) or "h")
    HashCache(tmp_path / "h.json").manifest({"a.bin": f})
    assert calls == [f]


def test_build_is_atomic_and_lookup_checks_sizes(tmp_path):
    store = StepStore(tmp_path)

    def make(stage):
        (stage / "out").mkdir()
        (stage / "out" / "data.bin").write_bytes(b"1234")
        (stage / "out" / "timing.json").write_text("{\"s\": 1.5}")
        return {"rows": 4}

    def broken(stage):
        (stage / "half.bin").write_bytes(b"12")
        raise RuntimeError("crash mid-step")

    with pytest.raises(RuntimeError):
        store.build("s", "k1", broken, {})
    assert store.lookup("s", "k1") is None
    assert not [p for p in (tmp_path / "s").rglob("*") if p.name != ".leases"]  # no stage, no claim
    result = store.build("s", "k1", make, {"in": "x"}, volatile=("out/timing.json",))
    assert result.summary["rows"] == 4 and "seconds" in result.summary
    again = store.lookup("s", "k1")
    assert again is not None and again.digest == result.digest
    assert folder_manifest(result.folder).files.keys() == {"out/data.bin", "out/timing.json"}
    (result.folder / "out" / "timing.json").write_text("{\"s\": 2.75}")  # volatile: not in the digest
    assert store.build("s", "k2", make, {}, volatile=("out/timing.json",)).digest \
        == result.digest
    (result.folder / "out" / "data.bin").write_bytes(b"12345")
    assert store.lookup("s", "k1") is None  # a damaged artifact is rebuilt, not reused


def test_clean_stale_removes_dead_runs_only(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    (tmp_path / "shuffle").mkdir()
    stale = tmp_path / "shuffle" / f".abc.tmp-{dead_pid}-0123abcd"
    live = tmp_path / "shuffle" / f".abd.tmp-{os.getpid()}-0123abcd"
    out_stale = tmp_path / f".out.tmp-{dead_pid}-89abcdef"
    for p in (stale, live, out_stale):
        p.mkdir()
    removed = StepStore(tmp_path).clean_stale(tmp_path / "out")
    assert sorted(removed) == sorted([stale, out_stale]) and live.exists()


def test_a_killed_build_on_a_store_is_swept_by_a_later_build(s3_bucket, monkeypatch):
    """A work folder on a store: a build killed mid-way leaves files under its key and a lease record nobody renews;
    once the lease lapses, a later build of the step (another key) deletes them. Finished keys are never touched."""
    import time

    from graphshard.storage import Storage, lease, location

    monkeypatch.setenv("GRAPHSHARD_LEASE", "1")
    work, storage = location(f"{s3_bucket}/work"), Storage()
    store = StepStore(work, storage)

    def make(folder):
        storage.write_bytes(folder / "a.txt", b"done")
        return {}

    finished = store.build("assign", "k1", make, {})
    storage.write_bytes(work / "assign" / "k0" / "half.txt", b"killed mid-way")  # what a SIGKILLed build left
    storage.write_bytes(work / "assign" / lease.LEASES / "k0.json", b"{}")
    time.sleep(2)
    store.build("assign", "k2", make, {})
    assert sorted(e.rel for e in storage.listing(work / "assign")) == [
        "k1/a.txt", "k1/manifest.json", "k2/a.txt", "k2/manifest.json"]
    assert store.lookup("assign", "k1").digest == finished.digest


def test_staged_output_clears_what_this_hosts_dead_processes_left(tmp_path):
    """Any staged output (`graphshard assign --out`, `shuffle --out`, `generate --out`, ...) first deletes the
    staging folders a killed process of this host left beside it; another host's (a folder shared over NFS, where
    a process id says nothing) and a live process's stay."""
    from graphshard import atomic

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    here = atomic._host_tag()
    left = [tmp_path / f".out.tmp-{dead}-h{here}-0123abcd", tmp_path / f".out.tmp-{dead}-89abcdef"]  # new, old name
    kept = [tmp_path / f".out.tmp-{dead}-h{'0' * 6 if here != '0' * 6 else '1' * 6}-0123abcd",
            tmp_path / f".out.tmp-{os.getpid()}-h{here}-0123abcd", tmp_path / ".other.tmp-1-0123abcd"]
    for p in left + kept:
        p.mkdir()
    with atomic.staged_output(tmp_path / "out") as stage:
        (stage / "f").write_text("x")
    assert all(p.exists() for p in kept) and not any(p.exists() for p in left)
    assert (tmp_path / "out" / "f").read_text() == "x"
