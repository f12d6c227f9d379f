"""report.json / report.html: content, self-containment, and (slow) a headless Chromium rendering with a screenshot."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_validate import client, mag_set  # noqa: F401 (fixtures)

from graphshard.validate import problem_lines, validate, write_report
from graphshard.validate.report_html import render_html

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


SVG = "{http://www.w3.org/2000/svg}"
FIGURES = ["fig-nodes", "fig-edges", "fig-matrix", "fig-imbalance", "fig-halo", "fig-bytes", "fig-times"]


def figures(html: str) -> dict[str, ET.Element]:
    """Each inline <svg> figure of the page, parsed as XML (so each is well-formed), by its id."""
    svgs = [ET.fromstring(m) for m in re.findall(r"<figure>(<svg .*?</svg>)<figcaption>", html, re.S)]
    return {s.get("id"): s for s in svgs}


def texts(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter(f"{SVG}text")]


def bar_titles(svg: ET.Element) -> dict[str, float]:
    """Hover title of every bar or cell -> its drawn height (bars) or 0 (cells are all the same size)."""
    return {r.find(f"{SVG}title").text: float(r.get("height")) for r in svg.iter(f"{SVG}rect")
            if r.find(f"{SVG}title") is not None}


def test_report_html_is_self_contained(written):
    (_, html_path), _ = written
    html = html_path.read_text()
    figs = figures(html)
    assert list(figs) == FIGURES  # nodes, edges, matrix, imbalance, halo share, bytes, step times
    assert "<img" not in html and "<image" not in html and "<script" not in html
    assert not re.search(r"(src|href)=['\"]?(https?:|//|file:|data:)", html)
    assert set(re.findall(r"url\((.*?)\)", html)) <= {f"#{i}" for i in re.findall(r' id="([^"]+)"', html)}
    for word in ("Quality", "Checks", "edge cut", "replication", "valid"):
        assert word in html


def test_report_figures_show_the_numbers(written):
    """Titles, axis labels and legends are text; every bar's height is proportional to the value in its title."""
    (_, html_path), report = written
    q, figs = report["quality"], figures(html_path.read_text())
    assert texts(figs["fig-nodes"])[0] == "Nodes per partition and type (hatched: halo)" and "nodes" in \
        texts(figs["fig-nodes"])
    bars = bar_titles(figs["fig-nodes"])
    expected = {f"p{r['part']} · {t} {kind}: {r[f'{kind}_nodes'][t]:,}": r[f"{kind}_nodes"][t]
                for r in q["partitions"] for t in q["ntypes"] for kind in ("inner", "halo") if r[f"{kind}_nodes"][t]}
    assert set(bars) == set(expected) and {f"{t} halo" for t in q["ntypes"]} <= set(texts(figs["fig-nodes"]))
    scale = max(bars.values()) / max(expected.values())
    assert all(abs(bars[k] - v * scale) <= 0.11 for k, v in expected.items())
    edges = bar_titles(figs["fig-edges"])
    expected = {f"p{r['part']} · {t}: {v:,}" for r in q["partitions"] for t, v in r["inner_edges"].items() if v} | \
        {f"p{r['part']} · halo edges (all types): {sum(r['halo_edges'].values()):,}" for r in q["partitions"]}
    assert set(edges) == expected
    cells = bar_titles(figs["fig-matrix"])
    m = q["edge_matrix"]
    assert {f"p{i} → p{j}: {int(v):,} edges" for i, row in enumerate(m) for j, v in enumerate(row)} == set(cells)
    assert {f"{int(v):,}" for row in m for v in row} <= set(texts(figs["fig-matrix"]))
    assert f"Partition-to-partition edges (cut {q['edge_cut']['share']:.1%})" in texts(figs["fig-matrix"])
    imbalance = [*q["imbalance"]["nodes"].values(), *q["imbalance"]["edges"].values()]
    assert {f"{v:.3f}" for v in imbalance} <= set(texts(figs["fig-imbalance"]))
    assert {f"{100 * r['halo_share']:.1f}%" for r in q["partitions"]} <= set(texts(figs["fig-halo"]))
    assert any(t.endswith(" MiB") for t in bar_titles(figs["fig-bytes"]))
    assert [f"{s:.2f} s" for s in (*STEP_TIMES.values(), report["step_times"]["validate"])] == \
        [t for t in texts(figs["fig-times"]) if t.endswith(" s")]


def test_report_html_is_deterministic(written):
    (_, html_path), report = written
    assert render_html({**report, "problem_lines": problem_lines(report)}) == html_path.read_text()


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
  var doc = this.contentDocument, figs = doc.querySelectorAll('figure > svg'), ok = 0;
  for (var i = 0; i < figs.length; i++) {
    var box = figs[i].getBoundingClientRect(), marks = figs[i].querySelectorAll('rect, text').length;
    if (box.width > 300 && box.height > 150 && marks > 8 && figs[i].getBBox().width > 300) ok++;
  }
  document.getElementById('result').textContent =
    'images=' + figs.length + ' rendered=' + ok + ' title=' + doc.title;
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
    """Screenshot into test-artifacts/, figures laid out by the browser, no console errors or failed loads."""
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
