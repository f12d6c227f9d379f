"""Bucket files on local disk: read back copied or as read-only views of the file's pages."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.formats.buckets import read_bucket, write_bucket


@pytest.mark.parametrize("mapped", [False, True])
def test_bucket_records_round_trip(tmp_path, mapped):
    rows = [np.arange(10, dtype=np.int32), np.arange(6, dtype=np.float32).reshape(3, 2), np.zeros(0, np.int64),
            np.array([2**40, -1], dtype=np.int64)]
    path = tmp_path / "b" / "0.bkt"
    write_bucket(path, rows)
    back = read_bucket(path, mapped=mapped)
    assert len(back) == len(rows)
    for got, want in zip(back, rows):
        assert got.dtype == want.dtype and got.shape == want.shape and (got == want).all()
        assert got.flags.writeable != mapped
    assert [a.tolist() for a in read_bucket(path, 2, mapped=mapped)] == [a.tolist() for a in rows[:2]]
    write_bucket(path, [])
    assert read_bucket(path, mapped=mapped) == []


def test_mapped_records_outlive_the_file_being_replaced(tmp_path):
    path = tmp_path / "0.bkt"
    write_bucket(path, [np.arange(1000, dtype=np.int64)])
    view = read_bucket(path, mapped=True)[0]
    write_bucket(path, [np.zeros(1000, dtype=np.int64)])  # a retried task rewrites it: a new file renamed in place
    assert (view == np.arange(1000)).all() and (read_bucket(path, mapped=True)[0] == 0).all()
