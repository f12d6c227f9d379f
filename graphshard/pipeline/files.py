"""Small files the flow process itself reads and writes (manifests, records, summaries) in a folder that is a local
path or a prefix on a store: local ones exactly as before, stored ones in one request each, their digests remembered
so that a step's manifest never downloads them again."""

from __future__ import annotations

import tempfile
from pathlib import Path

from graphshard import digests
from graphshard.storage import Location, Storage


def write_text(where: Path | Location, text: str, storage: Storage) -> None:
    """Write a small text file (atomically on a store: one PUT)."""
    if isinstance(where, Path):
        where.write_text(text)
        return
    data = text.encode()
    storage.write_bytes(where, data)
    digests.remember_written(where, data)


def write_report_to(where: Path | Location, report: dict, storage: Storage) -> Path | Location:
    """The validation report (report.json, report.html) into a local folder, or under a prefix on a store (written
    by the report's own writer into a local scratch folder, then uploaded, their digests remembered); returns the
    HTML file's location."""
    from graphshard.validate.report_html import write_report

    if isinstance(where, Path):
        return write_report(where, report)[1]
    with tempfile.TemporaryDirectory(prefix="graphshard-report-") as tmp:
        for path in write_report(tmp, report):
            digests.upload(path, where / path.name, storage)  # the step's manifest then reads neither back
    return where / path.name


def read_text(where: Path | Location, storage: Storage) -> str:
    return where.read_text() if isinstance(where, Path) else storage.read_bytes(where).decode()
