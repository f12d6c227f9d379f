"""The package layout docs/DESIGN.md "Where things live" describes: explicit public surfaces, cheap package imports,
Prefect only in graphshard/pipeline, steps that import only downward (no import cycle between packages)."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import graphshard

ROOT = Path(graphshard.__file__).parent
STEP_PACKAGES = ["ingest", "assign", "shuffle", "validate"]


@pytest.mark.parametrize("name", [*STEP_PACKAGES, "pipeline"])
def test_package_declares_its_public_names(name: str):
    package = importlib.import_module(f"graphshard.{name}")
    assert package.__all__ and all(getattr(package, n) is not None for n in package.__all__)
    if name in STEP_PACKAGES:
        assert (ROOT / name / "step.py").is_file()  # every step's driver in the same place


def test_importing_the_packages_loads_neither_dask_nor_prefect():
    code = ("import sys, graphshard, " + ", ".join(f"graphshard.{p}" for p in [*STEP_PACKAGES, "pipeline"])
            + "; print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed', 'prefect'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _imports(path: Path) -> set[str]:
    """Modules a file imports when it is imported (not inside functions or TYPE_CHECKING blocks)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            exists = [s for s in subs if (ROOT.parent / Path(*s.split("."))).with_suffix(".py").exists()
                      or (ROOT.parent / Path(*s.split("."))).is_dir()]
            found |= set(exists) if exists and len(exists) == len(subs) else {node.module}
    return found


def _top_package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _imports_of_every_module() -> dict[str, set[str]]:
    """{module: what it imports} for every module of the package, parsed in a fresh interpreter: CPython 3.11.7's
    `ast.parse` can fail with "AST constructor recursion depth mismatch" in a process that ran deep recursion before
    (the test session does)."""
    out = subprocess.run([sys.executable, __file__], capture_output=True, text=True, check=True).stdout
    return {module: set(imported) for module, imported in json.loads(out).items()}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def test_prefect_only_in_the_pipeline_and_no_cycle_between_packages():
    edges: dict[str, set[str]] = {}
    for module, imported in _imports_of_every_module().items():
        if any(m.split(".")[0] == "prefect" for m in imported):
            assert module.startswith("graphshard.pipeline."), f"{module} imports Prefect"
        for m in imported:
            if m.startswith("graphshard.") and _top_package(m) != _top_package(module):
                edges.setdefault(_top_package(module), set()).add(_top_package(m))
    for a, targets in edges.items():  # no package reaches back to one that reaches it
        for b in targets:
            seen, todo = set(), [b]
            while todo:
                node = todo.pop()
                assert node != a or node == b == a, f"import cycle through {a} and {b}"
                if node not in seen:
                    seen.add(node)
                    todo += edges.get(node, set())
    for step in STEP_PACKAGES:  # steps import only downward: no other step, nor the pipeline
        others = {f"graphshard.{s}" for s in STEP_PACKAGES if s != step} | {"graphshard.pipeline"}
        assert not edges.get(f"graphshard.{step}", set()) & others, step


if __name__ == "__main__":  # what _imports_of_every_module runs
    print(json.dumps({_module_name(p): sorted(_imports(p)) for p in ROOT.rglob("*.py")}))
