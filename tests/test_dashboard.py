"""The Dask dashboard a run links to works: headless Chromium opens the logged link while the pipeline runs and
finds graphshard's task names (`<step>-<what>`, e.g. shuffle-route-edge-chunks) in the page's plots."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from urllib.request import urlopen

import pytest
from browser import ARTIFACTS, Browser, chromium

# Every string in the data of the page's Bokeh plots (task stream, progress): what the plots draw and their hover shows.
PLOT_STRINGS = """(() => {
  const out = new Set();
  for (const doc of (window.Bokeh ? window.Bokeh.documents : [])) {
    for (const model of doc.all_models) {
      let data = model.data;
      if (!data) continue;
      if (data instanceof Map) data = Object.fromEntries(data);
      for (const column of Object.values(data)) {
        if (Array.isArray(column)) for (const v of column) if (typeof v === "string") out.add(v);
      }
    }
  }
  return [...out];
})()"""
STEP_PREFIX = re.compile(r"^(ingest|assign|shuffle|validate)-[a-z]+(-[a-z]+)*$")


@pytest.mark.slow
def test_dashboard_shows_graphshard_task_names(make_graph, tmp_path):
    """The run's cluster outlives it (cluster.address), so the page is read after the run, however fast it was; the
    dashboard is opened once before the run, as a user watching it would: the scheduler's task stream starts
    recording at the first view of a page."""
    from distributed import LocalCluster

    exe = chromium()
    metadata = make_graph("rmat", nodes=20000, edges=400000, chunks=8)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0") as cluster:
        urlopen(cluster.dashboard_link, timeout=60).read()
        config = tmp_path / "run.yaml"
        config.write_text(json.dumps({"input": {"metadata": str(metadata)}, "output": {"dir": str(tmp_path / "out")},
                                      "work_dir": str(tmp_path / "work"), "num_parts": 4,
                                      "cluster": {"address": cluster.scheduler_address}}))
        env = dict(os.environ, GRAPHSHARD_LOG_DIR=str(tmp_path / "logs"), DO_NOT_TRACK="1",
                   PREFECT_SERVER_ANALYTICS_ENABLED="false")
        run = subprocess.run([sys.executable, "-m", "graphshard.cli", "run", str(config)], capture_output=True,
                             text=True, env=env, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        link = re.search(r"Dask dashboard: (http\S+)", run.stdout + run.stderr).group(1)  # the link the run logs
        assert link == cluster.dashboard_link
        browser = Browser(exe, tmp_path / "chromium")
        try:
            browser.call("Page.enable")
            browser.call("Page.navigate", url=link)
            names: set[str] = set()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "shuffle-route-edge-chunks" not in names:
                names |= set(browser.evaluate(PLOT_STRINGS) or [])
                time.sleep(0.5)
            shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        finally:
            browser.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "dashboard.png").write_bytes(shot)
    ours = {n for n in names if STEP_PREFIX.match(n)}
    assert "shuffle-route-edge-chunks" in ours, sorted(names)[:50]
    assert len(shot) > 50_000


def _slow_square(x: int) -> int:
    time.sleep(0.3)
    return x * x


def test_progress_names_the_step_what_and_item(dask_cluster_client):
    """The step's progress sinks (terminal bar, Prefect artifact) get what a running task does to which item."""
    from graphshard.daskrun import describe_key, run_tasks, task_key
    from graphshard.pipeline.progress import StepProgress, TerminalBar, install

    assert describe_key(task_key("shuffle", "route-edge-chunks", "paper:cites:paper/chunk3", "0a1b2c3d")) == \
        "route-edge-chunks paper:cites:paper/chunk3"
    assert install(dask_cluster_client)
    seen: list[tuple[int, int, str]] = []
    lines: list[str] = []

    class Lines:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    bar = TerminalBar("square", stream=Lines(), every=0.0)
    with StepProgress(dask_cluster_client, [lambda *a: seen.append(a), bar], interval=0.1):
        assert run_tasks(dask_cluster_client, "demo", "square-number", _slow_square, range(6),
                         label=lambda x: f"item{x}") == [x * x for x in range(6)]
    doing = {d for _, _, d in seen if d}
    assert doing and all(re.fullmatch(r"square-number item[0-5]", d) for d in doing), seen
    assert seen[-1][:2] == (6, 6)
    assert any(re.search(r"\] [0-5]/6 dask tasks: square-number item[0-5]$", line.strip()) for line in lines), lines
