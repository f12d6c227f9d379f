"""Step 1 of the pipeline: decide which partition owns each node and write the assignment folder.

Folder (reference formats.md §2): `<ntype>.txt` (line i = partition of per-type node i), `partition_meta.json`,
`assignment_report.json` (see report.py) and, when `num_trainers_per_machine` T > 1, `trainer_ids/<ntype>.txt`
(line i = trainer id in [0, num_parts * T) of per-type node i; partition = trainer_id // T).

The public names load on first use (step.py imports Dask and the formats), so that importing the options (as the
config does in every command) stays cheap.
"""

from __future__ import annotations

import importlib

REPORT_FILE = "assignment_report.json"
_PUBLIC = {"TRAINER_DIR": "graphshard.formats.assignment", "AssignOptions": "graphshard.assign.options",
           "assign": "graphshard.assign.step", "partitioner_for": "graphshard.assign.step",
           "PARTITIONERS": "graphshard.assign.step"}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.assign' has no attribute '{name}'")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = ["REPORT_FILE", *_PUBLIC]
