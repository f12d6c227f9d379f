"""The multi-host rig (tests/multihost_rig.py) and what runs on it today: workers on separate hosts reach the scheduler
and the S3 host but see no file another host wrote; a `graphshard run` whose locations are local folders of the
flow's host fails with one line; the run's dashboard link opens the scheduler host's dashboard."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import ARTIFACTS, Browser, chromium
from multihost_rig import Rig, http_get, unavailable
from test_dashboard import PLOT_STRINGS

GRAPHSHARD = Path(sys.executable).parent / "graphshard"


def _client(rig: Rig):
    from distributed import Client

    return Client(rig.scheduler_address, timeout=30)


def _workers(client) -> dict[str, str]:
    """Worker host name -> worker address."""
    return {w["name"]: addr for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()}


def _on(client, address: str, fn, *args):
    """`fn(*args)` on that worker only."""
    return client.submit(fn, *args, workers=[address], allow_other_workers=False, pure=False).result(timeout=60)


def _write_file(path: str) -> str:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("written here")
    return path


def _existing(paths: list[str]) -> list[str]:
    return [p for p in paths if os.path.exists(p)]


@pytest.mark.slow
def test_workers_connect_across_hosts_and_see_only_their_own_files(multihost_rig):
    rig = multihost_rig
    with _client(rig) as client:
        workers = _workers(client)
        assert sorted(workers) == ["worker1", "worker2", "worker3"]
        for name, address in workers.items():
            assert address.startswith(f"tcp://{rig.hosts[name].addr}:"), (name, address)
        tag = uuid.uuid4().hex[:8]
        written = {name: [_on(client, address, _write_file, f"{folder}/probe-{tag}-{name}")
                          for folder in ("/tmp", str(rig.workdir / "shared-looking"))]
                   for name, address in workers.items()}
        every = [p for paths in written.values() for p in paths]
        for name, address in workers.items():
            assert _on(client, address, _existing, every) == written[name], name
    assert _existing(every) == []  # the root namespace (the flow's host) sees none of them


@pytest.mark.slow
def test_rig_faults_and_cleanup_after_a_failing_test(tmp_path):
    """A host's link down cuts it off and up reconnects it; a killed host has no process left and its worker leaves
    the scheduler; a new worker on it rejoins; a test failing inside the rig leaves nothing behind."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    rig = Rig(tmp_path, workers=1)
    with pytest.raises(RuntimeError, match="the test failed"), rig:
        assert rig.leftovers()  # namespaces, veths, bridge and processes exist while it runs
        rig.set_link("s3", up=False)
        with pytest.raises(OSError):
            http_get(f"{rig.s3_endpoint}/moto-api/", timeout=2)
        rig.set_link("s3", up=True)
        assert http_get(f"{rig.s3_endpoint}/moto-api/")
        rig.kill_host("worker1")
        assert rig.pids("worker1") == []
        with _client(rig) as client:
            deadline = time.monotonic() + 30
            while _workers(client) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _workers(client) == {}
            rig.start_worker("worker1")
            rig.wait_for_workers(1)
            assert list(_workers(client)) == ["worker1"]
        raise RuntimeError("the test failed")
    assert rig.leftovers() == []


ATEXIT_SCRIPT = """
import sys, multihost_rig
rig = multihost_rig.Rig(sys.argv[1], workers=1, services=False)
rig.start()
for host in ("s3", "worker1"):
    rig.start_process(host, ["sleep", "300"])
print(rig.suffix, " ".join(f"{h.inode}" for h in rig.hosts.values()), flush=True)
"""  # exits without closing the rig: atexit must


@pytest.mark.slow
def test_rig_cleans_up_at_interpreter_exit(tmp_path):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    done = subprocess.run([sys.executable, "-c", ATEXIT_SCRIPT, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    suffix, *inodes = done.stdout.split()
    assert suffix not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert suffix not in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    in_rig = {f"net:[{i}]" for i in inodes}
    survivors = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.readlink(entry / "ns" / "net") in in_rig:
                survivors.append(entry.name)
        except OSError:
            pass
    assert survivors == []


@pytest.mark.slow
def test_a_sigkilled_owners_rig_is_swept_by_the_next(tmp_path):
    """A pytest SIGKILLed mid-run leaves its rig (no atexit runs): the next rig's start sweeps it away, processes
    included, and leaves a live owner's rig alone."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from multihost_rig import sweep_stale

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    owner = subprocess.Popen([sys.executable, "-c", ATEXIT_SCRIPT + "\nimport time; time.sleep(300)\n",
                              str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True)
    suffix, *inodes = owner.stdout.readline().split()
    assert suffix not in sweep_stale()  # its owner lives: untouched
    assert suffix in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    owner.kill()
    owner.wait()
    assert suffix in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout  # left behind
    with Rig(tmp_path / "next", workers=1, services=False) as rig:
        assert rig.suffix != suffix
        assert suffix not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert suffix not in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
        in_rig = {f"net:[{i}]" for i in inodes}
        left = [e.name for e in Path("/proc").iterdir() if e.name.isdigit() and _net_ns(e) in in_rig]
        assert left == []


def _net_ns(entry: Path) -> str:
    try:
        return os.readlink(entry / "ns" / "net")
    except OSError:
        return ""


def test_where_the_rig_cannot_run_one_line_says_why(monkeypatch):
    import multihost_rig

    monkeypatch.setattr(multihost_rig.os, "geteuid", lambda: 1000)
    assert unavailable() == "multi-host rig needs root for network namespaces (running as uid 1000)"
    monkeypatch.setattr(multihost_rig.os, "geteuid", lambda: 0)
    monkeypatch.setattr(multihost_rig.shutil, "which", lambda tool: None if tool == "ip" else f"/usr/bin/{tool}")
    assert unavailable() == "multi-host rig needs 'ip' (iproute2/util-linux), not found on PATH"


def _put_object(url: str, data: bytes) -> str:
    """On a worker: write `url` through graphshard's storage layer (endpoint and credentials from the worker's own
    environment), return the endpoint it used."""
    from graphshard.storage import Storage

    Storage().write_bytes(url, data)
    return os.environ["AWS_ENDPOINT_URL"]


@pytest.mark.slow
def test_workers_write_to_the_s3_host_and_the_flow_host_reads_back(multihost_rig):
    from graphshard.storage import Storage

    rig = multihost_rig
    bucket = rig.s3.new_bucket()
    with _client(rig) as client:
        workers = _workers(client)
        sent = {name: os.urandom(300_000) + name.encode() for name in workers}
        for name, address in workers.items():
            assert _on(client, address, _put_object, f"{bucket}/from-{name}.bin", sent[name]) == rig.s3_endpoint
    root = Storage({"s3://": rig.s3.options()})  # the flow's host: no AWS environment, options instead
    assert [e.rel for e in root.listing(bucket)] == [f"from-{name}.bin" for name in sorted(workers)]
    for name, data in sent.items():
        assert root.read_bytes(f"{bucket}/from-{name}.bin") == data
    s3_log = (rig.logs / "s3.log").read_text()
    for name in workers:  # each PUT came from the worker's own address, not through the flow's host
        assert re.search(rf"^{re.escape(rig.hosts[name].addr)} .*\"PUT /{bucket[5:]}/from-{name}\.bin", s3_log,
                         re.M), name


@pytest.fixture(scope="module")
def local_run(multihost_rig, make_graph, tmp_path_factory):
    """`graphshard run` on the flow's host against the rig's scheduler, every location a local folder there."""
    rig = multihost_rig
    tmp = tmp_path_factory.mktemp("local-run")
    metadata = make_graph("rmat", nodes=2000, edges=20000, chunks=3)
    config = tmp / "run.yaml"
    config.write_text(json.dumps({"input": {"metadata": str(metadata)}, "output": {"dir": str(tmp / "out")},
                                  "work_dir": str(tmp / "work"), "num_parts": 2,
                                  "cluster": {"address": rig.scheduler_address}}))
    env = {**rig.env(), "GRAPHSHARD_LOG_DIR": str(tmp / "logs")}
    env.pop("DASK_DISTRIBUTED__DASHBOARD__LINK", None)
    started = time.monotonic()
    done = subprocess.run([str(GRAPHSHARD), "run", str(config)], env=env, capture_output=True, text=True,
                          timeout=300)
    return done, tmp, time.monotonic() - started


@pytest.mark.slow
def test_local_locations_on_separate_hosts_fail_with_one_line(local_run):
    done, tmp, seconds = local_run
    terminal = done.stdout + done.stderr
    assert done.returncode == 2, terminal[-3000:]
    assert "Traceback" not in terminal, terminal[-3000:]
    errors = [line for line in terminal.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, terminal[-3000:]
    # the step and the first file the workers lack, which is there on the flow's host
    found = re.match(r"graphshard run: error: ingest: (\S+) \(and \d+ more input files\) exists on this host but "
                     r"the Dask workers found no such file", errors[0])
    assert found and Path(found.group(1)).is_file(), terminal[-3000:]
    assert not (tmp / "out").exists() or not any((tmp / "out").iterdir())  # nothing published


@pytest.mark.slow
def test_logged_dashboard_link_opens_the_scheduler_hosts_dashboard(multihost_rig, local_run, tmp_path):
    rig = multihost_rig
    done, _, _ = local_run
    link = re.search(r"Dask dashboard: (http\S+)", done.stdout + done.stderr)
    assert link, (done.stdout + done.stderr)[-3000:]
    assert link.group(1) == rig.dashboard_url
    assert b"Dask" in http_get(link.group(1))
    exe = chromium()
    browser = Browser(exe, tmp_path / "chromium", size=(1400, 1400))
    try:
        browser.call("Page.enable")
        browser.call("Page.navigate", url=link.group(1))
        workers = {quote(f"tcp://{h.addr}:", safe="") for h in _worker_hosts(rig)}
        names = _plot_strings(browser, lambda seen: all(any(s.startswith(w) for s in seen) for w in workers))
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        browser.call("Page.navigate", url=link.group(1).replace("/status", "/tasks"))
        history = _plot_strings(browser, lambda seen: "ingest-check-file" in seen)
        browser.call("Page.navigate", url=link.group(1).replace("/status", "/info/main/workers.html"))
        workers_page = _page_text(browser, lambda text: all(f"{h.addr}:" in text for h in _worker_hosts(rig)))
    finally:
        browser.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "multihost-dashboard.png").write_bytes(shot)
    assert all(any(s.startswith(w) for s in names) for w in workers), sorted(names)[:50]  # the rig's workers
    assert "ingest-check-file" in history, sorted(history)[:50]  # the run's tasks ran on this scheduler
    assert all(f"{h.addr}:" in workers_page for h in _worker_hosts(rig)), workers_page[:2000]
    assert len(shot) > 20_000


def _plot_strings(browser: Browser, done, timeout: float = 60) -> set[str]:
    deadline, seen = time.monotonic() + timeout, set()
    while time.monotonic() < deadline and not done(seen):
        time.sleep(0.5)
        seen |= set(browser.evaluate(PLOT_STRINGS) or [])
    return seen


def _page_text(browser: Browser, done, timeout: float = 60) -> str:
    deadline, text = time.monotonic() + timeout, ""
    while time.monotonic() < deadline and not done(text):
        time.sleep(0.5)
        text = browser.evaluate("document.body ? document.body.innerText : ''") or ""
    return text


def _worker_hosts(rig: Rig):
    return [h for h in rig.hosts.values() if h.name.startswith("worker")]
