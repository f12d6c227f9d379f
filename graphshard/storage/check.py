"""`check_location`: the pre-flight a config check runs before any work: is the store reachable, do the credentials
work, does the bucket exist, does the file exist (reading) or may we write there (writing)? One line if not."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import uuid
from typing import TYPE_CHECKING

from graphshard.storage.failures import StorageError, classify
from graphshard.storage.locations import Location, location
from graphshard.storage.options import make_filesystem
from graphshard.storage.store import Storage

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

PROBE = ".graphshard-probe-"
CREDENTIAL_ENV = ("AWS_", "GOOGLE_", "AZURE_")  # where the stores' SDKs read credentials and endpoints from
_QUICK: dict[tuple[str, str], AbstractFileSystem] = {}  # (protocol, digest of options + env) -> the checks' filesystem
_QUICK_LOCK = threading.Lock()


def _quick_fs(loc: Location, storage: Storage) -> AbstractFileSystem:
    """A filesystem of its own for the checks, on which a failing S3 request fails fast (one attempt, short connect
    timeout) unless the user's options say otherwise; one per protocol, options and credential environment in this
    process (a new S3 client costs ~0.1 s of the pre-flight's time, and a config has 3-5 locations on one store)."""
    key = client_key(loc, storage)
    with _QUICK_LOCK:
        fs = _QUICK.get(key)
        if fs is None:
            fs = _QUICK[key] = _fail_fast(loc, dict(storage.options.for_location(loc)))
    return fs


def client_key(loc: Location, storage: Storage) -> tuple[str, str]:
    """What a store client for `loc` is made from: its protocol and a digest of its options and of the credential
    environment (`CREDENTIAL_ENV` variables). Equal keys: the same client, the same answers to a check."""
    opts = storage.options.for_location(loc)
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(CREDENTIAL_ENV))
    return loc.protocol, hashlib.blake2b(json.dumps([opts, env], sort_keys=True, default=str).encode()).hexdigest()


def _fail_fast(loc: Location, opts: dict) -> AbstractFileSystem:
    """A new filesystem whose S3 requests fail after one attempt and a 5 s connect timeout (unless `opts` say)."""
    if loc.protocol not in ("s3", "s3a"):
        return make_filesystem(loc, opts)
    opts["config_kwargs"] = {"connect_timeout": 5, "read_timeout": 20, "retries": {"max_attempts": 1},
                             **opts.get("config_kwargs", {})}
    fs = make_filesystem(loc, opts)
    fs.retries = 1  # s3fs's own retry loop (a class attribute, not an option)
    return fs


def _check_local(loc: Location, write: bool) -> None:
    path = loc.path
    if not write:
        if not os.path.exists(path):
            raise StorageError(f"{loc}: no such file or folder; correct the path")
        if not os.access(path, os.R_OK):
            raise StorageError(f"{loc}: not readable; grant read permission or choose another location")
        return
    folder = path
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise StorageError(f"{loc}: {folder} is a file, not a folder; choose another location")
    try:
        fd, probe = tempfile.mkstemp(prefix=PROBE, dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise StorageError(f"{loc}: cannot write in {folder} ({err.strerror}); grant write permission or choose "
                           "another location") from None


def _head(fs: AbstractFileSystem, loc: Location, must_exist: bool) -> None:
    """One HEAD (and, when it finds nothing, a one-key listing of the prefix, which names a missing bucket): needs no
    permission to list the whole bucket. A HEAD's 403 has no body, so a one-byte GET says whether the credentials
    or the grant is wrong. A missing object is fine for a location about to be written."""
    try:
        fs.info(loc.path, refresh=True)
    except PermissionError:
        fs.cat_file(loc.path, start=0, end=1)
        raise
    except FileNotFoundError as err:
        if must_exist or classify(err) == "bucket":
            raise


def check_location(where: str | Location, write: bool = False, storage: Storage | None = None) -> Location:
    """Raise one StorageError line (naming the location, never a secret) unless `where` can be read (it exists)
    or, with `write`, written (a probe object is written and deleted). Returns the parsed location."""
    storage = storage or Storage()
    loc = location(where)
    if loc.is_local:
        _check_local(loc, write)
        return loc
    fs = _quick_fs(loc, storage)
    with storage.translated(loc, "read"):
        _head(fs, loc, must_exist=not write)
    if not write:
        return loc
    probe = loc.join(f"{PROBE}{uuid.uuid4().hex}")
    with storage.translated(loc, "write"):
        fs.pipe_file(probe.path, b"graphshard write probe\n")
        fs.rm(probe.path)
    return loc
