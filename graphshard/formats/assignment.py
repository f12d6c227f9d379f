"""The partition-assignment folder (reference formats.md §2): `<ntype>.txt` per node type + `partition_meta.json`,
and with T > 1 trainers per machine `trainer_ids/<ntype>.txt` (trainer ids in [0, num_parts * T), partition =
trainer id // T; `num_trainers_per_machine` in the meta, which DGL's readers ignore).

Text is what DGL's `dispatch_data.py` reads; the shuffle converts it once into a binary `.npy` per type
(`convert_parts`) so that later lookups are memory-mapped, chunk by chunk. The folder may be a URL: files are read
and written through graphshard.storage.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.jsonfile import read_json_object
from graphshard.storage import Location, Storage, StoredFile, location

META_FILE = "partition_meta.json"
TRAINER_DIR = "trainer_ids"
TRAINER_FEAT = "trainer_id"  # DGL's node and edge feature of trainer ids in a set (an edge: its destination's)
PART_DTYPE = np.int32


@dataclass(frozen=True)
class AssignmentMeta:
    num_parts: int
    algo_name: str
    version: str = "1.0.0"
    num_trainers_per_machine: int = 1


def write_parts(folder: str | Path | Location, ntype: str, parts: np.ndarray,
                storage: Storage | None = None) -> Path | Location:
    """Write one `<ntype>.txt` (one partition id per line) with pyarrow's csv writer, into a folder or a URL."""
    import pyarrow as pa  # pyarrow loads with the first file, not with this module (every run's precheck)
    import pyarrow.csv as pacsv

    from graphshard.formats.arrow import numpy_table

    target = location(folder).join(f"{ntype}.txt")
    buf = pa.BufferOutputStream()
    pacsv.write_csv(numpy_table([np.asarray(parts, dtype=np.int64)], ["p"]), buf,
                    pacsv.WriteOptions(include_header=False))
    with (storage or Storage()).write_atomic(target, sync=False) as fh:
        fh.write(buf.getvalue())
    return Path(target.path) if target.is_local else target


def write_meta(folder: str | Path | Location, num_parts: int, algo_name: str,
               storage: Storage | None = None, trainers: int = 1) -> Path | Location:
    """Write `partition_meta.json` into a folder or a URL (one PUT); `trainers` > 1 is recorded with it."""
    target = location(folder).join(META_FILE)
    meta = {"version": "1.0.0", "num_parts": int(num_parts), "algo_name": algo_name}
    text = json.dumps({**meta, **({"num_trainers_per_machine": int(trainers)} if trainers > 1 else {})}, indent=2)
    (storage or Storage()).write_bytes(target, text.encode())
    return Path(target.path) if target.is_local else target


def read_meta(folder: str | Path | Location, storage: Storage | None = None) -> AssignmentMeta:
    """`partition_meta.json` of an assignment folder (a path or a URL)."""
    path = StoredFile.of(location(folder).join(META_FILE), storage).shown
    data = read_json_object(path, "partition_meta.json with num_parts and algo_name", storage)
    num_parts = data.get("num_parts")
    if not isinstance(num_parts, int) or num_parts < 1:
        raise InputError(path, "num_parts", "an integer >= 1", num_parts)
    trainers = data.get("num_trainers_per_machine", 1)
    if not isinstance(trainers, int) or trainers < 1:
        raise InputError(path, "num_trainers_per_machine", "an integer >= 1", trainers)
    return AssignmentMeta(num_parts=num_parts, algo_name=str(data.get("algo_name", "unknown")),
                          version=str(data.get("version", "1.0.0")), num_trainers_per_machine=trainers)


def _check_ids(path: Path, block: np.ndarray, first_line: int, num_parts: int) -> None:
    bad = np.flatnonzero((block < 0) | (block >= num_parts))
    if len(bad):
        raise InputError(path, f"line {first_line + int(bad[0]) + 1}", f"a partition id in [0, {num_parts})",
                         int(block[bad[0]]))


def convert_parts(folder: str | Path | Location, ntype: str, expected_rows: int, num_parts: int, out: Path,
                  storage: Storage | None = None) -> Path:
    """Stream one `<ntype>.txt` (in a folder that may be a URL) into an int32 `.npy`, checking every line:
    `expected_rows` ids in [0, num_parts).

    Memory stays at one csv block (16 MiB) whatever the node count; an object is streamed by ranged reads.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from graphshard.formats.arrow import column_to_numpy

    source = StoredFile.of(location(folder).join(f"{ntype}.txt"), storage)
    path = source.shown
    if not source.exists():
        raise InputError(path, f"node type '{ntype}'", f"an assignment file with {expected_rows} lines", "no such file")
    dest = np.lib.format.open_memmap(out, mode="w+", dtype=PART_DTYPE, shape=(expected_rows,))
    row = 0
    if source.size():
        try:
            reader = pacsv.open_csv(
                source.loc.path if source.is_local else source.open(block_size=1 << 24),
                read_options=pacsv.ReadOptions(column_names=["p"], block_size=1 << 24),
                convert_options=pacsv.ConvertOptions(column_types={"p": pa.int64()}),
            )
            for batch in reader:
                block = column_to_numpy(batch.column(0))
                if row + len(block) > expected_rows:
                    raise InputError(path, "line count", f"{expected_rows} lines (one per '{ntype}' node)",
                                     f"more than {expected_rows}")
                _check_ids(path, block, row, num_parts)
                dest[row:row + len(block)] = block
                row += len(block)
        except pa.ArrowInvalid as err:
            raise InputError(path, "partition id", "one integer per line", str(err).splitlines()[0]) from None
    if row != expected_rows:
        raise InputError(path, "line count", f"{expected_rows} lines (one per '{ntype}' node)", f"{row} lines")
    dest.flush()
    del dest
    return out


def read_parts(folder: str | Path | Location, ntype: str, expected_rows: int, num_parts: int,
               storage: Storage | None = None) -> np.ndarray:
    """Read and check one `<ntype>.txt` into memory (for small graphs and tests)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = convert_parts(folder, ntype, expected_rows, num_parts, Path(tmp) / "p.npy", storage)
        return np.load(out)

