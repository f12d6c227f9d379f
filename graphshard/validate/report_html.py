"""`report.json` and a self-contained `report.html`: inline SVG figures (graphshard.validate.svgchart), inline CSS,
no scripts and no external resources, so the page opens offline and anywhere.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from graphshard.formats.set_digests import REPORT_FILES
from graphshard.storage import Location, Storage, location
from graphshard.validate.problems import problem_lines
from graphshard.validate.svgchart import Series, hbars, heatmap, stacked_bars

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974",
           "#64B5CD"]
CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0;background:#f4f5f7;color:#222}
header{background:#1f2a44;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0;color:#c9d1e3;font-size:13px}
main{padding:20px 32px;max-width:1320px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:18px}
.card{background:#fff;border-radius:8px;padding:12px 16px;box-shadow:0 1px 3px rgba(0,0,0,.12);flex:1;min-width:110px}
.card .v{font-size:22px;font-weight:600} .card .k{font-size:12px;color:#667}
.ok{color:#1a7f37} .bad{color:#c62828} .skip{color:#8a6d00}
section{background:#fff;border-radius:8px;padding:14px 18px;margin-bottom:18px;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h2{font-size:17px;margin:0 0 10px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}
figure{margin:0} figure svg{display:block;width:100%;height:auto} figcaption{font-size:12px;color:#667;margin-top:2px}
table{border-collapse:collapse;font-size:13px;width:100%} th,td{padding:4px 8px;border-bottom:1px solid #e3e5ea;
text-align:right} th{background:#f0f2f6} td.l,th.l{text-align:left}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.badge.passed{background:#2e7d32} .badge.failed{background:#c62828} .badge.skipped{background:#b08900}
code{font-size:12px;background:#f0f2f6;padding:1px 4px;border-radius:3px}
.problems li{font-family:monospace;font-size:12px;margin:2px 0}
"""


def _label(name: str) -> str:
    """Name DGL's homogeneous types plainly in legends ('_N' -> 'nodes')."""
    return {"_N": "nodes", "_N:_E:_N": "edges"}.get(name, name.lstrip("_") or name)


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _count(v: float) -> str:
    return f"{int(v):,}"


def _mib(v: float) -> str:
    return f"{v:,.2f} MiB"


def _type_figures(q: dict, labels: list[str]) -> list[tuple[str, str]]:
    """Nodes and edges per partition and type, inner solid and halo hatched."""
    parts = q["partitions"]
    nodes = [Series(f"{_label(t)} inner", [r["inner_nodes"][t] for r in parts], _color(i))
             for i, t in enumerate(q["ntypes"])] + \
        [Series(f"{_label(t)} halo", [r["halo_nodes"][t] for r in parts], _color(i), True)
         for i, t in enumerate(q["ntypes"])]
    edges = [Series(_label(t), [r["inner_edges"][t] for r in parts], _color(i)) for i, t in enumerate(q["etypes"])]
    halo = [sum(r["halo_edges"].values()) for r in parts]
    if any(halo):
        edges.append(Series("halo edges (all types)", halo, "#8C8C8C", True))
    return [("Inner nodes are owned by the partition; halo nodes are copies of other partitions' nodes.",
             stacked_bars("fig-nodes", "Nodes per partition and type (hatched: halo)", labels, nodes, "nodes",
                          _count)),
            ("An edge is owned by its destination's partition; halo edges are kept for halo nodes.",
             stacked_bars("fig-edges", "Edges per partition and type (hatched: halo)", labels, edges, "edges",
                          _count))]


def _imbalance_figure(q: dict) -> tuple[str, str]:
    """max/mean per node type, edge type and balance constraint, against the 1.0 of perfect balance."""
    groups = [("nodes", q["imbalance"]["nodes"], PALETTE[0]), ("edges", q["imbalance"]["edges"], PALETTE[1]),
              ("constraint", q["balance_constraints"], PALETTE[2])]
    rows = [(f"{g}: {name}", v, color) for g, values, color in groups for name, v in values.items()]
    values = [v for _, v, _ in rows]
    svg = hbars("fig-imbalance", "Imbalance per type and balance constraint", [r[0] for r in rows], values,
                [r[2] for r in rows], "max / mean over partitions (1.0 = perfect)", lambda v: f"{v:.3f}",
                lo=min(0.9, min(values, default=1.0) - 0.05), ref=1.0)
    return "Constraints come from assignment_report.json when it is present.", svg


def _figures(q: dict, times: dict[str, float]) -> list[tuple[str, str]]:
    """(caption, inline SVG) of every plot."""
    P = q["num_parts"]
    labels = [f"p{p}" for p in range(P)]
    parts = q["partitions"]
    out = _type_figures(q, labels)
    out.append(("Diagonal: edges inside a partition; off-diagonal: cut edges.",
                heatmap("fig-matrix", f"Partition-to-partition edges (cut {q['edge_cut']['share']:.1%})", labels,
                        q["edge_matrix"], "into partition (destination owner)", "from partition (source owner)",
                        "edges", annotate=P <= 12)))
    out.append(_imbalance_figure(q))
    shares = Series("halo share", [100 * r["halo_share"] for r in parts], PALETTE[4])
    out.append(("Replication factor: nodes stored over all partitions / nodes of the graph.",
                stacked_bars("fig-halo", f"Halo share per partition (replication factor {q['replication_factor']:.2f})",
                             labels, [shares], "halo nodes / all nodes (%)", lambda v: f"{v:.1f}%", legend=False,
                             totals=True)))
    files = sorted({f for r in parts for f in r["file_bytes"]})
    out.append(("Every file in each partition folder.",
                stacked_bars("fig-bytes", "Bytes on disk per partition", labels,
                             [Series(f, [r["file_bytes"].get(f, 0) / 2**20 for r in parts], _color(i))
                              for i, f in enumerate(files)], "MiB", _mib)))
    if times:
        out.append(("As measured by the pipeline (validate: this validation).",
                    hbars("fig-times", "Time of each step", list(times), list(times.values()),
                          [PALETTE[5]] * len(times), "seconds", lambda v: f"{v:.2f} s")))
    return out


def _e(x) -> str:
    return html.escape(str(x))


def _table(head: list[str], rows: list[list], left: int = 1) -> str:
    th = "".join(f"<th class='{'l' if i < left else ''}'>{_e(h)}</th>" for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f"<td class='{'l' if i < left else ''}'>{c}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _remote_card(share: dict | None) -> list[tuple[str, str]]:
    """The estimated remote share of mini-batch input nodes beside the edge cut (none when not estimated)."""
    if not share:
        return []
    fan = ",".join(str(f) for f in share["fanouts"])
    worst = max(share["per_part"], default=0.0)
    return [(f"remote input nodes (est., fanouts {fan}; worst part {worst:.1%})", f"{share['overall']:.1%}")]


def render_html(report: dict) -> str:
    """The whole page as one string."""
    q = report["quality"]
    ok = report["ok"]
    cards = [("status", f"<span class='{'ok' if ok else 'bad'}'>{'valid' if ok else 'INVALID'}</span>"),
             ("partitions", q["num_parts"]), ("nodes", f"{q['num_nodes']:,}"), ("edges", f"{q['num_edges']:,}"),
             (f"edge cut ({q['edge_cut']['count']:,} edges)", f"{q['edge_cut']['share']:.1%}"),
             *_remote_card(q.get("remote_share")),
             ("replication", f"{q['replication_factor']:.2f}"),
             ("on disk", f"{q['bytes_total'] / 2**20:,.1f} MiB"), ("problems", report["num_problems"])]
    cards_html = "".join(f"<div class='card'><div class='v'>{v}</div><div class='k'>{_e(k)}</div></div>"
                         for k, v in cards)
    figs = "".join(f"<figure>{svg}<figcaption>{_e(c)}</figcaption></figure>"
                   for c, svg in _figures(q, report.get("step_times") or {}))
    checks = _table(["check", "status", "problems", "invariant / note"], [
        [f"<code>{_e(c['name'])}</code>", f"<span class='badge {c['status']}'>{c['status']}</span>", c["problems"],
         f"<span style='text-align:left;display:block'>{_e(c['invariant'])}"
         f"{'<br><i>' + _e(c['note']) + '</i>' if c['note'] else ''}</span>"] for c in report["checks"]])
    problems = ""
    if report["problems"]:
        items = "".join(f"<li>{_e(p)}</li>" for p in report.get("problem_lines", []))
        problems = f"<section><h2 class='bad'>Problems ({report['num_problems']})</h2><ul class='problems'>{items}" \
                   f"</ul></section>"
    rows = []
    for r in q["partitions"]:
        rows.append([f"p{r['part']}", f"{sum(r['inner_nodes'].values()):,}", f"{sum(r['halo_nodes'].values()):,}",
                     f"{sum(r['inner_edges'].values()):,}", f"{sum(r['halo_edges'].values()):,}",
                     f"{r['halo_share']:.1%}", f"{r['bytes'] / 2**20:,.2f}"])
    parts_table = _table(["partition", "inner nodes", "halo nodes", "inner edges", "halo edges", "halo share",
                          "MiB"], rows)
    typed = [[_e(t)] + [f"{r['inner_nodes'][t]:,} / {r['halo_nodes'][t]:,}" for r in q["partitions"]]
             for t in q["ntypes"]] + \
            [[_e(t)] + [f"{r['inner_edges'][t]:,} / {r['halo_edges'][t]:,}" for r in q["partitions"]]
             for t in q["etypes"]]
    typed_table = _table(["type (inner / halo)"] + [f"p{p}" for p in range(q["num_parts"])], typed)
    s = report["sampling"]
    times = report.get("step_times") or {}
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>graphshard report: {_e(report['graph_name'])}</title>
<style>{CSS}</style></head><body>
<header><h1>Partition report: {_e(report['graph_name'])}</h1>
<p>{_e(report['config'])}{' &middot; input ' + _e(report['input']) if report.get('input') else ''}
&middot; halo mode {_e(report['halo_mode'])}</p></header>
<main>
<div class="cards">{cards_html}</div>
{problems}
<section><h2>Quality</h2><div class="grid">{figs}</div></section>
<section><h2>Partitions</h2>{parts_table}<br>{typed_table}</section>
<section><h2>Checks</h2>{checks}
<p style="font-size:12px;color:#556">Rows compared: {_e(s['rule'])} (seed {s['seed']})</p></section>
<section><h2>Step times</h2>{_table(["step", "seconds"], [[_e(k), f"{v:.2f}"] for k, v in times.items()])}</section>
</main></body></html>
"""


REPORT_CLASH = ("a name other than 'report' while validation is on (it writes report.json beside the partition "
                "config <graph_name>.json)")


def report_clash(graph_name: str) -> bool:
    """Whether a set of this name would lose its config `<graph_name>.json` to validation's report."""
    return f"{graph_name}.json" in REPORT_FILES


def write_report(out_dir: str | Path | Location, report: dict, *, storage: Storage | None = None
                 ) -> tuple[Path | Location, Path | Location]:
    """Write `report.json` and a self-contained `report.html` into `out_dir` (each atomically: a temporary name
    locally, one PUT on a store).

    Parameters
    ----------
    out_dir : str, Path or Location
        The folder (created when missing), or a URL prefix.
    report : dict
        What `validate` returned.
    storage : Storage, optional
        What a URL is written through; None: credentials from the environment.

    Returns
    -------
    tuple of (Path, Path) or (Location, Location)
        The JSON and the HTML file (Locations for a URL).
    """
    out, storage = location(out_dir), storage or Storage()
    report = {**report, "problem_lines": problem_lines(report)}
    json_loc, html_loc = (out.join(name) for name in REPORT_FILES)
    storage.write_bytes(json_loc, (json.dumps(report, indent=2) + "\n").encode())
    storage.write_bytes(html_loc, render_html(report).encode())
    if out.is_local:
        return Path(out_dir) / REPORT_FILES[0], Path(out_dir) / REPORT_FILES[1]
    return json_loc, html_loc


def retarget_report(report_dir: str | Path, config: str | Path) -> tuple[Path, Path]:
    """Rewrite the report in `report_dir` to name `config`, where the set it describes was published.

    Validation wrote it beside the set in a work folder. Replaces the files, never writes through a hard link to the
    cache.

    Parameters
    ----------
    report_dir : str or Path
        The folder holding `report.json` and `report.html`.
    config : str or Path
        The published partition config.

    Returns
    -------
    tuple of (Path, Path)
        The JSON and the HTML file.
    """
    report = json.loads(Storage().read_bytes(location(report_dir).join(REPORT_FILES[0])))
    return write_report(report_dir, {**report, "config": str(config)})
