"""Which rows are compared one by one against the input, and what that sample can and cannot prove.

The rule (also written into every report):
- `--full`: every row of every partition is compared with its input row; a wrong row is always found and named.
- default: `SAMPLE_SIZE` seeded rows per (partition, type or feature) are compared one by one, AND every row enters
  a per-(partition, type or feature) checksum (graphshard.validate.hashing) compared with the same checksum computed
  from the input rows that partition owns. A sample of s rows out of n finds one given wrong row with probability
  only s/n, so the sample alone is not a proof: it names rows when errors are widespread (a fraction f of wrong rows
  is sampled with probability 1 - (1 - f)**s; s = 1024 finds f = 0.5% with probability 99.4%). The checksums are what
  catch a single wrong row: they read every row on both sides and miss a change only if two 64-bit hashes collide,
  probability about 2**-64. A checksum mismatch names the partition, the file and the check; `--full` names the row.
"""

from __future__ import annotations

import numpy as np

SAMPLE_SIZE = 1024

RULE = ("full: every row compared with its input row. sampled: {s} seeded rows per (partition, type or feature) "
        "compared one by one (finds one wrong row among n with probability s/n only), plus per-(partition, type or "
        "feature) 64-bit checksums over every row compared with the input's, which miss a single wrong row with "
        "probability about 2^-64.")


def rule_text(full: bool, sample_size: int = SAMPLE_SIZE) -> str:
    """The sampling rule in force, for the report."""
    return "full: every row compared with its input row" if full else RULE.format(s=sample_size)


def sample_rows(n: int, full: bool, seed: int, part: int, salt: str, size: int = SAMPLE_SIZE) -> np.ndarray:
    """Sorted row positions to compare: all of them with `full`, else `size` drawn without replacement, seeded by
    (seed, partition, what is sampled) so that a rerun compares the same rows."""
    if full or n <= size:
        return np.arange(n, dtype=np.int64)
    key = [seed, part] + list(salt.encode())
    rng = np.random.default_rng(key)
    return np.sort(rng.choice(n, size=size, replace=False)).astype(np.int64)
