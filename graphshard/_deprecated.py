"""Old names kept working for one release: each use warns (DeprecationWarning) and names the new home.

`renamed(module, {old: "package.module:new"})` returns a module `__getattr__` that resolves the old names lazily
(so that an alias never imports more than the name it stands for), warning on every access.
"""

from __future__ import annotations

import importlib
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
