"""User-facing errors: every message names the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path


class GraphshardError(Exception):
    """An error the user can fix; the CLI prints its message and exits with status 2."""


def first_line(err: BaseException) -> str:
    """An exception's text up to its first line break: what a one-line message quotes of another library's error (a
    pybind11 TypeError lists every signature on lines of its own); the log file keeps the whole text."""
    return next(iter(str(err).splitlines()), "")


class InputError(GraphshardError):
    """Bad input: names the file, the field, what was expected and what was found."""

    def __init__(self, file: str | Path | None, field: str | None, expected: str, found: object = None):
        self.file = str(file) if file is not None else None
        self.field = field
        self.expected = expected
        self.found = found
        parts = []
        if self.file:
            parts.append(self.file)
        if field:
            parts.append(f"field '{field}'")
        where = ": ".join(parts)
        msg = f"expected {expected}"
        if found is not None:
            msg += f", found {found}"
        super().__init__(f"{where}: {msg}" if where else msg)

    def __reduce__(self):
        """Pickle by constructor arguments, so the error crosses process boundaries (Dask workers) intact."""
        return (type(self), (self.file, self.field, self.expected, self.found))


class ProblemList(GraphshardError):
    """Several independent problems found by a check, reported together."""

    def __init__(self, problems: list[GraphshardError]):
        self.problems = problems
        lines = [f"{len(problems)} problem(s):"] + [f"  - {p}" for p in problems]
        super().__init__("\n".join(lines))

    def __reduce__(self):
        return (type(self), (self.problems,))
