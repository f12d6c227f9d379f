"""Locations: a plain path or an fsspec URL (`s3://bucket/key`, `gs://`, `abfs://`, `file://`), parsed once into
one normal form, joined and resolved against a base location (which may itself be a URL, as a YAML config's folder).

A location never holds a credential; URLs that carry one (`https://user:secret@host/...`, a presigned query) are
shown through `redact`, which every repr, log line and error of the storage layer uses.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from graphshard.errors import GraphshardError

LOCAL = "file"
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://(.*)$", re.DOTALL)
_BUCKET_FIRST = ("s3", "s3a", "gs", "gcs")  # URLs whose first component is the bucket, never user info
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_QUERY_SECRET = re.compile(r"(?i)([?&][^=&\s]*(?:signature|credential|token|secret|key|sig|password)[^=&\s]*=)"
                           r"[^&\s]*")


def redact(text: str) -> str:
    """`text` with URL user info and secret-looking query values replaced by `***`."""
    return _QUERY_SECRET.sub(r"\1***", _USERINFO.sub("***@", str(text)))


@dataclass(frozen=True)
class Location:
    """One file or prefix: `protocol` (`file` for local paths) and `path` as fsspec names it (absolute POSIX path
    for local files, `bucket/key` for object stores)."""

    protocol: str
    path: str

    @property
    def is_local(self) -> bool:
        return self.protocol == LOCAL

    @property
    def url(self) -> str:
        """The form users write: a plain absolute path for local files, `protocol://path` otherwise."""
        return self.path if self.is_local else f"{self.protocol}://{self.path}"

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    @property
    def parent(self) -> Location:
        parent = posixpath.dirname(self.path.rstrip("/"))
        return Location(self.protocol, parent or self.path)

    def join(self, *parts: str) -> Location:
        """A location below this one; a part that is itself a URL or an absolute path stands on its own."""
        loc = self
        for part in parts:
            loc = location(part, base=loc)
        return loc

    def __truediv__(self, part: str) -> Location:
        """`loc / "name"`, as with a `Path`: code that builds locations below a folder serves both."""
        return self.join(part)

    def relative_to(self, base: Location) -> str:
        """This location's path below `base` (POSIX form); a GraphshardError if it is not below it."""
        root = base.path.rstrip("/") + "/"
        if self.protocol != base.protocol or not self.path.startswith(root):
            raise GraphshardError(f"{self}: expected a location under {base}")
        return self.path[len(root):]

    def local_path(self) -> Path:
        if not self.is_local:
            raise GraphshardError(f"{self}: expected a local path, found a {self.protocol}:// URL")
        return Path(self.path)

    def __str__(self) -> str:
        return redact(self.url)

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"


def inside(child: str | os.PathLike | Location, parent: str | os.PathLike | Location) -> bool:
    """`child` is `parent` or below it: same store, local paths with symlinks resolved (a path and a URL never
    overlap). Guards writers against replacing or re-reading their own inputs."""
    def comparable(where: str | os.PathLike | Location) -> Location:
        loc = location(where)
        return location(os.path.realpath(loc.path)) if loc.is_local else loc  # a link loop stays as it is

    child, parent = comparable(child), comparable(parent)
    root = parent.path.rstrip("/")
    return child.protocol == parent.protocol and (child.path == root or child.path.startswith(root + "/"))


def beside_link(path: str | os.PathLike) -> Path:
    """`path` absolute, its folder's symlinks resolved but not its own: a file of a DVC or git-annex checkout is a
    link into a content store, and the files named relative to it lie beside the link, not in the store (as DGL
    joins a chunk's path onto the folder it was given)."""
    path = Path(path).expanduser().absolute()
    return path.resolve() if path.name == ".." else path.parent.resolve() / path.name


def _normal(path: str) -> str:
    """A normalised POSIX path that keeps a trailing slash off and never climbs above its root."""
    lead = "/" if path.startswith("/") else ""
    norm = posixpath.normpath(path) if path else ""
    if norm in (".", ""):
        return lead
    if norm == ".." or norm.startswith("../"):
        raise GraphshardError(f"{redact(path)}: a location may not climb above its root with '..'")
    return norm


def location(where: str | os.PathLike | Location, base: str | os.PathLike | Location | None = None) -> Location:
    """Parse a path or URL; a relative one is resolved against `base` (a folder location), else the working folder."""
    if isinstance(where, Location):
        return where
    text = os.fspath(where) if isinstance(where, PurePath) else str(where)
    if not text:
        raise GraphshardError("an empty location: expected a path or a URL such as s3://bucket/prefix")
    match = _SCHEME.match(text)
    if match:
        protocol, rest = match.group(1).lower(), match.group(2)
        if protocol in (LOCAL, "local"):
            return Location(LOCAL, _normal("/" + rest.lstrip("/")))
        if not rest.strip("/"):
            raise GraphshardError(f"{redact(text)}: expected {protocol}://<bucket>/<prefix>, found no bucket")
        userinfo, at, _ = rest.lstrip("/").split("/", 1)[0].rpartition("@")
        if at and ":" in userinfo and protocol in _BUCKET_FIRST:  # s3://KEY:SECRET@bucket/...: the store took it
            # for a bucket name and said so, secret included (a host URL's user info: refused by the filesystem check)
            raise GraphshardError(f"{redact(text)}: credentials in a URL are not read (user:password@ before the "
                                  "bucket); give them in storage_options or the store's environment variables")
        return Location(protocol, _normal(rest.lstrip("/")))
    if text.startswith("/"):
        return Location(LOCAL, _normal(text))
    if base is None:
        return Location(LOCAL, _normal(os.path.abspath(text)))
    base_loc = location(base)
    joined = posixpath.join(base_loc.path, text)
    if not base_loc.is_local:
        root = base_loc.path.split("/", 1)[0]
        norm = _normal(joined)
        if norm != root and not norm.startswith(root + "/"):
            raise GraphshardError(f"{redact(text)}: climbs out of the bucket of {base_loc}")
        return Location(base_loc.protocol, norm)
    return Location(LOCAL, _normal(joined))
