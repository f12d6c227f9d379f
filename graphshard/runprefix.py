"""A partition set published on an object store lives under a run-unique prefix, `.runs/<run id>/`, beside its
partition config, which names the files there (DGL opens each path relative to the config's folder). Publishing
adds the prefix to the config's file paths (`with_prefix`); `fetch` takes it off again (`split_prefix`), so that a
fetched set's config is byte for byte the one a local run writes. Only the path strings change: the rest of the
text is kept as written.
"""

from __future__ import annotations

import json
import re

RUNS = ".runs"
_PART = re.compile(r"^part-\d+$")


def part_paths(config: dict) -> list[str]:
    """Every file path the config's `part-<i>` entries name."""
    return sorted({v for k, entry in config.items() if _PART.match(k) and isinstance(entry, dict)
                   for v in entry.values() if isinstance(v, str)})


def with_prefix(text: str, prefix: str) -> str:
    """The config text with each partition file path placed under `prefix` (e.g. `.runs/<id>`)."""
    for rel in part_paths(json.loads(text)):
        text = text.replace(json.dumps(rel), json.dumps(f"{prefix}/{rel}"))
    return text


def split_prefix(text: str) -> tuple[str | None, str]:
    """(the run prefix the config's paths are under, or None; the config text without it)."""
    paths = part_paths(json.loads(text))
    first = paths[0].split("/") if paths else []
    if len(first) < 3 or first[0] != RUNS:
        return None, text
    prefix = f"{first[0]}/{first[1]}"
    if not all(p.startswith(prefix + "/") for p in paths):
        return None, text
    return prefix, text.replace(json.dumps(prefix + "/")[:-1], '"')
