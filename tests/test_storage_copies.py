"""storage/copies.py: a step's copies of store objects on a worker's disk, shared by the step's tasks, never more bytes
than the budget (least recently used evicted first, never a copy a task is reading; what does not fit is read from the
store), deleted by `drop_copies`."""

from __future__ import annotations

from pathlib import Path

import dask
import pytest

from graphshard.storage import Storage, location
from graphshard.storage.copies import CopyCache, _budget, drop_copies, local_copies, prefetch
from graphshard.storage.scratch import local_dir

SIZE = 100


@pytest.fixture
def objects(s3_server, monkeypatch) -> tuple[Storage, str, list[str]]:
    """Objects a, b, c of SIZE bytes under a fresh prefix; `Storage.download` calls recorded in the returned list's
    storage (`storage.fetched`)."""
    storage, prefix = Storage({"s3://": s3_server.options()}), f"{s3_server.new_bucket()}/part0"
    for name in "abc":
        storage.write_bytes(location(prefix).join(name), name.encode() * SIZE)
    fetched: list[str] = []
    real = Storage.download

    def counted(self, where, local):
        fetched.append(location(where).name)
        return real(self, where, local)

    monkeypatch.setattr(Storage, "download", counted)
    return storage, prefix, fetched


def _read(copies, prefix: str, name: str) -> bytes | None:
    """What a task reads of `name`: its copy's bytes, None when it is to be read from the store."""
    got = copies.file(location(prefix).join(name))
    if got is None:
        return None
    assert str(got) == location(prefix).join(name).url and got.loc.is_local  # named by the object, read locally
    return Path(got.loc.path).read_bytes()


def _on_disk(cache: CopyCache) -> int:
    return sum(p.stat().st_size for p in (local_dir() / f"copies-{cache.name}").rglob("*") if p.is_file())


def test_tasks_of_a_step_share_a_copy_and_the_least_recently_used_goes(objects):
    storage, prefix, fetched = objects
    cache = CopyCache.fresh(budget=2 * SIZE + SIZE // 2)
    try:
        for names in ("ab", "ab", "c", "b", "a"):  # one task each
            with local_copies(prefix, storage, cache) as copies:
                assert all(_read(copies, prefix, n) == n.encode() * SIZE for n in names)
                assert _on_disk(cache) <= cache.budget
        # a, b copied once for the first two tasks; c evicted a (least recently used); b still held; a again
        assert fetched == ["a", "b", "c", "a"]
        assert _on_disk(cache) == 2 * SIZE
    finally:
        drop_copies(cache.name)
    assert not (local_dir() / f"copies-{cache.name}").exists()


def test_a_copy_in_use_is_never_evicted_and_what_does_not_fit_is_read_from_the_store(objects):
    storage, prefix, fetched = objects
    cache = CopyCache.fresh(budget=2 * SIZE)
    try:
        with local_copies(prefix, storage, cache) as one, local_copies(prefix, storage, cache) as two:
            assert _read(one, prefix, "a") and _read(two, prefix, "b")
            assert _read(two, prefix, "c") is None  # a and b are being read: c does not fit, the task reads the store
            assert _read(one, prefix, "a") == b"a" * SIZE and _on_disk(cache) == 2 * SIZE
        with local_copies(prefix, storage, cache) as three:
            assert _read(three, prefix, "c") == b"c" * SIZE  # free again: the least recently used (a) went
        assert fetched == ["a", "b", "c"] and _on_disk(cache) == 2 * SIZE
    finally:
        drop_copies(cache.name)
    small = CopyCache.fresh(budget=SIZE - 1)
    with local_copies(prefix, storage, small) as copies:
        assert _read(copies, prefix, "a") is None  # larger than the whole budget
    drop_copies(small.name)


def test_copies_of_one_block_only_go_with_it(objects):
    storage, prefix, fetched = objects
    before = set(local_dir().glob("copies-*"))
    with local_copies(prefix, storage) as copies:
        assert _read(copies, prefix, "a") == b"a" * SIZE
    with local_copies(prefix, storage) as copies:
        assert _read(copies, prefix, "a") == b"a" * SIZE
    assert fetched == ["a", "a"] and set(local_dir().glob("copies-*")) == before


def test_the_budget_comes_from_the_cache_then_dask_config_then_free_space(tmp_path):
    assert _budget(CopyCache("x", 123), tmp_path) == 123
    with dask.config.set({"graphshard.copy-budget": "1 MiB"}):
        assert _budget(CopyCache("x"), tmp_path) == 2**20
    import shutil

    assert 0 < _budget(CopyCache("x"), tmp_path) <= shutil.disk_usage(tmp_path).free


def test_a_prefetch_is_taken_by_the_task_and_never_evicts_nor_passes_the_budget(objects):
    """`prefetch` downloads in the background what fits beside the copies held (a and b of a, b, c with room for
    two and a half), evicting nothing; a task then reads them without a download of its own; c, which did not fit,
    is the task's to copy (evicting the least recently used as usual); an object not in the step's listing is not
    prefetched; drop_copies waits for the background downloads and removes everything."""
    import time

    storage, prefix, fetched = objects
    objects_listed = storage.identities(prefix)
    cache = CopyCache.fresh(budget=2 * SIZE + SIZE // 2, objects=objects_listed)
    try:
        prefetch([location(prefix).join(n) for n in ("a", "b", "c", "zzz")], storage, cache)
        deadline = time.monotonic() + 10
        while _on_disk(cache) < 2 * SIZE and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # c would have started by now
        assert sorted(fetched) == ["a", "b"] and _on_disk(cache) == 2 * SIZE
        with local_copies(prefix, storage, cache) as copies:
            assert _read(copies, prefix, "b") == b"b" * SIZE and _read(copies, prefix, "a") == b"a" * SIZE
            assert sorted(fetched) == ["a", "b"]  # the task took the prefetched copies
        with local_copies(prefix, storage, cache) as copies:
            assert _read(copies, prefix, "c") == b"c" * SIZE
        assert sorted(fetched[:2]) == ["a", "b"] and fetched[2:] == ["c"] and _on_disk(cache) <= cache.budget
    finally:
        drop_copies(cache.name)
    assert not (local_dir() / f"copies-{cache.name}").exists()
