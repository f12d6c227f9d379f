"""The partition-assignment folder (reference formats.md §2): `<ntype>.txt` per node type + `partition_meta.json`.

Text is what DGL's `dispatch_data.py` reads; the shuffle converts it once into a binary `.npy` per type
(`to_binary`) so that later lookups are memory-mapped, chunk by chunk.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.formats.jsonfile import read_json_object
from graphshard.storage import Location, Storage, StoredFile, location

META_FILE = "partition_meta.json"
PART_DTYPE = np.int32


@dataclass(frozen=True)
class AssignmentMeta:
    num_parts: int
    algo_name: str
    version: str = "1.0.0"


def write_parts(folder: Path, ntype: str, parts: np.ndarray) -> Path:
    """Write one `<ntype>.txt` (one partition id per line) with pyarrow's csv writer."""
    import pyarrow.csv as pacsv  # pyarrow loads with the first file, not with this module (every run's precheck)

    from graphshard.formats.arrow import numpy_table

    path = Path(folder) / f"{ntype}.txt"
    table = numpy_table([np.asarray(parts, dtype=np.int64)], ["p"])
    pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=False))
    return path


def write_meta(folder: Path, num_parts: int, algo_name: str) -> Path:
    path = Path(folder) / META_FILE
    path.write_text(json.dumps({"version": "1.0.0", "num_parts": int(num_parts), "algo_name": algo_name}, indent=2))
    return path


def read_meta(folder: str | Path | Location, storage: Storage | None = None) -> AssignmentMeta:
    """`partition_meta.json` of an assignment folder (a path or a URL)."""
    path = StoredFile.of(location(folder).join(META_FILE), storage).shown
    data = read_json_object(path, "partition_meta.json with num_parts and algo_name", storage)
    num_parts = data.get("num_parts")
    if not isinstance(num_parts, int) or num_parts < 1:
        raise InputError(path, "num_parts", "an integer >= 1", num_parts)
    return AssignmentMeta(num_parts=num_parts, algo_name=str(data.get("algo_name", "unknown")),
                          version=str(data.get("version", "1.0.0")))


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


def to_binary(folder: Path, graph: ChunkedGraph, out_dir: Path) -> tuple[AssignmentMeta, dict[str, Path]]:
    """Check an assignment folder against a graph and write `<ntype>.npy` (int32) copies into `out_dir`."""
    meta = read_meta(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ntype in graph.node_type:
        paths[ntype] = convert_parts(folder, ntype, graph.num_nodes(ntype), meta.num_parts, out_dir / f"{ntype}.npy")
    return meta, paths
