"""graphshard.gcfreeze: imports are frozen out of the collector, which is on again afterwards; the exit code."""

from __future__ import annotations

import gc
import subprocess
import sys

from graphshard import gcfreeze


def test_imports_kept_freezes_what_the_block_built_and_restores_collection():
    gc.unfreeze()
    try:
        with gcfreeze.imports_kept():
            assert not gc.isenabled()
            kept = [{"n": i} for i in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


def test_imports_kept_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        with gcfreeze.imports_kept():
            pass
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_console_exits_with_the_commands_status(tmp_path):
    missing = tmp_path / "nothing" / "metadata.json"
    done = subprocess.run([sys.executable, "-m", "graphshard.cli", "inspect", str(missing)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 2 and "graphshard inspect: error:" in done.stderr
    assert "Traceback" not in done.stderr
