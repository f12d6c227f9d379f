"""Step 4: re-read a partition set from disk, prove it right (formats.md §5) and measure its quality.

`validate(config_path, input_metadata=None, full=False, client=None, seed=0) -> dict` returns the report dict:
`report["ok"]` is False when any check failed, and `report["problems"]` lists each one (partition, file, check,
message); `problem_lines(report)` renders them one per line. `write_report(out_dir, report)` writes `report.json`
and a self-contained `report.html`. The validator reads files only: it shares no code with the writer beyond the
DGL binary reader, and it passes on partitions that DGL itself wrote.
"""

from graphshard.validate.problems import CHECKS, Problem, problem_lines
from graphshard.validate.report_html import write_report
from graphshard.validate.runner import raise_on_problems, validate

__all__ = ["CHECKS", "Problem", "problem_lines", "raise_on_problems", "validate", "write_report"]
