"""Step 4: re-read a partition set from disk, prove it right (formats.md §5) and measure its quality.

`validate(config_path, input_metadata=None, full=False, client=None, seed=0) -> dict` returns the report dict:
`report["ok"]` is False when any check failed, and `report["problems"]` lists each one (partition, file, check,
message); `problem_lines(report)` renders them one per line. `write_report(out_dir, report)` writes `report.json`
and a self-contained `report.html`. The validator reads files only: it shares no code with the writer beyond the
DGL file format (graphshard.formats), and it passes on partitions that DGL itself wrote.

Modules: `step.py` (the run: phases, the report dict), `per_partition.py` (phases zero and one, one task per
partition), `across_partitions.py` (phase two: checks against what the other partitions wrote), `against_input.py`
(partitions compared with the input graph), `edges.py`/`checks.py` (the checks), `report_html.py` (the report).

The public names load on first use (step.py imports the formats, numpy and Dask's helpers), so that importing the
package (as the pipeline's validation step does) costs nothing until it validates.
"""

from __future__ import annotations

import importlib

_PUBLIC = {"validate": "graphshard.validate.step", "raise_on_problems": "graphshard.validate.step",
           "write_report": "graphshard.validate.report_html", "CHECKS": "graphshard.validate.problems",
           "Problem": "graphshard.validate.problems", "problem_lines": "graphshard.validate.problems"}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.validate' has no attribute '{name}'")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = ["CHECKS", "Problem", "problem_lines", "raise_on_problems", "validate", "write_report"]
