"""A scratch prefix on a store is held under a lease (graphshard.storage.lease): a killed run's prefix, whose lease
nobody renews, is deleted by the next run's scratch in the same place; a live run's is not, however long it runs."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from graphshard.storage import Storage, location
from graphshard.storage import scratch as sc
from graphshard.storage.lease import LEASES


def _killed_run(where: str, name: str) -> None:
    """What a SIGKILLed run leaves: its scratch objects and its lease record, which nothing renews any more."""
    store = Storage()
    store.write_bytes(f"{where}/{name}/buckets/0.bkt", b"x" * 100)
    store.write_bytes(f"{where}/{LEASES}/{name}.json", b"{}")


@pytest.mark.parametrize("on", ["s3", "shared folder"])
def test_a_killed_runs_scratch_goes_once_its_lease_expires_and_a_live_one_stays(on, request, tmp_path, monkeypatch):
    """On a store, and in a local folder given as `shuffle.scratch_dir` (`fresh`: hosts may share it over NFS)."""
    top = request.getfixturevalue("s3_bucket") if on == "s3" else str(tmp_path)
    where, store = f"{top}/scratch", Storage()
    store.write_bytes(f"{top}/scratch/user-file", b"not ours")  # in the folder, but under no lease: never touched
    _killed_run(where, "deadbeef0001")
    with sc.scratch_space(where, fresh=True) as fresh:  # the default lease (ten minutes) has not lapsed: they stay
        assert {e.rel for e in store.listing(where)} >= {"deadbeef0001/buckets/0.bkt", f"{LEASES}/deadbeef0001.json"}
        assert store.exists(f"{where}/{LEASES}/{location(str(fresh)).name}.json")

    monkeypatch.setenv("GRAPHSHARD_LEASE", "4")  # renewed every second from here on

    entered, leave = threading.Event(), threading.Event()

    def live_run() -> None:  # a run that holds its scratch for longer than a lease, renewing it
        with sc.scratch_space(where, fresh=True) as root:
            sc.save_array(root / "a.npy", np.arange(3))
            entered.set()
            leave.wait(30)

    runner = threading.Thread(target=live_run)
    runner.start()
    assert entered.wait(30)
    time.sleep(5)  # past the lease: the killed run's record is now stale, the live run's renewed
    with sc.scratch_space(where, fresh=True) as later:
        rels = {e.rel for e in store.listing(where)}
        names = {r.split("/")[0] for r in rels}
        assert "deadbeef0001" not in names and f"{LEASES}/deadbeef0001.json" not in rels
        live = [n for n in names if n not in (LEASES, "user-file", location(str(later)).name)]
        assert len(live) == 1 and sc.load_array(sc.scratch_path(f"{where}/{live[0]}/a.npy")).tolist() == [0, 1, 2]
    leave.set()
    runner.join()
    assert [e.rel for e in store.listing(where)] == ["user-file"]


def test_a_store_that_refuses_the_sweep_does_not_fail_the_run(s3_bucket, monkeypatch):
    """Cleaning up after others is best effort: a listing that fails is logged, and the run's own scratch works."""
    from graphshard.storage import StorageError, lease

    def refuse(self, prefix):
        raise StorageError(f"{prefix}: access denied (listing)")

    monkeypatch.setattr(Storage, "modified", refuse)
    with sc.scratch_space(f"{s3_bucket}/scratch") as root:
        sc.save_array(root / "a.npy", np.arange(2))
        assert sc.load_array(root / "a.npy").tolist() == [0, 1]
    assert lease.sweep(Storage(), location(f"{s3_bucket}/scratch"), "x") == []


def test_modified_times_are_the_stores(s3_bucket, tmp_path):
    """`Storage.modified`: each file's last write by the store's clock (S3 LastModified; a local file's mtime)."""
    store = Storage()
    store.write_bytes(f"{s3_bucket}/m/a", b"1")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b").write_bytes(b"2")
    now = time.time()
    for got in (store.modified(f"{s3_bucket}/m"), store.modified(tmp_path / "d")):
        assert len(got) == 1 and abs(next(iter(got.values())) - now) < 60, got
