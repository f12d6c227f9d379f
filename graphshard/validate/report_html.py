"""`report.json` and a self-contained `report.html`: matplotlib (Agg) figures embedded as base64 PNG, inline CSS,
no scripts and no external resources, so the page opens offline and anywhere.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from graphshard.fsutil import write_text_atomic  # noqa: E402
from graphshard.validate.problems import problem_lines  # noqa: E402

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
figure{margin:0} figure img{width:100%;height:auto} figcaption{font-size:12px;color:#667;margin-top:2px}
table{border-collapse:collapse;font-size:13px;width:100%} th,td{padding:4px 8px;border-bottom:1px solid #e3e5ea;
text-align:right} th{background:#f0f2f6} td.l,th.l{text-align:left}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.badge.passed{background:#2e7d32} .badge.failed{background:#c62828} .badge.skipped{background:#b08900}
code{font-size:12px;background:#f0f2f6;padding:1px 4px;border-radius:3px}
.problems li{font-family:monospace;font-size:12px;margin:2px 0}
"""


def _label(name: str) -> str:
    """Matplotlib hides legend labels that start with '_': name DGL's homogeneous types plainly."""
    return {"_N": "nodes", "_N:_E:_N": "edges"}.get(name, name.lstrip("_") or name)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _stacked(ax, labels: list[str], series: list[tuple[str, list[float], str, bool]]) -> None:
    """Stacked bars per partition from (label, values, color, hatched) series; hatched ones are halo."""
    bottom = np.zeros(len(labels))
    for name, values, color, hatched in series:
        vals = np.asarray(values, dtype=float)
        ax.bar(labels, vals, bottom=bottom, label=_label(name), color=color, alpha=0.45 if hatched else 0.95,
               hatch="//" if hatched else None, edgecolor="white", linewidth=0.6)
        bottom += vals
    ax.spines[["top", "right"]].set_visible(False)
    ax.figure.legend(fontsize=7, frameon=False, loc="outside right upper")


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _fig(width: float = 6.4, height: float = 3.6):
    """Every plot the same size (constrained layout keeps legends inside), so the grid lines up."""
    return plt.subplots(figsize=(width, height), layout="constrained")


def _figures(q: dict, times: dict[str, float]) -> list[tuple[str, str, str]]:
    """(title, caption, base64 PNG) of every plot."""
    P = q["num_parts"]
    labels = [f"p{p}" for p in range(P)]
    parts = q["partitions"]
    out = []

    fig, ax = _fig()
    _stacked(ax, labels, [(f"{_label(t)} inner", [r["inner_nodes"][t] for r in parts], _color(i), False)
                          for i, t in enumerate(q["ntypes"])] +
             [(f"{_label(t)} halo", [r["halo_nodes"][t] for r in parts], _color(i), True)
              for i, t in enumerate(q["ntypes"])])
    ax.set_ylabel("nodes")
    ax.set_title("Nodes per partition and type (hatched: halo)")
    out.append(("Nodes", "Inner nodes are owned by the partition; halo nodes are copies of other partitions' nodes.",
                _png(fig)))

    fig, ax = _fig()
    series = [(t, [r["inner_edges"][t] for r in parts], _color(i), False) for i, t in enumerate(q["etypes"])]
    halo = [sum(r["halo_edges"].values()) for r in parts]
    _stacked(ax, labels, series + ([("halo edges (all types)", halo, "#8C8C8C", True)] if any(halo) else []))
    ax.set_ylabel("edges")
    ax.set_title("Edges per partition and type (hatched: halo)")
    out.append(("Edges", "An edge is owned by its destination's partition; halo edges are kept for halo nodes.",
                _png(fig)))

    m = np.asarray(q["edge_matrix"], dtype=float)
    fig, ax = _fig()
    im = ax.imshow(m, cmap="viridis")
    ax.set_xticks(range(P), labels)
    ax.set_yticks(range(P), labels)
    ax.set_xlabel("into partition (destination owner)")
    ax.set_ylabel("from partition (source owner)")
    if P <= 12:
        top = m.max() if m.size else 0
        for i in range(P):
            for j in range(P):
                ax.text(j, i, f"{int(m[i, j]):,}", ha="center", va="center", fontsize=8,
                        color="black" if m[i, j] > 0.6 * top else "white")
    fig.colorbar(im, ax=ax, shrink=0.9, label="edges")
    ax.set_title(f"Partition-to-partition edges (cut {q['edge_cut']['share']:.1%})")
    out.append(("Edge matrix", "Diagonal: edges inside a partition; off-diagonal: cut edges.", _png(fig)))

    fig, ax = _fig()
    names = [f"nodes: {t}" for t in q["ntypes"]] + [f"edges: {t}" for t in q["etypes"]] + \
        [f"constraint: {c}" for c in q["balance_constraints"]]
    values = list(q["imbalance"]["nodes"].values()) + list(q["imbalance"]["edges"].values()) + \
        list(q["balance_constraints"].values())
    colors = [PALETTE[0]] * len(q["ntypes"]) + [PALETTE[1]] * len(q["etypes"]) + \
        [PALETTE[2]] * len(q["balance_constraints"])
    y = np.arange(len(names))
    ax.barh(y, values, color=colors)
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="#333", lw=0.8, ls="--")
    ax.set_xlim(left=min(0.9, min(values, default=1.0) - 0.05))
    ax.set_xlabel("max / mean over partitions (1.0 = perfect)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Imbalance per type and balance constraint")
    out.append(("Imbalance", "Constraints come from assignment_report.json when it is present.", _png(fig)))

    fig, ax = _fig()
    shares = [100 * r["halo_share"] for r in parts]
    ax.bar(labels, shares, color=PALETTE[4])
    for i, s in enumerate(shares):
        ax.text(i, s, f"{s:.1f}%", ha="center", va="bottom", fontsize=7)
    ax.set_ylabel("halo nodes / all nodes (%)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(f"Halo share per partition (replication factor {q['replication_factor']:.2f})")
    out.append(("Halo share", "Replication factor: nodes stored over all partitions / nodes of the graph.", _png(fig)))

    fig, ax = _fig()
    files = sorted({f for r in parts for f in r["file_bytes"]})
    _stacked(ax, labels, [(f, [r["file_bytes"].get(f, 0) / 2**20 for r in parts], _color(i), False)
                          for i, f in enumerate(files)])
    ax.set_ylabel("MiB")
    ax.set_title("Bytes on disk per partition")
    out.append(("Bytes on disk", "Every file in each partition folder.", _png(fig)))

    if times:
        fig, ax = _fig()
        names = list(times)
        ax.barh(names, [times[n] for n in names], color=PALETTE[5])
        for i, n in enumerate(names):
            ax.text(times[n], i, f" {times[n]:.2f} s", va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("seconds")
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_title("Time of each step")
        out.append(("Step times", "As measured by the pipeline (validate: this validation).", _png(fig)))
    return out


def _e(x) -> str:
    return html.escape(str(x))


def _table(head: list[str], rows: list[list], left: int = 1) -> str:
    th = "".join(f"<th class='{'l' if i < left else ''}'>{_e(h)}</th>" for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f"<td class='{'l' if i < left else ''}'>{c}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def render_html(report: dict) -> str:
    """The whole page as one string."""
    q = report["quality"]
    ok = report["ok"]
    cards = [("status", f"<span class='{'ok' if ok else 'bad'}'>{'valid' if ok else 'INVALID'}</span>"),
             ("partitions", q["num_parts"]), ("nodes", f"{q['num_nodes']:,}"), ("edges", f"{q['num_edges']:,}"),
             (f"edge cut ({q['edge_cut']['count']:,} edges)", f"{q['edge_cut']['share']:.1%}"),
             ("replication", f"{q['replication_factor']:.2f}"),
             ("on disk", f"{q['bytes_total'] / 2**20:,.1f} MiB"), ("problems", report["num_problems"])]
    cards_html = "".join(f"<div class='card'><div class='v'>{v}</div><div class='k'>{_e(k)}</div></div>"
                         for k, v in cards)
    figs = "".join(f"<figure><img alt='{_e(t)}' src='data:image/png;base64,{b}'><figcaption>{_e(c)}</figcaption>"
                   f"</figure>" for t, c, b in _figures(q, report.get("step_times") or {}))
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


def write_report(out_dir: str | Path, report: dict) -> tuple[Path, Path]:
    """Write `report.json` and `report.html` into `out_dir` (each via a temporary name); return both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {**report, "problem_lines": problem_lines(report)}
    json_path, html_path = out_dir / "report.json", out_dir / "report.html"
    write_text_atomic(json_path, json.dumps(report, indent=2) + "\n")
    write_text_atomic(html_path, render_html(report))
    return json_path, html_path
