"""A small ctypes wrapper of METIS's `METIS_PartGraphKway`, for what pymetis cannot do (several balance constraints,
the communication-volume objective).

The library is Debian's libmetis5 when present, else the one the cmeel-metis wheel ships, or any path given. Its
integer width (IDXTYPEWIDTH 32 or 64) is detected at load time from `METIS_SetDefaultOptions` (it writes -1 into
METIS_NOPTIONS idx_t slots), its real_t width (REALTYPEWIDTH) from one probe partition, and its option layout from
its version (5.2 added options in the middle of the table).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError

NOPTIONS = 40
METIS_OK = 1
RETURN_CODES = {-2: "METIS_ERROR_INPUT", -3: "METIS_ERROR_MEMORY", -4: "METIS_ERROR"}
OBJTYPES = {"cut": 0, "vol": 1}

# Option slots per METIS version family: 5.1 (Debian, pymetis) and 5.2 (KarypisLab's current, cmeel-metis).
OPTION_LAYOUTS = {
    "5.1": {"objtype": 1, "niter": 6, "seed": 8, "ufactor": 16, "numbering": 17},
    "5.2": {"objtype": 1, "niter": 7, "seed": 9, "ufactor": 18, "numbering": 19},
}
DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu/libmetis.so.5"


def default_library() -> str:
    """Debian's libmetis5, else the system's libmetis, else cmeel-metis's bundled copy."""
    if Path(DEBIAN_LIB).exists():
        return DEBIAN_LIB
    found = ctypes.util.find_library("metis")
    if found:
        return found
    for site in map(Path, sys.path):
        candidate = site / "cmeel.prefix" / "lib" / "libmetis.so"
        if candidate.exists():
            return str(candidate)
    raise GraphshardError("no METIS library found: install Debian's libmetis5 (apt-get install libmetis5) or "
                          "pip install cmeel-metis, or pass --metis-lib PATH")


# One METIS call at a time per process: GKlib's random state is process-wide, so two calls from two threads of one
# Dask worker (the coarsest level's partition beside the sampled METIS candidate) interleave their draws and the
# partitions differ run to run (ctypes releases the GIL during the call).
ONE_CALL = threading.Lock()


@dataclass(frozen=True)
class MetisLibrary:
    """A loaded libmetis with its idx_t dtype and option layout."""

    path: str
    lib: ctypes.CDLL
    idx: type
    layout: dict[str, int]
    real: type = np.float32  # real_t (REALTYPEWIDTH 32 or 64), for per-constraint tolerances

    def part_kway(self, indptr: np.ndarray, indices: np.ndarray, nparts: int, vwgt: np.ndarray | None = None,
                  seed: int = 0, ufactor: int = 30, objtype: str = "cut",
                  adjwgt: np.ndarray | None = None, niter: int | None = None,
                  ubvec: np.ndarray | None = None) -> tuple[int, np.ndarray]:
        """(objective value, part per node) of a k-way partition; `vwgt` is (n, ncon) or None for unit weights,
        `adjwgt` one weight per adjacency entry or None for unit edge weights, `niter` the refinement iterations per
        level (None: METIS's default), `ubvec` a balance tolerance per constraint (None: 1 + ufactor / 1000 each)."""
        n = len(indptr) - 1
        if nparts == 1 or n == 0:
            return 0, np.zeros(n, dtype=np.int64)
        idx = self.idx
        limit = np.iinfo(idx).max
        if int(indptr[-1]) > limit or n > limit:
            bits = np.dtype(idx).itemsize * 8
            raise GraphshardError(f"{self.path}: graph too large for a METIS built with {bits}-bit "
                                  f"idx_t ({n} nodes, {int(indptr[-1])} adjacency entries): use a 64-bit build "
                                  "(--metis-lib) or --method parmetis")
        xadj = np.ascontiguousarray(indptr, dtype=idx)
        adjncy = np.ascontiguousarray(indices, dtype=idx)
        ncon = 1
        vw = None
        if vwgt is not None:
            vwgt = np.asarray(vwgt)
            vwgt = vwgt.reshape(n, -1)
            if vwgt.size and int(vwgt.max()) > limit:
                raise GraphshardError(f"{self.path}: vertex weights exceed idx_t range")
            ncon = vwgt.shape[1]
            vw = np.ascontiguousarray(vwgt, dtype=idx)
        ew = None if adjwgt is None else np.ascontiguousarray(adjwgt, dtype=idx)
        if ew is not None and len(ew) and int(ew.max()) > limit:
            raise GraphshardError(f"{self.path}: edge weights exceed idx_t range")
        options = np.full(NOPTIONS, -1, dtype=idx)
        self.lib.METIS_SetDefaultOptions(pointer(options))
        options[self.layout["objtype"]] = OBJTYPES[objtype]
        # METIS's generator takes seeds 0 and 1 alike (the same partition, both libraries): graphshard's seed s is
        # METIS's s + 1, so seeds 0 and 1 differ and seed 0 keeps its partition
        options[self.layout["seed"]] = (seed + 1) % 2**31
        options[self.layout["ufactor"]] = ufactor
        options[self.layout["numbering"]] = 0
        if niter is not None:
            options[self.layout["niter"]] = niter
        part = np.zeros(n, dtype=idx)
        scalars = np.array([n, ncon, nparts, 0], dtype=idx)  # nvtxs, ncon, nparts, objval (passed by pointer)
        ub = None if ubvec is None else np.ascontiguousarray(ubvec, dtype=self.real)
        with ONE_CALL:
            ret = self.lib.METIS_PartGraphKway(
                pointer(scalars[0:]), pointer(scalars[1:]), pointer(xadj), pointer(adjncy), pointer(vw), None,
                pointer(ew), pointer(scalars[2:]), None, pointer(ub), pointer(options), pointer(scalars[3:]),
                pointer(part))
        if ret != METIS_OK:
            raise GraphshardError(f"{self.path}: METIS_PartGraphKway failed with {RETURN_CODES.get(ret, ret)} "
                                  f"(n={n}, ncon={ncon}, nparts={nparts})")
        return int(scalars[3]), part.astype(np.int64)


def pointer(arr: np.ndarray | None) -> ctypes.c_void_p | None:
    """A C pointer to an array's data (NULL for None)."""
    return None if arr is None else arr.ctypes.data_as(ctypes.c_void_p)


def _idx_width(lib: ctypes.CDLL) -> type:
    """idx_t of the library: count the 64-bit words METIS_SetDefaultOptions sets to -1 (40 if 64-bit, 20 if 32)."""
    probe = np.full(2 * NOPTIONS, 0x5A5A5A5A5A5A5A5A, dtype=np.int64)
    lib.METIS_SetDefaultOptions(pointer(probe))
    filled = int(np.count_nonzero(probe == -1))
    widths = {NOPTIONS: np.int64, NOPTIONS // 2: np.int32}
    if filled not in widths:
        raise GraphshardError(f"cannot tell the idx_t width of this METIS library ({filled} option words set)")
    return widths[filled]


@lru_cache(maxsize=4)
def load_metis(path: str | None = None) -> MetisLibrary:
    """Load and describe a libmetis (cached per path)."""
    path = path or default_library()
    try:
        gklib = Path(path).parent / "libGKlib.so"  # cmeel-metis links GKlib separately, beside libmetis
        if gklib.exists():
            ctypes.CDLL(str(gklib), mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(path)
        lib.METIS_PartGraphKway.restype = ctypes.c_int
        lib.METIS_SetDefaultOptions.restype = ctypes.c_int
    except (OSError, AttributeError) as err:
        raise GraphshardError(f"{path}: not a usable METIS library ({err}); install libmetis5 "
                              "(apt-get install libmetis5) or pip install cmeel-metis") from None
    layout = OPTION_LAYOUTS["5.2" if hasattr(lib, "METIS_CacheFriendlyReordering") else "5.1"]
    idx = _idx_width(lib)
    return MetisLibrary(path=path, lib=lib, idx=idx, layout=layout, real=_real_width(lib, idx, layout))


def _real_width(lib: ctypes.CDLL, idx: type, layout: dict[str, int]) -> type:
    """real_t of the library, from one call that both widths accept, so METIS prints no input error: the target
    weights' 16 bytes read as float32 are (1/4, 3/4), and read as float64 (d, 1 - d) with d about 5e-4. A path's
    first part then holds about a quarter of its nodes where real_t is float32, and almost none where it is double."""
    n = 512
    ends = np.arange(n, dtype=idx)
    xadj = np.concatenate([[0], np.cumsum(np.where((ends == 0) | (ends == n - 1), 1, 2))]).astype(idx)
    adjncy = np.stack([ends - 1, ends + 1], axis=1).ravel()
    adjncy = adjncy[(adjncy >= 0) & (adjncy < n)].astype(idx)
    targets = np.zeros(2, dtype=np.float64)
    targets.view(np.float32)[:2] = (0.25, 0.75)
    targets[1] = 1.0 - targets[0]
    options = np.full(NOPTIONS, -1, dtype=idx)
    lib.METIS_SetDefaultOptions(pointer(options))
    options[layout["numbering"]] = 0
    scalars, part = np.array([n, 1, 2, 0], dtype=idx), np.zeros(n, dtype=idx)
    with ONE_CALL:
        ret = lib.METIS_PartGraphKway(pointer(scalars[0:]), pointer(scalars[1:]), pointer(xadj), pointer(adjncy),
                                      None, None, None, pointer(scalars[2:]), pointer(targets), None,
                                      pointer(options), pointer(scalars[3:]), pointer(part))
    if ret != METIS_OK:
        raise GraphshardError("cannot tell the real_t width of this METIS library (a probe partition failed with "
                              f"{RETURN_CODES.get(ret, ret)})")
    return np.float32 if abs(int(np.count_nonzero(part == 0)) - n // 4) < n // 8 else np.float64
