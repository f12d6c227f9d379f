"""Issue 21, item 2: the modules that read and write the graph, its assignment and its partitions open, write,
rename and create nothing themselves; every file operation on a location goes through graphshard/storage (the
shuffle's and the multilevel partitioner's scratch folders, local by design, are issue 22's and not scanned)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "graphshard"
SCANNED = sorted({*ROOT.glob("formats/*.py"), *ROOT.glob("ingest/*.py"), *ROOT.glob("validate/*.py"),
                  *ROOT.glob("generate/*.py"), ROOT / "shuffle/write.py", ROOT / "shuffle/partition_build.py",
                  ROOT / "shuffle/graphbolt.py", ROOT / "precheck.py", ROOT / "digests.py"}
                 - {ROOT / "formats/buckets.py", ROOT / "validate/scratch.py"})  # scratch files (issue 22)
OS_CALLS = {"replace", "rename", "makedirs", "mkdir", "remove", "unlink", "rmdir"}
PATH_METHODS = {"mkdir", "write_text", "read_text", "touch", "unlink", "rename", "rmdir", "symlink_to"}


def file_operations(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every direct file operation: builtin open, os.<OS_CALLS>, shutil.*, Path.<PATH_METHODS>."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open()"))
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if (owner == "os" and func.attr in OS_CALLS) or owner == "shutil":
                found.append((node.lineno, f"{owner}.{func.attr}()"))
            elif func.attr in PATH_METHODS and owner not in ("os", "shutil"):
                found.append((node.lineno, f".{func.attr}()"))
    return found


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_operation_outside_the_storage_layer(path: Path):
    found = file_operations(ast.parse(path.read_text()))
    assert not found, f"{path.relative_to(ROOT)}: {found}: go through graphshard.storage (Storage, StoredFile)"


def test_the_scan_sees_each_kind_of_operation():
    text = "import os, shutil\nopen('x')\nos.replace('a', 'b')\nshutil.rmtree('d')\np.mkdir()\np.write_text('t')\n" \
           "'s'.replace('a', 'b')\nstorage.write_bytes(loc, b'')\n"
    assert [what for _, what in file_operations(ast.parse(text))] == \
        ["open()", "os.replace()", "shutil.rmtree()", ".mkdir()", ".write_text()"]
