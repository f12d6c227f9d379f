"""Old names kept working for one release: each use warns (DeprecationWarning) and names the new home.

`renamed(module, {old: "package.module:new"})` returns a module `__getattr__` that resolves the old names lazily
(so that an alias never imports more than the name it stands for), warning on every access. `moved_module(old,
new_modules, namespace)` fills a thin module left at an old path with the names of the module(s) that replace it,
warning once, when it is imported.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any, Callable

RELEASE = "0.2"  # the release that removes the old names


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """One DeprecationWarning: `old` is now `new`."""
    warnings.warn(f"{old} is deprecated: use {new} (the old name goes in graphshard {RELEASE})", DeprecationWarning,
                  stacklevel=stacklevel)


def renamed(module: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving each old name of `module` to "package.module:new" with a warning."""

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module '{module}' has no attribute '{name}'")
        where, _, new = target.partition(":")
        warn_moved(f"{module}.{name}", f"{where}.{new}")
        return getattr(importlib.import_module(where), new)

    return __getattr__


def _importer_level(old: str) -> int:
    """`warn_moved`'s stack level of the code importing the thin module `old` (past the import machinery), so that
    Python's default filters show the warning when a user's own script imports an old path."""
    level, frame = 3, sys._getframe(2)  # 1: warn_moved, 2: moved_module, 3: the thin module's body
    while frame is not None and (frame.f_globals.get("__name__") == old
                                 or frame.f_code.co_filename.startswith("<frozen importlib")):
        if not frame.f_code.co_filename.startswith("<frozen importlib"):  # warnings.warn skips those itself
            level += 1
        frame = frame.f_back
    return level


def moved_module(old: str, new: list[str], namespace: dict[str, Any], names: dict[str, str] | None = None) -> None:
    """Fill the namespace of the thin module `old` with every name of the `new` modules (later ones win), plus
    `names` ({old name: "module:new name"}) for names that changed too; one DeprecationWarning."""
    warn_moved(old, " + ".join(new), stacklevel=_importer_level(old))
    for module in new:
        target = importlib.import_module(module)
        namespace.update({k: v for k, v in vars(target).items() if not (k.startswith("__") and k.endswith("__"))})
    for name, target in (names or {}).items():
        where, _, new_name = target.partition(":")
        namespace[name] = getattr(importlib.import_module(where), new_name)
