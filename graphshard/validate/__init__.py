"""Step 4: re-read a partition set from disk, prove it right (formats.md §5) and measure its quality.

`validate(config_path, input_metadata=None, full=False, client=None, seed=0) -> dict` returns the report dict:
`report["ok"]` is False when any check failed, and `report["problems"]` lists each one (partition, file, check,
message); `problem_lines(report)` renders them one per line. `write_report(out_dir, report)` writes `report.json`
and a self-contained `report.html`. The validator reads files only: it shares no code with the writer beyond the
DGL binary reader, and it passes on partitions that DGL itself wrote.
"""


from __future__ import annotations

import importlib

# resolved on first use, as graphshard.assign does: importing a submodule (the plan reads `lazy.PIECE_ROWS`) must not
# import the runner and Dask with it
_PUBLIC = {"CHECKS": "graphshard.validate.problems", "Problem": "graphshard.validate.problems",
           "problem_lines": "graphshard.validate.problems", "write_report": "graphshard.validate.report_html",
           "raise_on_problems": "graphshard.validate.runner", "validate": "graphshard.validate.runner"}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.validate' has no attribute '{name}'")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = list(_PUBLIC)
