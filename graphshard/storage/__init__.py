"""The storage layer: one way to read, write, list and delete files for local paths and fsspec URLs alike
(`s3://`, `gs://`, `abfs://`, `file://`), with credentials from each SDK's defaults or `storage_options` per URL
prefix, atomic writes of one file or object, and failures as one line that names the location and never a secret.

Contract and what builds on it: docs/DESIGN.md "Storage".
"""

from __future__ import annotations

from graphshard.storage.check import check_location
from graphshard.storage.failures import StorageError
from graphshard.storage.files import StoredFile
from graphshard.storage.locations import Location, inside, location, redact
from graphshard.storage.options import StorageOptions
from graphshard.storage.store import Entry, Storage

__all__ = ["Entry", "Location", "Storage", "StorageError", "StorageOptions", "StoredFile", "check_location", "inside",
           "location", "redact"]
