"""Small JSON input files (metadata.json, partition configs, assignment metadata): read, or one line naming the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from graphshard.errors import InputError
from graphshard.storage import Location, Storage, StorageError, location


def read_json_object(path: str | os.PathLike | Location, what: str, storage: Storage | None = None) -> dict:
    """A JSON file (a path or a URL) that must hold an object; InputError naming the file when missing, unreadable
    or malformed."""
    loc = location(path)
    shown = Path(loc.path) if loc.is_local else loc
    storage = storage or Storage()
    if loc.is_local and not shown.exists():
        raise InputError(shown, None, f"an existing {what}", "no such file")
    try:
        if loc.is_local:
            with storage.open_read(loc) as fh:  # a plain open, no filesystem layer to import
                raw = fh.read()
        else:
            raw = storage.read_bytes(loc)  # one GET
    except OSError as err:
        raise InputError(shown, None, f"a readable {what}", err.strerror) from None
    except StorageError:
        if not storage.exists(loc):  # asked only when the GET failed
            raise InputError(shown, None, f"an existing {what}", "no such file") from None
        raise
    return parse_json_object(raw, shown, what)


def parse_json_object(raw: bytes, source: object, what: str) -> dict:
    """A JSON document's bytes that must hold an object (`source` names it in the error)."""
    try:
        data = json.loads(raw.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        json_error = isinstance(err, json.JSONDecodeError)
        detail = f"{err.msg} at line {err.lineno} column {err.colno}" if json_error else str(err)
        raise InputError(source, None, "valid JSON", detail) from None
    if not isinstance(data, dict):
        raise InputError(source, None, "a JSON object at the top level", type(data).__name__)
    return data
