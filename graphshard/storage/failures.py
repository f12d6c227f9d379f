"""Store failures as one line naming the location (never a secret) and what to change.

Maps what fsspec, s3fs/botocore, gcsfs, adlfs and the OS raise to `StorageError`: unreachable endpoint, missing
bucket, missing object, wrong credentials, no permission. Any secret the user gave (storage_options values under
secret-looking keys, the SDK's secret environment variables) is removed from the text as well.
"""

from __future__ import annotations

import errno
import os
import re
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

from graphshard import diskfull
from graphshard.errors import GraphshardError
from graphshard.storage.locations import Location, redact

_SECRET_KEY = re.compile(r"(?i)secret|token|password|passwd|credential|sas|connection_string|account_key|^key$")
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
               "AZURE_STORAGE_CONNECTION_STRING", "AZURE_CLIENT_SECRET")
_CREDENTIALS = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidClientTokenId",
                "AuthenticationFailed", "AuthorizationFailure", "invalid_grant", "Anonymous caller")
# No credentials reached the store at all (none found, half a pair, a profile that is not there): not "refused".
_NO_CREDENTIALS = ("Unable to locate credentials", "NoCredentialsError", "Could not find credentials",
                   "PartialCredentialsError", "ProfileNotFound")
_UNREACHABLE = ("EndpointConnectionError", "ConnectTimeout", "ConnectionError", "ClientConnectorError",
                "Could not connect", "Cannot connect", "Name or service not known", "Connection refused",
                "ServerDisconnectedError", "ReadTimeout", "ConnectTimeoutError")


class StorageError(GraphshardError):
    """A location that cannot be used as asked; the message is one line and holds no secret. `kind`: what `classify`
    found (e.g. "credentials"), so that a caller can add where it happened (a Dask worker's own credentials)."""

    def __init__(self, message: str, kind: str = "other"):
        super().__init__(message)
        self.kind = kind

    def __reduce__(self):
        return (type(self), (str(self), self.kind))


CREDENTIAL_KINDS = frozenset({"nocredentials", "credentials", "forbidden", "permission"})


def secrets_of(options: Mapping[str, Any] | None) -> list[str]:
    """String values under secret-looking keys (nested mappings too) and the SDKs' secret environment variables."""
    found = [os.environ[k] for k in _SECRET_ENV if os.environ.get(k)]

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, str) and _SECRET_KEY.search(key) and len(value) >= 4:
            found.append(value)

    walk(options or {})
    return found


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """One line of `text`, redacted, with every secret value replaced."""
    text = redact(" ".join(str(text).split()))
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def classify(err: BaseException) -> str:
    """endpoint | unreachable | options | nocredentials | credentials | bucket | forbidden | permission | missing |
    other."""
    text = " ".join(f"{type(e).__name__} {e}" for e in _chain(err))
    # botocore: an endpoint without its scheme (localhost:9000), or with one it cannot use (htp://, a typo):
    # EndpointResolutionError "Custom endpoint `htp://...` was not a valid URI"
    if "Invalid endpoint" in text or "EndpointResolutionError" in text:
        return "endpoint"
    if any(isinstance(e, TypeError) and "unexpected keyword argument" in str(e) and "Session" in str(e)
           for e in _chain(err)):
        return "options"  # s3fs hands unknown storage_options to its (botocore) session, made at the first request
    if any(s in text for s in _NO_CREDENTIALS):
        return "nocredentials"
    if any(s in text for s in _CREDENTIALS):
        return "credentials"
    if any(s in text for s in _UNREACHABLE) or any(isinstance(e, (ConnectionError, TimeoutError))
                                                   for e in _chain(err)):
        return "unreachable"
    if "NoSuchBucket" in text or "bucket does not exist" in text or "ContainerNotFound" in text:
        return "bucket"
    if "Forbidden" in text and "AccessDenied" not in text:
        return "forbidden"  # a bare 403 (a HEAD request's answer has no body): wrong credentials or no permission
    if isinstance(err, PermissionError) or "AccessDenied" in text:
        return "permission"
    if isinstance(err, FileNotFoundError) or getattr(err, "errno", None) == errno.ENOENT:
        return "missing"
    return "other"


def describe(loc: Location, action: str, err: BaseException, endpoint: str | None, secrets: Iterable[str] = ()
             ) -> StorageError:
    """The one-line StorageError for `err` raised while doing `action` (e.g. "read", "write") at `loc`."""
    where = f" (endpoint {redact(endpoint)})" if endpoint else ""
    bucket = loc.path.split("/", 1)[0]
    kind = classify(err)
    if kind == "endpoint":
        what = (f"the endpoint is not a URL{where}; set AWS_ENDPOINT_URL or storage_options endpoint_url to "
                "http(s)://host:port")
    elif kind == "unreachable":
        what = (f"cannot reach the store{where}; check the endpoint (AWS_ENDPOINT_URL or storage_options "
                "endpoint_url) and the network")
    elif kind == "credentials":
        what = (f"the store refused the credentials{where}; check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the "
                "profile, or the storage_options key/secret for this prefix")
    elif kind == "options":
        found = next(e for e in _chain(err) if isinstance(e, TypeError))
        what = (f"storage options rejected by the {loc.protocol}:// filesystem ({found}); correct the "
                "storage_options entry for this prefix")
    elif kind == "nocredentials":
        found = next((e for e in _chain(err) if any(n in f"{type(e).__name__} {e}" for n in _NO_CREDENTIALS)), err)
        what = (f"no usable credentials ({type(found).__name__}: {found}){where}; set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE naming a profile of the shared config files, or the "
                "storage_options key and secret for this prefix")
    elif kind == "bucket":
        what = f"bucket {bucket!r} does not exist{where}; create it or correct the URL"
    elif kind == "forbidden":
        what = (f"the store answered 403 Forbidden to a {action}{where}, without a reason: the credentials are wrong "
                "or may not do this here; check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the profile, or the "
                f"storage_options key/secret for this prefix, and that they may {action} here")
    elif kind == "permission":
        what = (f"the store denied {action} access{where}; check the credentials (environment, profile or "
                f"storage_options) and that they may {action} here, or choose another location")
    elif kind == "missing":
        what = "no such file or object; correct the location"
    else:
        what = f"cannot {action}: {type(err).__name__}: {err}"
    return StorageError(scrub(f"{loc}: {what}", secrets), kind)


@contextmanager
def translated(loc: Location, action: str, endpoint: str | None = None, secrets: Iterable[str] = ()
               ) -> Iterator[None]:
    """Raise what the store raises inside the block as one StorageError line (GraphshardErrors pass through)."""
    try:
        yield
    except GraphshardError:
        raise
    except Exception as err:  # noqa: BLE001 - every store and SDK failure becomes one line
        if diskfull.is_full(err):
            raise  # a full disk: diskfull words it, naming the config key that chose the folder and its free space
        raise describe(loc, action, err, endpoint, secrets) from err
