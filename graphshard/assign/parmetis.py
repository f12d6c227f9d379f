"""ParMETIS over MPI: the step launches `mpirun -np R python -m graphshard.assign.parmetis ...` and merges the ranks'
ranges into `<ntype>.txt`.

Every rank reads every R-th edge chunk, sends each directed entry (u, v) of the symmetrized graph to the rank owning
u's contiguous vertex range (MPI Alltoallv), builds its local CSR, calls `ParMETIS_V3_PartKway` through ctypes and
writes the parts of its range as `rank-<r>.npy`. The library is a path (default: Debian's int64 PT-Scotch ParMETIS
interface, `apt-get install libscotchparmetis-dev`); its integer width comes from PT-Scotch's `SCOTCH_numSizeof`, or
from `parmetis_idx_bits` for a real ParMETIS. PT-Scotch balances a single constraint and reports no edge cut (the
report computes it); ParMETIS has no communication-volume objective.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from distributed import Client

from graphshard.assign.base import TEXT_BLOCK, Partitioner, write_blocks
from graphshard.assign.metis_capi import pointer
from graphshard.assign.options import AssignOptions
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph

DEFAULT_LIB = "/usr/lib/x86_64-linux-gnu/parmetis-int64/libparmetis.so"
SCOTCH_INT64_DIR = "/usr/lib/x86_64-linux-gnu/scotch-int64"
INSTALL_HINT = "apt-get install openmpi-bin libscotchparmetis-dev; pip install mpi4py"
ERROR_TAG = "graphshard-error: "
METIS_OK = 1


# ---- launcher side (the assignment step) -------------------------------------------------------------------------

def library_path(options: AssignOptions) -> Path:
    """The ParMETIS library to load, checked to exist."""
    path = Path(options.parmetis_lib or DEFAULT_LIB)
    if not path.exists():
        raise GraphshardError(f"parmetis_lib: {path} does not exist (install it: {INSTALL_HINT}, "
                              "or pass --parmetis-lib PATH to a libparmetis.so)")
    return path


def mpi_environment(lib: Path) -> dict[str, str]:
    """Environment for mpirun: root allowed, the library's folders (and scotch-int64) first on LD_LIBRARY_PATH,
    PT-Scotch single-threaded in each rank (its threads make results differ from run to run)."""
    dirs = [str(lib.parent), str(lib.resolve().parent)]
    if lib.resolve().parent.name != "scotch-int64" and lib == Path(DEFAULT_LIB):
        dirs.append(SCOTCH_INT64_DIR)
    old = os.environ.get("LD_LIBRARY_PATH", "")
    return {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "SCOTCH_PTHREAD_NUMBER": "1", "LD_LIBRARY_PATH": ":".join(dict.fromkeys(dirs + ([old] if old else [])))}


def rank_failure(stderr: str, code: int) -> GraphshardError:
    """The error a rank reported (tagged line), else the tail of mpirun's stderr."""
    tagged = [line[len(ERROR_TAG):] for line in stderr.splitlines() if line.startswith(ERROR_TAG)]
    if tagged:
        return GraphshardError(f"parmetis: {tagged[0]}")
    tail = "\n".join(stderr.strip().splitlines()[-15:])
    return GraphshardError(f"parmetis: mpirun exited with status {code}:\n{tail}")


def merge_ranges(graph: ChunkedGraph, rank_files: list[Path], out: Path) -> None:
    """Write `<ntype>.txt` from the ranks' contiguous homogeneous ranges, streamed."""
    arrays = [np.load(p, mmap_mode="r") for p in rank_files]
    starts = np.concatenate([[0], np.cumsum([len(a) for a in arrays])])
    off = graph.type_node_offsets

    def blocks(lo: int, hi: int):
        for r, arr in enumerate(arrays):
            a, b = max(lo, int(starts[r])), min(hi, int(starts[r + 1]))
            for i in range(a, b, TEXT_BLOCK):
                yield arr[i - starts[r]:min(b, i + TEXT_BLOCK) - starts[r]]

    for t, nt in enumerate(graph.node_type):
        write_blocks(out / f"{nt}.txt", blocks(int(off[t]), int(off[t + 1])))


class ParmetisPartitioner(Partitioner):
    name = "parmetis"

    def check(self, graph: ChunkedGraph, nparts: int, options: AssignOptions) -> None:
        if options.mpi_ranks > graph.total_nodes:
            raise GraphshardError(f"mpi_ranks: expected at most {graph.total_nodes} (one node per rank at least), "
                                  f"found {options.mpi_ranks}")
        if shutil.which("mpirun") is None:
            raise GraphshardError(f"parmetis: mpirun not found on PATH (install it: {INSTALL_HINT})")
        if importlib.util.find_spec("mpi4py") is None:
            raise GraphshardError(f"parmetis: Python package mpi4py is missing (install it: {INSTALL_HINT})")
        library_path(options)
        meta = graph.metadata_path  # a Path, or a Location the ranks read with the environment's credentials
        if meta is None or (isinstance(meta, Path) and not meta.is_file()):
            raise GraphshardError("parmetis: the graph must come from a metadata.json file the MPI ranks can read")

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        lib = library_path(options)
        ranges = out / ".ranges"
        ranges.mkdir()
        cmd = ["mpirun", "--oversubscribe", "-np", str(options.mpi_ranks), "-x", "LD_LIBRARY_PATH",
               "-x", "SCOTCH_PTHREAD_NUMBER",
               sys.executable, "-m", "graphshard.assign.parmetis", "--metadata", str(graph.metadata_path),
               "--out", str(ranges), "--nparts", str(nparts), "--lib", str(lib), "--options", options.model_dump_json()]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=mpi_environment(lib), capture_output=True, text=True)
        if proc.returncode != 0:
            raise rank_failure(proc.stderr, proc.returncode)
        rank_files = [ranges / f"rank-{r}.npy" for r in range(options.mpi_ranks)]
        missing = [p.name for p in rank_files if not p.exists()]
        if missing:
            raise GraphshardError(f"parmetis: mpirun succeeded but ranks wrote no output {missing}")
        info = json.loads((ranges / "info.json").read_text())
        merge_ranges(graph, rank_files, out)
        shutil.rmtree(ranges)
        info["seconds"]["mpirun"] = round(time.perf_counter() - t0, 3)
        return {"library": str(lib), "ranks": options.mpi_ranks, **info}


# ---- MPI program (one process per rank) -------------------------------------------------------------------------

def idx_dtype(lib: ctypes.CDLL, bits: int) -> type:
    """SCOTCH_Num's width from PT-Scotch itself, else the configured width of a real ParMETIS."""
    if hasattr(lib, "SCOTCH_numSizeof"):
        lib.SCOTCH_numSizeof.restype = ctypes.c_int
        return {4: np.int32, 8: np.int64}[lib.SCOTCH_numSizeof()]
    return {32: np.int32, 64: np.int64}[bits]


def seed_scotch(lib: ctypes.CDLL, idx: type, seed: int) -> None:
    """PT-Scotch ignores ParMETIS's seed option: seed and reset its own generator so runs repeat."""
    if hasattr(lib, "SCOTCH_randomSeed"):
        lib.SCOTCH_randomSeed((ctypes.c_int32 if idx is np.int32 else ctypes.c_int64)(seed))
        lib.SCOTCH_randomReset()


MPI_INT_MAX = 2**31 - 1  # MPI's counts and displacements are C ints


def message_problem(counts: np.ndarray, rcounts: np.ndarray) -> str | None:
    """Why an Alltoallv of these per-rank counts cannot be posted: a count or a displacement (the running sum, up
    to the total) past a C int, the negative MPI counts DGL's ParMETIS pipeline crashed with at 1-2B edges."""
    for what, c in (("sends", counts), ("receives", rcounts)):
        if c.max(initial=0) > MPI_INT_MAX:
            return f"one MPI message {what} {int(c.max()):,} keys (more than 2^31 - 1): use more ranks"
        if int(c.sum()) > MPI_INT_MAX:
            return f"a rank {what} {int(c.sum()):,} keys in all (displacements past 2^31 - 1): use more ranks"
    return None


def idx_problem(idx: type, nodes: int, entries: int) -> str | None:
    """Why a graph does not fit the library's idx_t (node IDs and this rank's adjacency offsets)."""
    limit = int(np.iinfo(idx).max)
    if nodes > limit or entries > limit:
        return (f"{nodes:,} nodes / {entries:,} adjacency entries on a rank exceed the library's "
                f"{np.dtype(idx).itemsize * 8}-bit idx_t: use a 64-bit build (parmetis_idx_bits: 64) or more ranks")
    return None


def exchange_keys(comm, keys: np.ndarray, owners: np.ndarray, size: int) -> np.ndarray:
    """Send every key to its owner rank (Alltoallv over int64); returns the keys this rank received."""
    from mpi4py import MPI

    order = np.argsort(owners, kind="stable")
    send = np.ascontiguousarray(keys[order])
    counts = np.bincount(owners, minlength=size).astype(np.int64)
    rcounts = np.empty(size, dtype=np.int64)
    comm.Alltoall(counts, rcounts)
    problem = message_problem(counts, rcounts)
    if problem:
        raise GraphshardError(problem)
    sdispl = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rdispl = np.concatenate([[0], np.cumsum(rcounts)[:-1]])
    recv = np.empty(int(rcounts.sum()), dtype=np.int64)
    comm.Alltoallv([send, (counts.astype(int).tolist(), sdispl.astype(int).tolist()), MPI.INT64_T],
                   [recv, (rcounts.astype(int).tolist(), rdispl.astype(int).tolist()), MPI.INT64_T])
    return recv


def local_graph(graph: ChunkedGraph, comm, vtxdist: np.ndarray, with_degrees: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """This rank's (indptr, global neighbour ids, input in-degrees or None) for its vertex range.

    With degrees, a key carries a flag bit: 1 on the entry (v, u) made from an input edge u -> v (self-loops
    included), so the owner of v counts v's in-degree before loops and duplicates are dropped.
    """
    from graphshard.assign.graph_build import csr_from_keys, edge_chunks, homogeneous_chunk, key_bits, symmetric_keys

    rank, size = comm.Get_rank(), comm.Get_size()
    bits = key_bits(graph.total_nodes)
    pieces = []
    for etype, chunk in edge_chunks(graph)[rank::size]:
        src, dst = homogeneous_chunk(graph, etype, chunk)
        keys = symmetric_keys(src, dst, bits)
        if with_degrees:
            keys <<= 1
            keys[len(src):] |= 1  # (v, u) made from the input edge u -> v
        pieces.append(keys)
    keys = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    del pieces
    owners = np.searchsorted(vtxdist, keys >> (bits + with_degrees), side="right") - 1
    keys = exchange_keys(comm, keys, owners, size)
    del owners
    lo, hi = int(vtxdist[rank]), int(vtxdist[rank + 1])
    in_deg = None
    if with_degrees:
        flags = (keys & 1).astype(bool)
        keys >>= 1
        in_deg = np.bincount((keys[flags] >> bits) - lo, minlength=hi - lo)
        # a self-loop u -> u arrives twice (once flagged): it counts once in the in-degree, as in the input
    indptr, indices = csr_from_keys(keys, bits, row_offset=lo, rows=hi - lo)
    return indptr, indices, in_deg


def rank_constraints(graph: ChunkedGraph, comm, options: AssignOptions, lo: int, hi: int,
                     in_deg: np.ndarray | None) -> np.ndarray | None:
    """Constraint columns of this rank's range over the classes present anywhere (agreed by allgather)."""
    from graphshard.assign.constraints import class_codes, parse_entries, weight_columns

    entries = parse_entries(graph, options.balance_ntypes)
    if not entries:
        return weight_columns(None, None, in_deg)
    codes = class_codes(graph, entries, lo, hi)
    classes = np.unique(np.concatenate(comm.allgather(np.unique(codes))))
    return weight_columns(codes, classes, in_deg)


def rank_bounds(comm, vwgt: np.ndarray, nparts: int, ufactor: int):
    """`constraints.attainable` over every rank's columns (each rank holds a range of the nodes): all ranks keep the
    same columns with the same tolerances."""
    from graphshard.assign.constraints import attainable

    stats = comm.allgather((vwgt.sum(axis=0), vwgt.max(axis=0, initial=0)))
    return attainable(np.sum([t for t, _ in stats], axis=0), np.max([h for _, h in stats], axis=0), nparts, ufactor)


def run_rank(metadata: str, out: Path, nparts: int, lib_path: str, options: AssignOptions) -> None:
    """The body of one MPI rank."""
    from mpi4py import MPI

    from graphshard.formats.chunked import load_metadata

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    t0 = time.perf_counter()
    graph = load_metadata(metadata)
    lib = ctypes.CDLL(lib_path)
    idx = idx_dtype(lib, options.parmetis_idx_bits)
    n = graph.total_nodes
    vtxdist = np.array([r * n // size for r in range(size + 1)], dtype=np.int64)
    lo, hi = int(vtxdist[rank]), int(vtxdist[rank + 1])
    indptr, indices, in_deg = local_graph(graph, comm, vtxdist, options.balance_edges)
    vwgt = rank_constraints(graph, comm, options, lo, hi, in_deg)
    bounds = None if vwgt is None else rank_bounds(comm, vwgt, nparts, options.ufactor)
    vwgt = None if bounds is None else bounds.columns(vwgt)
    ncon = 1 if vwgt is None else vwgt.shape[1]
    if ncon > 1 and hasattr(lib, "SCOTCH_numSizeof"):
        raise GraphshardError(f"{lib_path} is PT-Scotch's ParMETIS interface, which balances one constraint only; "
                              f"these balance options make {ncon}: use --method metis, or a real ParMETIS "
                              "library via --parmetis-lib")
    problem = idx_problem(idx, n, int(indptr[-1]) if len(indptr) else 0)
    if problem:
        raise GraphshardError(problem)
    seed_scotch(lib, idx, options.seed)
    t1 = time.perf_counter()
    part = np.zeros(hi - lo, dtype=idx)
    if nparts > 1:
        arrays = [np.ascontiguousarray(a, dtype=idx) for a in (vtxdist, indptr, indices)]
        vw = None if vwgt is None else np.ascontiguousarray(vwgt, dtype=idx)
        scalars = np.array([0 if vw is None else 2, 0, ncon, nparts, 0], dtype=idx)  # wgtflag numflag ncon nparts cut
        tpwgts = np.full(ncon * nparts, 1.0 / nparts, dtype=np.float32)
        relaxed = bounds is not None and bounds.ubvec is not None
        ubvec = np.asarray(bounds.ubvec if relaxed else np.full(ncon, 1.0 + options.ufactor / 1000.0), np.float32)
        opts = np.array([1, 0, options.seed], dtype=idx)
        comm_ptr = ctypes.c_void_p(MPI._addressof(comm))  # MPI_Comm* (OpenMPI's MPI_Comm is itself a pointer)
        lib.ParMETIS_V3_PartKway.restype = ctypes.c_int
        ret = lib.ParMETIS_V3_PartKway(
            *map(pointer, arrays), pointer(vw), None, *(pointer(scalars[i:]) for i in range(4)),
            pointer(tpwgts), pointer(ubvec), pointer(opts), pointer(scalars[4:]), pointer(part), comm_ptr)
        if ret != METIS_OK:
            raise GraphshardError(f"{lib_path}: ParMETIS_V3_PartKway returned {ret} on rank {rank}")
    t2 = time.perf_counter()
    np.save(out / f"rank-{rank}.npy", part.astype(np.int32))
    rss = comm.gather(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, root=0)
    times = comm.gather((t1 - t0, t2 - t1), root=0)
    if rank == 0:
        info = {"idx_bits": np.dtype(idx).itemsize * 8, "constraints": ncon, "rank_peak_rss_bytes": rss,
                **(bounds.info() if bounds is not None else {}),
                "seconds": {"build_graph": round(max(t[0] for t in times), 3),
                            "partition_call": round(max(t[1] for t in times), 3)}}
        (out / "info.json").write_text(json.dumps(info))


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m graphshard.assign.parmetis` (run under mpirun by the assignment step)."""
    parser = argparse.ArgumentParser(prog="python -m graphshard.assign.parmetis", description=__doc__.splitlines()[0])
    parser.add_argument("--metadata", required=True, help="metadata.json: a path or a URL")
    parser.add_argument("--out", type=Path, required=True, help="folder for rank-<r>.npy and info.json")
    parser.add_argument("--nparts", type=int, required=True)
    parser.add_argument("--lib", default=DEFAULT_LIB)
    parser.add_argument("--options", default="{}", help="AssignOptions as JSON")
    args = parser.parse_args(argv)
    try:
        run_rank(args.metadata, args.out, args.nparts, args.lib, AssignOptions.model_validate_json(args.options))
    except (GraphshardError, OSError) as err:
        from mpi4py import MPI

        print(f"{ERROR_TAG}{err}", file=sys.stderr, flush=True)
        MPI.COMM_WORLD.Abort(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
