"""Renamed public names keep working for one release, each use warning (DeprecationWarning) with the new name."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module, old, new_module, new", [
    ("graphshard.shuffle", "DispatchOptions", "graphshard.shuffle.options", "ShuffleOptions"),
    ("graphshard.shuffle", "dispatch", "graphshard.shuffle.step", "shuffle"),
    ("graphshard.shuffle.options", "DispatchOptions", "graphshard.shuffle.options", "ShuffleOptions"),
    ("graphshard.shuffle.step", "dispatch", "graphshard.shuffle.step", "shuffle"),
])
def test_renamed_name_warns_and_is_the_new_object(module: str, old: str, new_module: str, new: str):
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated: use .*{new}"):
        found = getattr(importlib.import_module(module), old)
    assert found is getattr(importlib.import_module(new_module), new)


def test_unknown_name_is_still_an_attribute_error():
    shuffle = importlib.import_module("graphshard.shuffle")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        shuffle.nothing_here  # noqa: B018


def test_dispatch_command_is_the_shuffle_command(capsys):
    from graphshard.cli import main

    for name in ("shuffle", "dispatch"):
        with pytest.raises(SystemExit):
            main([name, "--help"])
        assert "--halo-mode" in capsys.readouterr().out


@pytest.mark.parametrize("module, old, new", [
    ("graphshard.shuffle.scratch", "Scratch", "ShuffleScratch"),
    ("graphshard.validate.scratch", "Scratch", "SharedArrays"),
])
def test_scratch_classes_old_name(module: str, old: str, new: str):
    with pytest.warns(DeprecationWarning, match=f"use {module}.{new}"):
        found = getattr(importlib.import_module(module), old)
    assert found is getattr(importlib.import_module(module), new)


@pytest.mark.parametrize("old", ["chunk_bounds", "check_format", "spec_format", "positive", "GENERATOR_FORMATS"])
def test_generator_helpers_old_home(old: str):
    common = importlib.import_module("graphshard.generate.common")
    with pytest.warns(DeprecationWarning, match=f"graphshard.generate.common.{old} is deprecated"):
        assert getattr(common, old) is not None


MOVED = [  # old module, a name it must still offer, where that name lives now
    ("graphshard.config", "check_config", "graphshard.pipeline.preflight"),
    ("graphshard.config", "load_config", "graphshard.pipeline.config"),
    ("graphshard.flows.pipeline", "run_pipeline", "graphshard.pipeline.flow"),
    ("graphshard.flows.server", "start", "graphshard.pipeline.prefect_server"),
    ("graphshard.flows.cache", "StepStore", "graphshard.pipeline.cache"),
    ("graphshard.tasks.common", "run_step", "graphshard.pipeline.steps.common"),
    ("graphshard.dasktasks", "run_tasks", "graphshard.daskrun"),
    ("graphshard.fsutil", "staged_output", "graphshard.atomic"),
    ("graphshard.fsutil", "read_json_object", "graphshard.formats.jsonfile"),
    ("graphshard.heap", "imports_kept", "graphshard.gcfreeze"),
    ("graphshard.validate.runner", "validate", "graphshard.validate.step"),
    ("graphshard.validate.lazy", "pieces", "graphshard.validate.piecewise"),
    ("graphshard.validate.scan", "scan_partition", "graphshard.validate.per_partition"),
    ("graphshard.validate.cross", "check_claims", "graphshard.validate.across_partitions"),
    ("graphshard.validate.inputs", "input_chunk_sums", "graphshard.validate.against_input"),
]


def _fresh(old: str):
    """Import a thin module afresh (its warning comes when it runs, once per import)."""
    for loaded in [m for m in sys.modules if m == old or m.startswith(old + ".")]:
        del sys.modules[loaded]
    return importlib.import_module(old)


@pytest.mark.parametrize("old, name, new", MOVED)
def test_old_module_path_warns_and_offers_the_new_names(old: str, name: str, new: str):
    with warnings.catch_warnings(record=True) as caught:  # graphshard.flows/.tasks themselves warn too
        warnings.simplefilter("always")
        module = _fresh(old)
    said = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert any(line.startswith(f"{old} is deprecated: use ") and new in line for line in said), said
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_renamed_functions_in_old_modules():
    with pytest.warns(DeprecationWarning):
        fsutil = _fresh("graphshard.fsutil")
    with pytest.warns(DeprecationWarning):
        lazy = _fresh("graphshard.validate.lazy")
    from graphshard.atomic import move_into_place
    from graphshard.formats.dgl_columns import graph_columns, tensor_dict_columns

    assert fsutil.publish is move_into_place
    assert lazy.index_graph is graph_columns and lazy.index_tensor_dict is tensor_dict_columns


def test_old_prefect_entrypoint_still_loads():
    """prefect.yaml's entrypoint before the move (a deployment registered with it keeps working) and the new one."""
    code = ("import warnings; warnings.simplefilter('ignore'); "
            "from prefect.flows import load_flow_from_entrypoint as load; "
            "print([load(e).name for e in ('graphshard/flows/pipeline.py:partition', "
            "'graphshard/pipeline/flow.py:partition')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "DO_NOT_TRACK": "1"}, timeout=300)
    assert out.stdout.strip() == "['graphshard', 'graphshard']", out.stderr[-2000:]
