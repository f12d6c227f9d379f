"""Headless Chromium for the browser tests (the Dask dashboard, the Prefect UI): driven over the DevTools protocol,
so a test can open a page, wait for what it renders and save a screenshot under test-artifacts/."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from urllib.request import urlopen

import pytest

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
         "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage"]


def chromium() -> str:
    """The Chromium executable, else skip the test with one line on how to get it."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (scripts/setup-system.sh as root installs it)")
    return exe


class Browser:
    """Headless Chromium driven over the DevTools protocol (a page to open, JavaScript to run, a screenshot)."""

    def __init__(self, exe: str, profile: Path, size: tuple[int, int] = (1400, 2400)):
        from websockets.sync.client import connect

        log = profile.with_suffix(".log")
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                                      "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        port = None
        for _ in range(300):
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", log.read_text())
            if found:
                port = int(found.group(1))
                break
            time.sleep(0.1)
        assert port, log.read_text()[-2000:]
        page = next(t for t in json.load(urlopen(f"http://127.0.0.1:{port}/json/list")) if t["type"] == "page")
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.calls = 0

    def call(self, method: str, **params) -> dict:
        self.calls += 1
        self.ws.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self.calls:
                assert "error" not in msg, msg
                return msg["result"]

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def close(self) -> None:
        self.ws.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


