"""The run summary: output paths, headline figures (edge cut, imbalance, time), step states; as a dict, as the
final log line, and as markdown / table rows for Prefect artifacts. Plain data, no Prefect."""

from __future__ import annotations

import json
from pathlib import Path

from graphshard.assign import REPORT_FILE
from graphshard.pipeline.cache import PRODUCT, StepResult
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.files import read_text
from graphshard.pipeline.publish import published_folder, run_of
from graphshard.storage import Location


def summarize(cfg: PipelineConfig, out: Path | Location, ingested: StepResult, assigned: StepResult,
              shuffled: StepResult, validated: StepResult | None, states: dict[str, str],
              seconds: float) -> tuple[dict, dict]:
    """(summary, tables): the summary dict the flow returns and the rows of the per-partition and per-step tables."""
    assignment = json.loads(read_text(assigned.path(f"{PRODUCT['assign']}/{REPORT_FILE}"), cfg.storage))
    report = published_folder(out, run_of(shuffled, validated)) / "report.html"
    results = {"ingest": ingested, "assign": assigned, "shuffle": shuffled, "validate": validated}
    summary = {
        "output": str(out),
        "partition_config": str(out / Path(shuffled.summary["config"]).name),
        "report": str(report) if validated else None,
        "work_dir": str(cfg.work),
        "graph_name": ingested.summary["graph_name"],
        "num_nodes": ingested.summary["num_nodes"],
        "num_edges": ingested.summary["num_edges"],
        "num_parts": cfg.num_parts,
        "method": cfg.assign.method,
        "edge_cut": assignment["edge_cut"]["fraction"] if assignment["edge_cut"] else None,
        "edge_cut_count": assignment["edge_cut"]["count"] if assignment["edge_cut"] else None,
        "imbalance": dict(assignment["imbalance"]),
        "seconds": round(seconds, 2),
        "steps": states,
    }
    steps = [{"step": name, "state": states.get(name, "skipped"),
              "build_seconds": r.summary.get("seconds") if r else None, "artifact": str(r.folder) if r else None}
             for name, r in results.items()]
    if validated:
        quality = json.loads(read_text(validated.path(f"{PRODUCT['validate']}/report.json"), cfg.storage))["quality"]
        summary["edge_cut"] = quality["edge_cut"]["share"]  # measured on the written partitions
        summary["edge_cut_count"] = quality["edge_cut"]["count"]
        summary["remote_share"] = (quality.get("remote_share") or {}).get("overall")
        per_part = (quality.get("remote_share") or {}).get("per_part") or [None] * len(quality["partitions"])
        summary["checks"] = validated.summary.get("checks", {})
        parts = [{"partition": q["part"], "inner_nodes": sum(q["inner_nodes"].values()),
                  "halo_nodes": sum(q["halo_nodes"].values()), "inner_edges": sum(q["inner_edges"].values()),
                  "halo_edges": sum(q["halo_edges"].values()), "halo_share": round(q["halo_share"], 4),
                  "bytes": q["bytes"], "remote_share": r} for q, r in zip(quality["partitions"], per_part)]
    else:
        nodes = assignment["nodes_per_part"]
        parts = [{"partition": p, "inner_nodes": sum(counts[p] for counts in nodes.values()),
                  "inner_edges": assignment["edges_per_part"][p]} for p in range(cfg.num_parts)]
    return summary, {"steps": steps, "partitions": parts}


def _worst_imbalance(summary: dict) -> float:
    values = [v for v in summary["imbalance"].values() if isinstance(v, (int, float))]
    return max(values) if values else 1.0


def summary_line(summary: dict) -> str:
    """One line: where the partitions and the report are, edge cut, imbalance, time, and which steps were cached."""
    cached = [k for k, v in summary["steps"].items() if v == "Cached"]
    line = (f"graphshard: {summary['num_parts']} partitions of '{summary['graph_name']}' in {summary['output']} "
            f"(config {Path(summary['partition_config']).name}")
    line += f", report {summary['report']})" if summary["report"] else ")"
    line += (f"; edge cut {100 * summary['edge_cut']:.1f}%, imbalance {_worst_imbalance(summary):.3f}, "
             f"{summary['seconds']:.1f} s; cached: {', '.join(cached) if cached else 'none'}")
    return line


def markdown(summary: dict) -> str:
    """The summary as a markdown artifact."""
    rows = "\n".join(f"| {k} | {v} |" for k, v in summary["steps"].items())
    imb = ", ".join(f"{k} {v:.3f}" for k, v in summary["imbalance"].items() if isinstance(v, (int, float)))
    return (f"# graphshard: {summary['graph_name']} into {summary['num_parts']} partitions\n\n"
            f"- output: `{summary['output']}` (`{Path(summary['partition_config']).name}`)\n"
            f"- report: `{summary['report']}`\n"
            f"- {summary['num_nodes']:,} nodes, {summary['num_edges']:,} edges, method `{summary['method']}`\n"
            f"- edge cut: {summary['edge_cut_count']:,} edges ({100 * summary['edge_cut']:.2f}%)\n"
            + (f"- remote input nodes of sampled mini-batches (estimated): {100 * summary['remote_share']:.1f}%\n"
               if summary.get("remote_share") is not None else "")
            + f"- imbalance (max / mean): {imb}\n"
            f"- total time: {summary['seconds']:.1f} s\n\n"
            f"| step | state |\n|---|---|\n{rows}\n"
            + ("\n| check | status |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in summary["checks"].items())
               + "\n" if summary.get("checks") else ""))
