"""`Where`: the pydantic type of a location in a config or options model: a plain path stays a `Path` (as every
local location always was), a URL (`s3://`, `gs://`, ...) becomes a `Location`; both dump to the string users write.

Kept out of `graphshard.storage`'s package import so that the layer itself does not import pydantic.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import PlainSerializer, PlainValidator

from graphshard.errors import GraphshardError
from graphshard.storage.locations import Location, location


def as_where(value: Any) -> Path | Location:
    """A local path (`file://` URLs included) as a `Path`, any other URL as a `Location`."""
    if isinstance(value, Path):
        return value
    if isinstance(value, Location):
        return value.local_path() if value.is_local else value
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"expected a path or a URL, found {type(value).__name__}")
    text = os.fspath(value)
    if "://" not in text:
        return Path(text)
    try:
        loc = location(text)
    except GraphshardError as err:  # pydantic reports ValueErrors with the key that holds them
        raise ValueError(str(err)) from None
    return loc.local_path() if loc.is_local else loc


def where_text(value: Path | Location) -> str:
    return value.url if isinstance(value, Location) else str(value)


Where = Annotated[Union[Path, Location], PlainValidator(as_where), PlainSerializer(where_text, return_type=str)]
