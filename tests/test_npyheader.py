"""numpy's `.npy` header parser runs under one lock once graphshard's readers are imported: CPython 3.11's AST
constructor, which the parser uses, may raise SystemError when two threads parse at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from graphshard import npyheader
from graphshard.formats.readers import NumpyReader


def test_every_npy_read_goes_through_the_locked_parser(tmp_path):
    assert npyheader._format._read_array_header.__wrapped__ is not None
    files = []
    for i in range(64):
        files.append(tmp_path / f"{i}.npy")
        np.save(files[-1], np.arange(i * 3, dtype=np.int64).reshape(i, 3))
    with ThreadPoolExecutor(8) as pool:
        shapes = list(pool.map(lambda f: NumpyReader().layout(f).shape, files * 8))
        loaded = list(pool.map(lambda f: np.load(f, mmap_mode="r").shape, files * 8))
    assert shapes == loaded == [(i, 3) for i in range(64)] * 8
