"""One lock around numpy's `.npy` header parser, installed on import: it parses the header with `ast.literal_eval`,
and CPython 3.11's AST constructor is not thread-safe (python/cpython#106905: two threads parsing at once may raise
"SystemError: AST constructor recursion depth mismatch"), which the overlapping reads of chunk files hit under load
(a CI run: an edge chunk named unreadable). The lock wraps the one function every `np.load`, `open_memmap` and
`read_array_header_*` call goes through; a header is microseconds of work, so reads barely wait."""

from __future__ import annotations

import functools
import threading
from typing import Callable

try:
    from numpy.lib import _format_impl as _format  # numpy 2: where np.load and open_memmap look the parser up
except ImportError:  # numpy 1
    from numpy.lib import format as _format

_LOCK = threading.Lock()


def _locked(parse: Callable) -> Callable:
    """`parse` called under the lock."""

    @functools.wraps(parse)
    def read_header(*args, **kwargs):
        with _LOCK:
            return parse(*args, **kwargs)

    return read_header


if not hasattr(_format._read_array_header, "__wrapped__"):
    _format._read_array_header = _locked(_format._read_array_header)
