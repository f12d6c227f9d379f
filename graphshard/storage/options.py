"""`storage_options` per URL prefix (the YAML's shape) and the fsspec filesystem each location is served by.

Without options, each store's SDK finds credentials and endpoints where it looks by default (S3: AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_PROFILE and the shared config files). Options given for a prefix
(`{"s3://bucket-a/": {"key": ..., "secret": ..., "endpoint_url": ...}, "s3://": {...}}`, a bare `s3://` meaning every
bucket) are passed to that store's filesystem; the longest matching prefix wins. Their values are never shown:
`StorageOptions`' repr lists prefixes and key names only.
"""

from __future__ import annotations

import inspect
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Mapping

from graphshard.errors import GraphshardError
from graphshard.storage.locations import Location, location, redact

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

# Environment variables the SDKs read: a filesystem made under other values is not reused.
_ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_", "FSSPEC_")
# Per process, SDK environment and profile: the AWS session s3fs clients are made from (see `_aws_session`).
_SESSIONS: dict[tuple, Any] = {}
_SESSIONS_LOCK = threading.Lock()
_PROTOCOL_PACKAGE = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "abfs": "adlfs", "az": "adlfs",
                     "abfss": "adlfs"}


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


class StorageOptions:
    """Filesystem options per URL prefix; `filesystem(loc)` returns the (cached) fsspec filesystem for a location."""

    def __init__(self, options: Mapping[str, Mapping[str, Any]] | None = None):
        self._options: dict[Location, dict[str, Any]] = {}
        for prefix, opts in (options or {}).items():
            if not isinstance(opts, Mapping):
                raise GraphshardError(f"storage_options[{redact(prefix)!r}]: expected a mapping of filesystem "
                                      f"options, found {type(opts).__name__}")
            if not isinstance(opts.get("client_kwargs", {}), Mapping):  # the value is not shown: it may be secret
                raise GraphshardError(f"storage_options[{redact(prefix)!r}].client_kwargs: expected a mapping of the "
                                      f"SDK client's arguments, found {type(opts['client_kwargs']).__name__}")
            whole = re.fullmatch(r"([a-zA-Z][a-zA-Z0-9+.-]*)://", str(prefix))  # "s3://": every bucket
            self._options[Location(whole.group(1).lower(), "") if whole else location(prefix)] = dict(opts)
        self._cache: dict[tuple, AbstractFileSystem] = {}
        self._lock = threading.Lock()

    def for_location(self, loc: Location) -> dict[str, Any]:
        """The options of the longest prefix that `loc` is under (none: {})."""
        best, found = -1, {}
        for prefix, opts in self._options.items():
            root = prefix.path.rstrip("/")
            if prefix.protocol == loc.protocol and (loc.path == root or loc.path.startswith(root + "/")
                                                    or not root) and len(root) > best:
                best, found = len(root), opts
        return found

    def filesystem(self, loc: Location, **extra: Any) -> AbstractFileSystem:
        """The fsspec filesystem serving `loc` (one per protocol, options and SDK environment)."""
        opts = {**self.for_location(loc), **extra}
        key = (loc.protocol, _frozen(opts), _sdk_environment())
        with self._lock:
            fs = self._cache.get(key)
            if fs is None:
                fs = self._cache[key] = make_filesystem(loc, opts)
        return fs

    def __getstate__(self) -> dict:
        return {"_options": self._options}

    def __setstate__(self, state: dict) -> None:
        self._options, self._cache, self._lock = state["_options"], {}, threading.Lock()

    def __repr__(self) -> str:
        shown = {str(p): sorted(o) for p, o in self._options.items()}
        return f"StorageOptions({shown})"


def _sdk_environment() -> tuple:
    """The environment variables the SDKs read, as a cache key part."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)))


def make_filesystem(loc: Location, opts: dict[str, Any]) -> AbstractFileSystem:
    """A new fsspec filesystem for `loc`'s protocol with these options; one line when it cannot be made."""
    import fsspec

    opts = dict(opts)
    if loc.protocol in ("s3", "s3a") and "endpoint_url" in opts:  # the flat spelling most users write
        opts.setdefault("client_kwargs", {})
        opts["client_kwargs"] = {**opts["client_kwargs"], "endpoint_url": opts.pop("endpoint_url")}
    try:
        _check_bucket_naming(loc, fsspec.get_filesystem_class(loc.protocol))
        if loc.protocol in ("s3", "s3a") and _session_shareable(opts):
            opts["session"] = _aws_session(opts.pop("profile", None))
            from graphshard.storage import tls

            if tls.SUPPORTED:
                opts["config_kwargs"] = {"http_session_cls": tls.SharedTLSSession, **opts.get("config_kwargs", {})}
        return fsspec.filesystem(loc.protocol, skip_instance_cache=True, **opts)
    except ImportError:
        package = _PROTOCOL_PACKAGE.get(loc.protocol, f"the fsspec implementation of {loc.protocol}://")
        raise GraphshardError(f"{loc}: {loc.protocol}:// needs {package}; install it (pip install "
                              f"'graphshard[cloud]' brings gcsfs and adlfs)") from None
    except ValueError as err:
        if "Protocol not known" in str(err):
            raise GraphshardError(f"{loc}: unknown storage protocol {loc.protocol!r}; expected a path or an "
                                  "fsspec URL such as s3://, gs://, abfs://, file://") from None
        raise GraphshardError(f"{loc}: storage options rejected: {redact(str(err))}") from None
    except TypeError as err:
        raise GraphshardError(f"{loc}: storage options rejected by the {loc.protocol}:// filesystem: "
                              f"{redact(str(err))}") from None


def _check_bucket_naming(loc: Location, cls: type) -> None:
    """Refuse a protocol whose filesystem names an object otherwise than `loc.path` (its URL starts with a host:
    ftp://, sftp://, http://, hdfs://, ...): every location here is a bucket-and-key path or a local one."""
    if cls._strip_protocol(loc.url).strip("/") != loc.path.strip("/"):
        raise GraphshardError(f"{loc}: {loc.protocol}:// URLs name a host, not a bucket; graphshard reads and "
                              "writes local paths and bucket stores (s3://, gs://, abfs://, ...): copy the data to "
                              "one, or mount it as a local path")


def _session_shareable(opts: Mapping[str, Any]) -> bool:
    """Whether s3fs would make its session from nothing but a profile: no session given and no option it passes to
    the session (an unknown one must still fail there, in one line, not be dropped)."""
    from s3fs import S3FileSystem

    known = set(inspect.signature(S3FileSystem.__init__).parameters) | {"profile"}
    return "session" not in opts and set(opts) <= known


def _aws_session(profile: str | None) -> Any:
    """One aiobotocore session per process, SDK environment and profile, shared by the S3 filesystems made there.
    A session caches the parsed service model, endpoint rules and credentials; one per filesystem (s3fs's default)
    parses them again for each unpickled `Storage`, ~0.1 s of CPU per Dask task. Each filesystem keeps its own
    client and listing cache."""
    import aiobotocore.session

    key = (os.getpid(), profile, _sdk_environment())
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            _SESSIONS[key] = aiobotocore.session.AioSession(profile=profile)
        return _SESSIONS[key]
