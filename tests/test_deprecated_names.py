"""Renamed public names keep working for one release, each use warning (DeprecationWarning) with the new name."""

from __future__ import annotations

import importlib

import pytest


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
