"""numpy <-> Arrow columns without pandas.

pyarrow imports pandas the first time `pa.array(ndarray)`, `Array.to_numpy` or `pq.read_table` runs: ~0.6 s and
~60 MB in every process (each Dask worker) that reads or writes a csv/parquet chunk or an assignment file. Numbers
and booleans without nulls are converted here through their buffers (views where the layouts agree); anything else
goes through pyarrow's own conversion.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def column_to_numpy(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow column as numpy: a view of its buffer for integers and floats without nulls, booleans unpacked."""
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    t = col.type
    if col.null_count or not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(t):  # bit-packed, least significant bit first
        bits = np.frombuffer(col.buffers()[1], np.uint8) if len(col) else np.zeros(0, np.uint8)
        return np.unpackbits(bits, count=col.offset + len(col), bitorder="little")[col.offset:].view(np.bool_)
    kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
    dtype = np.dtype(f"<{kind}{t.bit_width // 8}")
    if len(col) == 0:
        return np.empty(0, dtype)
    return np.frombuffer(col.buffers()[1], dtype=dtype, count=len(col), offset=col.offset * dtype.itemsize)


def numpy_column(arr: np.ndarray) -> pa.Array:
    """A 1-D numeric or boolean array as an Arrow array (numbers share the array's memory)."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(arr), [None, pa.py_buffer(np.packbits(arr, bitorder="little"))])
    if arr.dtype.kind in "iuf" and arr.dtype.byteorder in "=<|":
        return pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), len(arr), [None, pa.py_buffer(arr)])
    return pa.array(arr)


def numpy_table(columns: list[np.ndarray], names: list[str]) -> pa.Table:
    """1-D arrays as the columns of an Arrow table."""
    return pa.Table.from_arrays([numpy_column(c) for c in columns], names=names)
