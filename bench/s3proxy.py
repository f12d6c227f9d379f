"""A counting HTTP proxy in front of a local S3 server (moto): every request's time, method, path and bytes in and
out, so a benchmark can say what the store served per step. Standard library only; forwards requests and responses
unchanged (moto checks no signature, so the Host header may differ)."""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


@dataclass(frozen=True)
class Request:
    t: float  # time.time() when the response was complete
    method: str
    path: str
    sent: int  # request body bytes (what the client wrote to the store)
    served: int  # response body bytes (what the store served)


class CountingProxy:
    """`with CountingProxy(upstream) as proxy:` listens on `proxy.endpoint`; `proxy.requests` is the log."""

    def __init__(self, upstream: str):
        self.upstream = urlsplit(upstream)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                conn = getattr(self, "_conn", None) or http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=600)
                self._conn = conn
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP and not (k.lower() == "content-length" and self.command != "HEAD"):
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                with proxy._lock:
                    proxy.requests.append(Request(time.time(), self.command, self.path, len(body), len(data)))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def taken(self) -> list[Request]:
        """The log so far, emptied."""
        with self._lock:
            out, self.requests = self.requests, []
        return out
