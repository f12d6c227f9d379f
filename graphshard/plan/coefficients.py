"""The plan's measured coefficients, in one place: `coefficients.json` beside this module (bench/plan.py updates it).

Structural sizes (dtypes, block, piece and chunk sizes) are not here: the model imports them from the code that uses
them, so a changed constant changes the plan. What is here is what only a measurement knows: interpreter baselines,
temporaries per element, throughput of this machine class, and the shape figures of the benchmark graphs (edge cut,
halo nodes per cut edge, edge imbalance) that stand in for a partition not computed yet.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

PATH = Path(__file__).with_name("coefficients.json")


@lru_cache(maxsize=1)
def load() -> dict:
    """The coefficients as stored (cached; `save` clears the cache)."""
    return json.loads(PATH.read_text())


def save(coefficients: dict) -> None:
    """Write the coefficients back (the bench's `--update`)."""
    PATH.write_text(json.dumps(coefficients, indent=2) + "\n")
    load.cache_clear()
