"""Fail when a test run's output is not clean: nothing may follow pytest's summary line, and no traceback may appear
anywhere (e.g. a logging error at interpreter exit, after the tests passed). Usage: clean_output.py OUTPUT_FILE."""

from __future__ import annotations

import re
import sys
from pathlib import Path

SUMMARY = re.compile(r"^(=+ )?(no tests ran|\d+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)\b.*)"
                     r" in [\d.]+s\b.*$")


def problems(lines: list[str]) -> list[str]:
    """What is wrong with a test run's output lines (empty when clean)."""
    found = [f"line {i + 1}: {line.strip()[:160]}" for i, line in enumerate(lines) if "Traceback" in line]
    ends = [i for i, line in enumerate(lines) if SUMMARY.match(line.strip())]
    if not ends:
        return [*found, "no pytest summary line"]
    after = [line for line in lines[ends[-1] + 1:] if line.strip()]
    if after:
        found.append(f"{len(after)} line(s) after pytest's summary, first: {after[0].strip()[:160]}")
    return found


def main(path: str) -> int:
    found = problems(Path(path).read_text(errors="replace").splitlines())
    for line in found:
        print(f"test output not clean ({path}): {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
