"""One TLS context per process and CA setting for the S3 clients of the shared AWS session (storage/options.py):
aiobotocore builds a context per client, which loads the CA bundle again, ~20 ms of CPU, and an S3 filesystem made
per Dask task paid it on its first request. A client certificate or a proxy still gets a context of its own."""

from __future__ import annotations

import inspect
import os
import threading
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.httpsession import AIOHTTPSession

_CONTEXTS: dict[tuple, Any] = {}
_LOCK = threading.Lock()
# aiobotocore versions whose config takes a session class and whose session builds its contexts in this method
SUPPORTED = ("http_session_cls" in inspect.signature(AioConfig.__init__).parameters
             and hasattr(AIOHTTPSession, "_build_ssl_contexts"))


class SharedTLSSession(AIOHTTPSession):
    """aiobotocore's aiohttp session, its verifying TLS context shared (aiohttp shares its own default one alike)."""

    def _build_ssl_contexts(self, proxy_url):
        if self._cert_file or proxy_url:
            return super()._build_ssl_contexts(proxy_url)
        key = (os.getpid(), str(self._verify))
        with _LOCK:
            if key not in _CONTEXTS:
                _CONTEXTS[key] = super()._build_ssl_contexts(None)[0]
            return _CONTEXTS[key], None
