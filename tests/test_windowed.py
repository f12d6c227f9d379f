"""storage.windowed: random reads and writes of a memory map hold one window of it in the process's pages."""

from __future__ import annotations

import numpy as np

from graphshard.storage import windowed


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def _map(tmp_path, values: np.ndarray, mode: str = "r") -> np.ndarray:
    np.save(tmp_path / "a.npy", values)
    return np.load(tmp_path / "a.npy", mmap_mode=mode)


def test_take_and_put_match_numpy_with_repeats_and_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(windowed, "WINDOW_BYTES", 24 * 10)  # windows of 10 rows of 3 int64
    values = np.arange(3_000, dtype=np.int64).reshape(1_000, 3)
    rows = np.random.default_rng(1).integers(0, 1_000, 4_000)  # repeats
    assert np.array_equal(windowed.take(_map(tmp_path, values), rows), values[rows])
    new = np.random.default_rng(2).integers(0, 9, (len(rows), 3))
    arr, ref = _map(tmp_path, values, "r+"), values.copy()
    windowed.put(arr, rows, new)
    ref[rows] = new  # a repeated row keeps its last value
    assert np.array_equal(np.asarray(arr), ref)
    windowed.put(arr, rows[:5], -1)  # a scalar
    assert (np.asarray(arr)[rows[:5]] == -1).all()
    assert np.array_equal(windowed.take(values, rows[:7]), values[rows[:7]])  # not a map: plain indexing


def test_a_random_gather_holds_a_window_not_the_map(tmp_path, monkeypatch):
    """80 MB map, 1M random rows: a plain gather faults in about every page of the map, the windowed one a window."""
    monkeypatch.setattr(windowed, "WINDOW_BYTES", 4 << 20)
    np.save(tmp_path / "a.npy", np.arange(10_000_000, dtype=np.int64))
    rows = np.random.default_rng(0).integers(0, 10_000_000, 1_000_000)
    kept = np.load(tmp_path / "a.npy", mmap_mode="r")  # held open, as a task holds its maps
    before = _rss()
    out = windowed.take(kept, rows)
    windowed_growth = _rss() - before - out.nbytes
    other = np.load(tmp_path / "a.npy", mmap_mode="r")
    before = _rss()
    plain = np.asarray(other[rows])
    plain_growth = _rss() - before - plain.nbytes
    assert np.array_equal(out, plain) and plain_growth > 60e6 and windowed_growth < 25e6, (plain_growth,
                                                                                            windowed_growth)
