"""The Prefect link a run prints works in a browser: the background server's UI talks to its own API (whatever its
port), and headless Chromium renders the flow run with its task runs (ingest ... publish) from the printed link."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import time

import pytest
from browser import ARTIFACTS, Browser, chromium
from flow_helpers import http_json, run_log_messages, subprocess_env, write_config

from graphshard.pipeline import prefect_server

GRAPHSHARD = [sys.executable, "-m", "graphshard.cli"]
TASKS = ("ingest", "assign", "shuffle", "validate", "publish")


@pytest.fixture
def own_home(tmp_path, monkeypatch):
    """A graphshard home of this test; its server is stopped afterwards, whatever happened."""
    home = tmp_path / "gs-home"
    monkeypatch.setenv("GRAPHSHARD_HOME", str(home))
    yield subprocess_env(GRAPHSHARD_HOME=str(home))
    prefect_server.stop(force=True)


def _rendered(browser: Browser, url: str, needles: list[str], timeout: float = 120) -> str:
    """Open `url` and wait until the page's text shows every needle; the text it last showed."""
    browser.call("Page.enable")
    browser.call("Page.navigate", url=url)
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = browser.evaluate("document.body ? document.body.innerText : ''") or ""
        if all(n in text for n in needles):
            break
        time.sleep(0.5)
    return text


def _tab(browser: Browser, name: str, needles: list[str], timeout: float = 60) -> str:
    """Click the page's tab called `name` and wait until the page's text shows every needle."""
    click = (f"(() => {{ const t = [...document.querySelectorAll('*')].find(e => !e.children.length && "
             f"e.textContent.trim() === {name!r}); if (t) t.click(); return !!t; }})()")  # the click bubbles up
    assert browser.evaluate(click), f"no tab {name!r} on the page"
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline and not all(n in text for n in needles):
        time.sleep(0.5)
        text = browser.evaluate("document.body.innerText") or ""
    return text


@pytest.mark.slow
def test_printed_prefect_link_shows_the_run_in_chromium(tmp_path, rmat_small, own_home):
    exe = chromium()
    start = subprocess.run([*GRAPHSHARD, "server", "start"], env=own_home, capture_output=True, text=True,
                           timeout=300)
    assert start.returncode == 0, start.stderr[-2000:]
    srv = prefect_server.recorded()
    assert srv is not None and srv.port != 4200  # a free port, not Prefect's default
    assert srv.url in start.stdout
    assert http_json(f"{srv.url}/ui-settings")["api_url"] == srv.api_url  # the UI asks its own server

    run = subprocess.run([*GRAPHSHARD, "run", str(write_config(tmp_path, rmat_small))], env=own_home,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    link = re.search(r"^prefect: +(http\S+)$", run.stdout, re.M).group(1)
    run_id = link.rsplit("/", 1)[1]
    assert link == f"{srv.url}/runs/flow-run/{run_id}"
    flow_run = http_json(f"{srv.api_url}/flow_runs/{run_id}")
    logs = run_log_messages(srv.api_url, run_id, f"Prefect UI: {link}")
    assert f"Prefect UI: {link}" in logs  # what a deployment's run logs: the same page

    browser = Browser(exe, tmp_path / "chromium", size=(1400, 1600))
    try:
        text = _rendered(browser, link, [flow_run["name"], *TASKS])
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        artifacts = _tab(browser, "Artifacts", ["graphshard-summary"])
    finally:
        browser.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "prefect-run.png").write_bytes(shot)
    assert "Can't connect to Server API" not in text, text[:2000]
    missing = [n for n in [flow_run["name"], *TASKS] if n not in text]
    assert not missing, (missing, text[:3000])
    assert "Completed" in text  # the run's state
    assert "graphshard-summary" in artifacts, artifacts[:3000]  # the report artifact
