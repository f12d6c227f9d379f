"""Small JSON input files (metadata.json, partition configs, assignment metadata): read, or one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

from graphshard.errors import InputError


def read_json_object(path: str | Path, what: str) -> dict:
    """A JSON file that must hold an object; InputError naming the file when missing, unreadable or malformed."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, f"an existing {what}", "no such file")
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise InputError(path, None, f"a readable {what}", err.strerror) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        json_error = isinstance(err, json.JSONDecodeError)
        detail = f"{err.msg} at line {err.lineno} column {err.colno}" if json_error else str(err)
        raise InputError(path, None, "valid JSON", detail) from None
    if not isinstance(data, dict):
        raise InputError(path, None, "a JSON object at the top level", type(data).__name__)
    return data
