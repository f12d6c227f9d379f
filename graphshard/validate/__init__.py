"""Step 4: re-read a partition set from disk, prove it right (formats.md §5) and measure its quality.

`validate(config_path, input_metadata=None, full=False, client=None, seed=0) -> dict` returns the report dict:
`report["ok"]` is False when any check failed, and `report["problems"]` lists each one (partition, file, check,
message); `problem_lines(report)` renders them one per line. `write_report(out_dir, report)` writes `report.json`
and a self-contained `report.html`; `retarget_report(folder, config)` makes a copied report name where its set was
published. The validator reads files only: it shares no code with the writer beyond the
DGL binary reader, and it passes on partitions that DGL itself wrote.
"""

from __future__ import annotations

import importlib

_PUBLIC = {"CHECKS": "problems", "Problem": "problems", "problem_lines": "problems", "REPORT_FILES": "report_html",
           "retarget_report": "report_html", "write_report": "report_html", "raise_on_problems": "runner",
           "validate": "runner"}


def __getattr__(name: str):
    """The public names load on first use: the runner imports Dask, which a cached run and the plan (it reads
    `lazy.PIECE_ROWS`) never need."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.validate' has no attribute '{name}'")
    return getattr(importlib.import_module(f"graphshard.validate.{_PUBLIC[name]}"), name)


__all__ = sorted(_PUBLIC)
