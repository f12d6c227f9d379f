"""Two runs publishing to one output at the same moment: a set is written only where none is (unless overwrite), so
one wins and the other fails in one line with nothing replaced. Locally the final rename never replaces a folder
that appeared since the check; on S3 the partition config is one PUT with If-None-Match: *."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphshard import atomic
from graphshard.atomic import move_into_place, publish_on_store
from graphshard.errors import GraphshardError
from graphshard.storage import Storage, location


def _appearing(final: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make another process's folder appear at `final` just before this process renames its stage there."""
    real = os.rename

    def rename(src, dst):
        final.mkdir()
        (final / "theirs.json").write_text("{}")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "rename", rename)


def test_local_folder_that_appears_before_the_rename_is_kept(tmp_path, monkeypatch):
    stage, final = tmp_path / ".stage", tmp_path / "out"
    stage.mkdir()
    (stage / "ours.json").write_text("[]")
    _appearing(final, monkeypatch)
    with pytest.raises(GraphshardError, match="output folder exists"):
        move_into_place(stage, final, overwrite=False)
    assert sorted(p.name for p in final.iterdir()) == ["theirs.json"] and not stage.exists()


@pytest.mark.parametrize("where", ["local", "s3"])
def test_write_new_writes_only_where_nothing_is(where, tmp_path, request):
    base = str(tmp_path) if where == "local" else request.getfixturevalue("s3_bucket")
    target, storage = location(f"{base}/set/graph.json"), Storage()
    if where == "local":
        target.local_path().parent.mkdir(parents=True)
    assert storage.write_new(target, b"first") is True
    assert storage.write_new(target, b"second") is False
    assert storage.read_bytes(target) == b"first"
    if where == "local":
        assert [p.name for p in target.local_path().parent.iterdir()] == ["graph.json"]  # no temporary left


def test_write_new_on_s3_is_the_store_s_precondition_not_a_check(s3_bucket, monkeypatch):
    """A writer that checked before the other's PUT landed (its `exists` says nothing is there) still loses."""
    import s3fs

    target, storage = location(f"{s3_bucket}/set/claim.json"), Storage()
    assert storage.write_new(target, b"first") is True
    monkeypatch.setattr(s3fs.S3FileSystem, "exists", lambda *a, **k: False)
    monkeypatch.setattr(s3fs.S3FileSystem, "_exists", lambda *a, **k: _false())
    assert storage.write_new(target, b"second") is False
    assert storage.read_bytes(target) == b"first"


async def _false() -> bool:
    return False


def test_exclusive_publish_on_s3_keeps_the_config_another_run_put(tmp_path, s3_bucket):
    storage, out = Storage(), location(f"{s3_bucket}/sets/g")
    src = tmp_path / "set"
    (src / "part0").mkdir(parents=True)
    (src / "part0" / "graph.dgl").write_bytes(b"ours")
    (src / "g.json").write_text('{"part-0": {"part_graph": "part0/graph.dgl"}}')
    storage.write_bytes(out / "g.json", b"theirs")  # published by another run after this one's checks
    with pytest.raises(GraphshardError, match="g.json: a partition config appeared there while this run published"):
        publish_on_store([src], out, "g.json", "run1", storage, exclusive=True)
    assert storage.read_bytes(out / "g.json") == b"theirs"
    publish_on_store([src], out, "g.json", "run1", storage)  # overwrite: replaced
    assert b"run1" in storage.read_bytes(out / "g.json")


def test_a_publish_leaves_the_prefix_of_a_run_still_at_work_on_the_output(tmp_path, s3_bucket):
    """Two runs that may both replace one output (overwrite): B's shuffle writes under its run prefix while A
    publishes. A's publish must not delete that prefix, or B's config, written next, names deleted files. A run at
    work holds a lease in `.runs/` (the flow's `_at_work_on`); the earlier sets wait for a publish that finds none."""
    from graphshard.runprefix import RUNS
    from graphshard.storage import lease

    storage, out = Storage(), location(f"{s3_bucket}/sets/g")
    src = tmp_path / "set"
    (src / "part0").mkdir(parents=True)
    (src / "part0" / "graph.dgl").write_bytes(b"a")
    (src / "g.json").write_text('{"part-0": {"part_graph": "part0/graph.dgl"}}')

    def runs() -> set[str]:
        return {e.rel.split("/")[0] for e in storage.listing(out / RUNS)}

    publish_on_store([src], out, "g.json", "earlier", storage)
    with lease.held(storage, out / RUNS, "run-b"):  # run B at work: its shuffle writes its prefix
        storage.write_bytes(out / RUNS / "b" / "part0" / "graph.dgl", b"b")
        publish_on_store([src], out, "g.json", "a", storage)  # run A publishes meanwhile
        assert runs() >= {"earlier", "a", "b"}  # B's prefix kept (and the earlier set, for a later publish)
        publish_on_store([src], out, "g.json", "b", storage)  # B publishes what it wrote
        assert storage.read_bytes(out / RUNS / "b" / "part0" / "graph.dgl") == b"a"  # its files whole, named
    publish_on_store([src], out, "g.json", "c", storage)  # no run at work: every other prefix goes
    assert runs() == {"c"} and b".runs/c/" in storage.read_bytes(out / "g.json")
