"""Step 4: re-read a partition set from disk, prove it right (formats.md §5) and measure its quality.

`validate(config_path, input_metadata=None, full=False, client=None, seed=0) -> dict` returns the report dict:
`report["ok"]` is False when any check failed, and `report["problems"]` lists each one (partition, file, check,
message); `problem_lines(report)` renders them one per line. `write_report(out_dir, report)` writes `report.json`
and a self-contained `report.html`; `retarget_report(folder, config)` makes a copied report name where its set was
published. The validator reads files only: it shares no code with the writer beyond the DGL file format
(graphshard.formats), and it passes on partitions that DGL itself wrote.

Modules: `step.py` (the run: phases, the report dict), `per_partition.py` (phases zero and one, one task per
partition), `across_partitions.py` (phase two: checks against what the other partitions wrote), `against_input.py`
(partitions compared with the input graph), `edges.py`/`checks.py` (the checks), `report_html.py` (the report).
"""

from __future__ import annotations

import importlib

_PUBLIC = {"CHECKS": "problems", "Problem": "problems", "problem_lines": "problems", "REPORT_CLASH": "report_html",
           "REPORT_FILES": "report_html", "report_clash": "report_html", "retarget_report": "report_html",
           "write_report": "report_html", "raise_on_problems": "step", "validate": "step"}


def __getattr__(name: str):
    """The public names load on first use: the step imports Dask, which a cached run and the plan (it reads
    `piecewise.PIECE_ROWS`) never need."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.validate' has no attribute '{name}'")
    return getattr(importlib.import_module(f"graphshard.validate.{_PUBLIC[name]}"), name)


__all__ = sorted(_PUBLIC)
