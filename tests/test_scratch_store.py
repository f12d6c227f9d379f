"""The scratch on a store (graphshard.storage.scratch): buckets as objects, arrays as pieces assembled into a local
copy per process; a lost local copy is rebuilt from the store."""

from __future__ import annotations

import numpy as np

from graphshard.formats.buckets import read_bucket, write_bucket
from graphshard.storage import scratch as sc


def test_buckets_and_arrays_on_a_store(s3_bucket, tmp_path):
    root = sc.scratch_path(f"{s3_bucket}/scratch")
    assert sc.is_store(root) and not sc.is_store(sc.scratch_path(tmp_path))
    rows = [np.arange(10, dtype=np.int32), np.ones((3, 2), np.float32), np.zeros(0, np.int64)]
    write_bucket(root / "b" / "0.bkt", rows)
    back = read_bucket(root / "b" / "0.bkt")
    assert [a.tolist() for a in back] == [a.tolist() for a in rows] and back[0].flags.writeable
    assert [a.tolist() for a in read_bucket(root / "b" / "0.bkt", 1)] == [rows[0].tolist()]

    arr = root / "ids.npy"
    sc.create_array(arr, (100, 2), np.int64, fill=-1)
    sc.write_range(arr, 10, np.full((20, 2), 7))
    sc.write_at(arr, np.array([0, 99]), 5, writer="t1-0")
    sc.write_at(arr, np.array([99]), 6, writer="t2-0")  # a later writer's name keeps the entry
    local = tmp_path / "range.npy"
    np.save(local, np.full((5, 2), 3, np.int64))
    sc.upload_range(arr, 50, local)
    want = np.full((100, 2), -1)
    want[10:30], want[0], want[99], want[50:55] = 7, 5, 6, 3
    got = sc.open_array(arr)
    assert (got == want).all() and sc.open_array(arr) is got  # mapped once per process

    sc.drop_local(root.root)  # the copy is gone (a lost worker's disk): the next reader assembles it again
    assert not list((sc.local_dir()).glob("*/*.npy"))
    assert (sc.open_array(arr) == want).all()
    sc.drop_local(root.root)

    sc.save_array(root / "f2c" / "0.npy", np.arange(4))
    assert sc.load_array(root / "f2c" / "0.npy").tolist() == [0, 1, 2, 3]
    sc.remove(root / "f2c" / "0.npy")
    sc.remove(root)
    assert root.storage.listing(root.loc) == []


def test_shared_folder_mode_is_a_memory_map(tmp_path):
    arr = sc.scratch_path(tmp_path) / "a.npy"
    sc.create_array(arr, (10,), np.int32, fill=-1)
    sc.write_range(arr, 2, np.array([1, 2], np.int32))
    sc.write_at(arr, np.array([9]), 4, writer="x")
    assert sc.open_array(arr).tolist() == [-1, -1, 1, 2, -1, -1, -1, -1, -1, 4]
    assert isinstance(sc.open_array(arr), np.memmap)


def test_a_removed_array_leaves_the_local_disk(s3_bucket, monkeypatch):
    """Copies of arrays the step removed from the store (a finished round's) go when the next array is copied (once
    the copies held pass EVICT_BYTES)."""
    monkeypatch.setattr(sc, "EVICT_BYTES", 0)
    root = sc.scratch_path(f"{s3_bucket}/evict")
    old, new = root / "labels-1.npy", root / "labels-2.npy"
    for arr in (old, new):
        sc.create_array(arr, (8,), np.int64)
    sc.open_array(old)
    copies = sorted(sc.local_dir().rglob("*.npy"))
    sc.remove(old)
    sc.open_array(new)
    after = sorted(sc.local_dir().rglob("*.npy"))
    assert len(copies) == 1 and copies[0] not in after and len(after) == 1
    sc.drop_local(root.root)


def test_a_failed_steps_error_is_not_replaced_by_its_cleanups(s3_bucket, monkeypatch, caplog):
    """With the store gone mid-step, the scratch's deletion failed too and its line (naming an internal scratch
    prefix) replaced the step's own; the lease's deletion warned on the terminal as well."""
    import logging

    import pytest

    from graphshard.storage import Storage, StorageError

    def unreachable(*args, **kwargs):
        raise StorageError(f"{s3_bucket}/scratch/...: cannot reach the store", "unreachable")

    with pytest.raises(ValueError, match="the step's own failure"):
        with sc.scratch_space(f"{s3_bucket}/scratch") as root:
            sc.create_array(root / "a.npy", (4,), np.int64)
            monkeypatch.setattr(sc, "remove", unreachable)
            monkeypatch.setattr(Storage, "delete_prefix", unreachable)  # the lease's record too
            raise ValueError("the step's own failure")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], [r.getMessage() for r in caplog.records]
