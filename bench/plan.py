"""Check `graphshard plan` against real runs: predicted next to measured for every column, per step.

For each size (R-MAT, 20 edges per node, numpy chunks of 5M edges, generated here and deleted after) and method
(`random`, `multilevel`): the plan of the config (2 workers x 1 thread, `memory_limit` 2GB, validation on,
graph_formats [coo]), then `graphshard run` as a subprocess on this script's own LocalCluster (`cluster.address`), so
that the workers' pids are known: every worker's RSS and the flow process's are sampled every 50 ms
(bench/measure.py), the work folder's size every 0.25 s, and the scheduler's task stream counts the Dask tasks of
each step. A step's window is its "building" .. "done" lines in the run's log. Measured per step: peak RSS per
worker (largest worker) and of the flow process in the window, scratch = the most bytes the steps' scratch folders
(SCRATCH_DIR) held at once in the window, output = the step's artifact folder, tasks, wall. The disk figure of the
plan is checked against free space before generating a size. `--update` writes the shape and time coefficients measured
here (edge cut, edge imbalance, halo nodes per cut edge, core-seconds) into graphshard/plan/coefficients.json;
`--predict` prints the plan for sizes nobody ran (1B/10B/100B on 8/64/512 workers). Markdown tables to stdout.
Run heavy: `flock /tmp/graphshard-heavy.lock python bench/plan.py --sizes 20000000`.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import _Poll, machine  # noqa: E402  (bench/measure.py)

CHUNK_EDGES = 5_000_000
NODE_FEAT_BYTES, EDGE_FEAT_BYTES = 73.0, 4.0  # the R-MAT generator's features: feat 16 x f32, label i64, mask bool
STEP_PREFIX = {"ingest": "ingest", "assign": "assign", "shuffle": "shuffle", "validate": "validate"}
COLUMNS = ("worker_peak", "flow_peak", "scratch", "output", "tasks", "seconds")
LOG_LINE = re.compile(r"^(\S+ \S+) INFO \S+ (\w+): (building|done in)")


class Timeline(_Poll):
    """(time, rss) samples of each pid, and (time, bytes) of a folder, taken every `period` seconds."""

    def __init__(self, pids: dict[str, int], folder: Path, period: float = 0.05):
        super().__init__(self._sample, period)
        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.rss: dict[str, list[tuple[float, int]]] = {name: [] for name in pids}
        self.folder, self.disk, self._next_walk = folder, [], 0.0

    def _sample(self) -> None:
        now = time.time()
        for name, proc in self.procs.items():
            try:
                self.rss[name].append((now, proc.memory_info().rss))
            except psutil.Error:
                pass
        if now >= self._next_walk:
            self.disk.append((now, folder_bytes(self.folder, SCRATCH_DIR)))
            self._next_walk = now + 0.25

    def peak(self, name: str, lo: float, hi: float) -> int:
        """The largest sample in [lo, hi]: samples are in time order, so the window is found by bisection
        (task_peaks asks once per task: a scan per task took ~5 minutes after a 10,000-task step)."""
        samples = self.rss[name]
        first = bisect.bisect_left(samples, (lo, -1))
        last = bisect.bisect_right(samples, (hi, float("inf")))
        return max((r for _, r in samples[first:last]), default=0)

    def scratch_peak(self, lo: float, hi: float) -> int:
        """The most bytes the steps' scratch folders held at once in [lo, hi]."""
        return max((b for t, b in self.disk if lo <= t <= hi), default=0)


# the steps' scratch folders (assign's report and the shuffle, random's pieces, multilevel's levels, validation's
# arrays): measured apart from the outputs, whose writing overlaps the scratch's deletion in the short steps
SCRATCH_DIR = re.compile(r"^(\.scratch|\.pieces|\.multilevel|\..+\.validate-[0-9a-f]{8})$")


def folder_bytes(folder: Path, only: re.Pattern | None = None) -> int:
    """Bytes of the files under a folder (hard links counted once); with `only`, of those below a folder whose name
    matches it."""
    seen, total = set(), 0
    for root, _, files in os.walk(folder):
        if only is not None and not any(only.match(part) for part in Path(root).relative_to(folder).parts):
            continue
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def windows(log: Path, open_end: float | None = None) -> dict[str, tuple[float, float]]:
    """Each built step's (start, end) wall-clock time from the run's log; a step still open when the run failed
    ends at `open_end` (its peaks up to the failure are then measured too)."""
    out: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        m = LOG_LINE.match(line)
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            out.setdefault(m.group(2), []).append(t)
    if open_end is not None:
        out = {step: ts + [open_end] if len(ts) == 1 else ts for step, ts in out.items()}
    return {step: (ts[0], ts[-1]) for step, ts in out.items() if len(ts) >= 2}


def write_config(path: Path, graph: Path, out: Path, method: str, parts: int, args, address: str | None) -> Path:
    cluster = {"workers": args.workers, "threads_per_worker": 1, "memory_limit": args.memory_limit}
    if address:
        cluster["address"] = address
    cfg = {"input": {"metadata": str(graph)}, "output": {"dir": str(out / "out")}, "work_dir": str(out / "work"),
           "num_parts": parts, "assign": {"method": method, "seed": 0, **json.loads(args.assign)},
           "shuffle": {"graph_formats": ["coo"], "save_orig_nids": True, "save_orig_eids": not args.no_orig_eids,
                       "halo_mode": args.halo_mode},
           "validate": {"enabled": True, **json.loads(args.validate)}, "cluster": cluster}
    path.write_text(json.dumps(cfg))  # YAML is a superset of JSON
    return path


def plan_of(config: Path) -> dict:
    from graphshard.pipeline.config import load_config
    from graphshard.pipeline.preflight import check_config
    from graphshard.plan.build import plan_run

    cfg = load_config(config)
    return plan_run(cfg, check_config(cfg)).to_json()


def parts_of(config: Path, asked: str) -> int:
    """`--parts`: a number, or `auto`: the smallest partition count (at least 4) the plan fits into the workers'
    memory, what the plan's advice tells a user to set (memory per worker follows partition size, not graph size)."""
    if asked != "auto":
        return int(asked)
    from graphshard.pipeline.config import load_config
    from graphshard.pipeline.preflight import check_config
    from graphshard.plan.build import settings_of
    from graphshard.plan.fit import fitting_parts, kill_threshold, worker_limit
    from graphshard.plan.sizes import GraphSizes

    cfg = load_config(config)
    cl = cfg.cluster
    cap = int(worker_limit(cl.memory_limit, cl.workers, cl.threads_per_worker) * kill_threshold())
    return fitting_parts(GraphSizes.of(check_config(cfg)), settings_of(cfg), cap) or 4


def disk_before_generating(edges: int, args, generated: bool) -> tuple[int, int]:
    """(bytes the size needs at its fullest: its input unless `generated` already, plus the largest method's work
    folder, free bytes) from the plan of the graph before it exists (`GraphSizes.synthetic`), at the partition count
    each method will use."""
    from graphshard.plan.build import work_bytes
    from graphshard.plan.fit import fitting_parts, kill_threshold, worker_limit
    from graphshard.plan.model import Settings, plan_steps
    from graphshard.plan.sizes import GraphSizes

    g = GraphSizes.synthetic(edges // 20, edges, CHUNK_EDGES, NODE_FEAT_BYTES, EDGE_FEAT_BYTES)
    cap = int(worker_limit(args.memory_limit, args.workers, 1) * kill_threshold())
    need = 0
    for method in args.methods:
        s = Settings(num_parts=4, method=method, halo_mode=args.halo_mode, orig_nids=True,
                     orig_eids=not args.no_orig_eids, workers=args.workers, threads=1, cores=os.cpu_count() or 1,
                     balance_edges=bool(json.loads(args.assign).get("balance_edges")))
        k = int(args.parts) if args.parts != "auto" else fitting_parts(g, s, cap) or 4
        need = max(need, work_bytes(plan_steps(g, replace(s, num_parts=k))))
    free = shutil.disk_usage(next(p for p in Path(args.tmp).parents if p.exists())).free
    return (0 if generated else g.input_bytes) + need, free


def measure_run(config: Path, work: Path, client, env: dict) -> dict:
    """`graphshard run` on the bench's cluster; measured figures per step."""
    from distributed import get_task_stream

    addrs = client.run(os.getpid)
    pids = {f"worker{i}": pid for i, pid in enumerate(addrs.values())}
    names = {f"worker{i}": addr for i, addr in enumerate(addrs)}
    work.mkdir(parents=True, exist_ok=True)
    with get_task_stream(client) as stream:
        proc = subprocess.Popen([sys.executable, "-m", "graphshard.cli", "run", str(config)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with Timeline({**pids, "flow": proc.pid}, work) as line:
            out, err = proc.communicate()
    failed = None if proc.returncode == 0 else (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    log = max((work / "logs").glob("run-*.log"), key=lambda p: p.stat().st_mtime)
    tasks = [str(t["key"]) for t in stream.data]
    spans = task_spans(stream.data)
    steps = windows(log, open_end=line.rss["flow"][-1][0] if failed and line.rss["flow"] else None)
    measured = {}
    for step, (lo, hi) in steps.items():
        lo, hi = min(lo, spans.get(step, (lo, hi))[0]), max(hi, spans.get(step, (lo, hi))[1])
        measured[step] = {**measured_step(step, lo, hi, line, pids, work, tasks),
                          "peak_task": peak_task(line, names, stream.data, lo, hi),
                          "task_peaks": task_peaks(line, names, stream.data, STEP_PREFIX[step])}
    return {"steps": measured, "failed": failed, "log": str(log)}


def peak_task(line: Timeline, names: dict[str, str], records: list[dict], lo: float, hi: float) -> str:
    """The task the worker with the step's peak RSS was computing at that sample (its key without the token)."""
    samples = [(rss, t, w) for w in names for t, rss in line.rss[w] if lo <= t <= hi]
    if not samples:
        return ""
    _, when, worker = max(samples)
    for rec in records:
        spans = [ss for ss in rec.get("startstops", ()) if ss.get("action") == "compute"]
        if rec.get("worker") == names[worker] and any(ss["start"] <= when <= ss["stop"] for ss in spans):
            return str(rec["key"]).rsplit("-", 1)[0]
    return "(no task running: memory kept from an earlier task)"


def task_peaks(line: Timeline, names: dict[str, str], records: list[dict], prefix: str, top: int = 8) -> dict:
    """The step's tasks whose worker reached the highest RSS while they computed (key without the token: GB), for
    attributing a peak when the largest one alone does not say enough."""
    workers = {addr: name for name, addr in names.items()}
    peaks: dict[str, float] = {}
    for rec in records:
        key, name = str(rec["key"]), workers.get(rec.get("worker"))
        if not key.startswith(prefix + "-") or name is None:
            continue
        for ss in rec.get("startstops", ()):
            if ss.get("action") == "compute":
                rss = line.peak(name, ss["start"], ss["stop"])
                label = key.rsplit("-", 1)[0]
                peaks[label] = max(peaks.get(label, 0.0), rss / 1e9)
    return dict(sorted(peaks.items(), key=lambda kv: -kv[1])[:top])


def task_spans(records: list[dict]) -> dict[str, tuple[float, float]]:
    """(first start, last stop) of each step's Dask tasks: ingest checks and hashes new input files before its
    'building' line, so the log alone misses that part of the step."""
    spans: dict[str, list[float]] = {}
    steps = {prefix: step for step, prefix in STEP_PREFIX.items()}
    for rec in records:
        step = steps.get(str(rec["key"]).split("-", 1)[0])
        times = [t for ss in rec.get("startstops", ()) for t in (ss["start"], ss["stop"])]
        if step and times:
            spans.setdefault(step, []).extend(times)
    return {step: (min(ts), max(ts)) for step, ts in spans.items()}


def measured_step(step: str, lo: float, hi: float, line: Timeline, pids: dict, work: Path, tasks: list[str]) -> dict:
    artifact = next((work / step).glob("[!.]*"), None)  # a key's folder, not the claims' .leases
    output = folder_bytes(artifact) if artifact else 0
    return {"worker_peak": max(line.peak(w, lo, hi) for w in pids), "flow_peak": line.peak("flow", lo, hi),
            "scratch": line.scratch_peak(lo, hi + 0.5), "output": output,
            "tasks": sum(k.startswith(STEP_PREFIX[step] + "-") for k in tasks), "seconds": round(hi - lo, 1)}


def shape_figures(report: dict, parts: int) -> dict:
    """Edge cut, edge imbalance and halo nodes per cut edge of a run's report.json."""
    q = report["quality"]
    owned = [sum(p["inner_edges"].values()) for p in q["partitions"]]
    halo_nodes = [sum(p["halo_nodes"].values()) for p in q["partitions"]]
    cut = q["edge_cut"]["share"]
    return {"cut": cut, "edge_imbalance": q["imbalance"]["all_edges"],
            "halo_nodes_per_cut_edge": max(halo_nodes) / max(1.0, 2 * cut * max(owned))}


def human(column: str, value: float) -> str:
    if column in ("worker_peak", "flow_peak", "scratch", "output"):
        return f"{value / 1e9:.2f}"
    return f"{value:,.0f}" if column == "tasks" else f"{value:.1f}"


def comparison_rows(size: int, method: str, plan: dict, measured: dict, note: str) -> list[str]:
    """Markdown rows: per step, predicted / measured (ratio) for every column; `note`: k, load, a failure."""
    rows = []
    for step in plan["steps"]:
        got = measured.get(step["step"])
        cells = []
        for c in COLUMNS:
            if c == "seconds":
                lo, hi = step["seconds"]
                pred = f"{lo:.0f}-{hi:.0f}"
                cells.append(f"{pred} / {got[c]:.1f}" if got else f"{pred} / -")
                continue
            pred = human(c, step[c])
            ratio = f" ({step[c] / got[c]:.2f}x)" if got and got[c] else ""
            cells.append(f"{pred} / {human(c, got[c])}{ratio}" if got else f"{pred} / -")
        rows.append(f"| {size / 1e6:,.0f}M | {method} | {step['step']} | " + " | ".join(cells) + f" | {note} |")
        note = ""
    return rows


TABLE_HEAD = ("| edges | method | step | worker peak GB | flow peak GB | scratch GB | output GB | Dask tasks | "
              "time s | k, load average (1 min) at start-end |\n|---|---|---|---|---|---|---|---|---|---|")


def update_coefficients(method: str, parts: int, shape: dict, plan: dict, measured: dict) -> None:
    """Write the measured edge cut, edge imbalance, halo nodes per cut edge and step core-seconds."""
    from graphshard.plan import coefficients

    c = coefficients.load()
    if method != "random":
        c["cut"][method] = round(shape["cut"], 4)
    k_factor = (parts / 4) ** c["edge_imbalance_k_exponent"].get(method, 0.0)  # stored at k=4 (model.edge_imbalance)
    c["edge_imbalance"][method] = round(shape["edge_imbalance"] / k_factor, 4)
    c["halo_nodes_per_cut_edge"] = round(shape["halo_nodes_per_cut_edge"], 4)
    keys = {"shuffle": "shuffle_per_edge", "validate": "validate_per_edge",
            "assign": f"assign:{method}_per_edge" if method == "multilevel" else f"assign:{method}_per_node"}
    for step in plan["steps"]:
        key, got = keys.get(step["step"]), measured.get(step["step"])
        if key and got:
            lo, hi = step["seconds"]
            central = (lo + hi) / sum(c["time_spread"])
            c["core_seconds"][key] = float(f"{c['core_seconds'][key] * got['seconds'] / central:.3g}")
    c["machine"] = f"{machine()}; bench/plan.py"
    coefficients.save(c)


def run_size(edges: int, args, client, env: dict, lines: list[str]) -> None:
    data = Path(args.tmp) / f"rmat{edges // 1_000_000}m"
    graph = data / "metadata.json"
    need, free = disk_before_generating(edges, args, graph.exists())
    if need > free:
        print(f"skipped {edges:,}: the plan needs {need / 1e9:.1f} GB of disk (input if not generated yet + the "
              f"largest run), {free / 1e9:.1f} GB free under {args.tmp}", file=sys.stderr)
        return
    if not graph.exists():
        subprocess.run([sys.executable, "-m", "graphshard.cli", "generate", "rmat", "--out", str(data), "--nodes",
                        str(edges // 20), "--edges", str(edges), "--chunks", str(-(-edges // CHUNK_EDGES))],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    for method in args.methods:
        run_method(edges, method, graph, args, client, env, lines)
    if not args.keep:
        shutil.rmtree(data, ignore_errors=True)


def run_method(edges: int, method: str, graph: Path, args, client, env: dict, lines: list[str]) -> None:
    """Plan, run and compare one method at one size; its rows go to stderr at once (a long run that is stopped
    later keeps the sizes it finished)."""
    run_dir = Path(args.tmp) / f"run-{edges // 1_000_000}m-{method}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    parts = parts_of(write_config(run_dir / "plan.yaml", graph, run_dir, method, 4, args, None), args.parts)
    plan = plan_of(write_config(run_dir / "plan.yaml", graph, run_dir, method, parts, args, None))
    disk = [m for m in plan["misfits"] if m["step"] == "disk"]
    if disk:
        print(f"skipped {edges:,} {method}: {disk[0]['line']}", file=sys.stderr)
        return
    config = write_config(run_dir / "run.yaml", graph, run_dir, method, parts, args, client.scheduler.address)
    client.restart()  # fresh workers, as a run's own cluster has: nothing kept from the previous method's run
    load = os.getloadavg()[0]
    got = measure_run(config, run_dir / "work", client, env)
    if args.logs:  # the run's log and report outlive the run folder
        keep = Path(args.logs) / f"{edges // 1_000_000}m-{method}"
        keep.mkdir(parents=True, exist_ok=True)
        for src in [Path(got["log"]), run_dir / "out" / "report.json",
                    *(run_dir / "work" / "assign").rglob("assignment_report.json")]:
            if src.exists():
                shutil.copy(src, keep / src.name)
    note = f"k={parts}, {load:.1f}-{os.getloadavg()[0]:.1f}"
    note += f", **failed**: {got['failed']}" if got["failed"] else ""
    rows = comparison_rows(edges, method, plan, got["steps"], note)
    lines += rows
    shape = (None if got["failed"] else
             shape_figures(json.loads((run_dir / "out" / "report.json").read_text()), parts))
    print(json.dumps({"edges": edges, "method": method, "parts": parts, "halo_mode": args.halo_mode,
                      "load": [load, os.getloadavg()[0]], **got, "shape": shape, "predicted": plan["steps"],
                      **machine()}), file=sys.stderr)
    print("\n".join(rows), file=sys.stderr, flush=True)
    if args.update and shape:
        update_coefficients(method, parts, shape, plan, got["steps"])
    shutil.rmtree(run_dir, ignore_errors=True)


def predictions(sizes: list[int], workers: list[int], methods: list[str], limit: str) -> list[str]:
    """The plan for graphs nobody ran here: R-MAT-like, 20 edges per node, 5M-edge chunks, the generator's features,
    orig-ID files, one partition and one thread per worker; what to change when a step does not fit `limit`."""
    from graphshard.plan.fit import gb, kill_threshold, worker_advice, worker_limit
    from graphshard.plan.model import Settings, plan_steps
    from graphshard.plan.sizes import GraphSizes

    rows = ["| edges | workers = partitions | method | step | worker peak | flow peak | scratch (shared) | output | "
            f"Dask tasks | time s | {limit} workers: what to change |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    cap = int(worker_limit(limit, 1, 1) * kill_threshold())
    for edges, w in zip(sizes, workers):
        g = GraphSizes.synthetic(edges // 20, edges, CHUNK_EDGES, NODE_FEAT_BYTES, EDGE_FEAT_BYTES)
        for method in methods:
            s = Settings(num_parts=w, method=method, orig_nids=True, orig_eids=True, workers=w, threads=1, cores=w)
            for st in plan_steps(g, s):
                lo, hi = st.seconds
                advice = worker_advice(g, s, st, cap)
                change = "fits" if st.worker_peak <= cap else "; ".join(advice) + (
                    "" if len(advice) > 1 else f" (no partition count or chunk size fits: {st.peak_task})")
                rows.append(f"| {edges / 1e9:g}B | {w} | {method} | {st.step} | {gb(st.worker_peak)} | "
                            f"{gb(st.flow_peak)} | {gb(st.scratch)} | {gb(st.output)} | {st.tasks:,} | "
                            f"{lo:,.0f}-{hi:,.0f} | {change} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    from distributed import Client, LocalCluster

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[20_000_000], help="edges of each R-MAT graph")
    ap.add_argument("--methods", nargs="+", default=["random", "multilevel"])
    ap.add_argument("--parts", default="4", help="partitions, or auto: the smallest count (>= 4) the plan fits")
    ap.add_argument("--halo-mode", default="full", choices=["full", "in_edges"])
    ap.add_argument("--no-orig-eids", action="store_true", help="no original edge-ID files (less disk)")
    ap.add_argument("--assign", default="{}", metavar="JSON",
                    help='extra assign options of every run, e.g. \'{"balance_edges": true}\'')
    ap.add_argument("--validate", default="{}", metavar="JSON",
                    help='extra validate options, e.g. \'{"remote_share": false}\'')
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="2GB")
    ap.add_argument("--tmp", default="/work/data/plan", help="graphs and runs go here (deleted after each size)")
    ap.add_argument("--keep", action="store_true", help="keep the generated graphs")
    ap.add_argument("--logs", default=None, metavar="DIR", help="keep each run's log and report.json here")
    ap.add_argument("--update", action="store_true", help="write the measured coefficients")
    ap.add_argument("--predict", action="store_true", help="also print the plan for 1B/10B/100B on 8/64/512 workers")
    ap.add_argument("--benchmarks", default=None, metavar="PATH",
                    help="also append the tables to this file (BENCHMARKS.md) under a dated heading")
    args = ap.parse_args(argv)

    env = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    lines, out = [TABLE_HEAD], []
    if args.sizes:
        load = os.getloadavg()[0]
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                          processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
            for edges in args.sizes:
                run_size(edges, args, client, env, lines)
        out += [f"Predicted / measured (predicted/measured ratio), {machine()}, load average at start {load:.1f}, "
                f"{args.workers} workers x 1 thread, memory_limit {args.memory_limit}, k={args.parts}, "
                f"halo_mode {args.halo_mode}, original edge IDs {'off' if args.no_orig_eids else 'on'}, "
                f"assign options {args.assign}, validate options {args.validate}:", "", *lines]
    if args.predict:
        out += ["", "Predictions (nobody ran these; the plan's model with the coefficients above):", "",
                *predictions([10**9, 10**10, 10**11], [8, 64, 512], args.methods, args.memory_limit)]
    print("\n".join(out))
    if args.benchmarks:
        with open(args.benchmarks, "a") as fh:
            fh.write(f"\n### bench/plan.py, {time.strftime('%Y-%m-%d %H:%M')}\n\n`{' '.join(sys.argv)}`\n\n"
                     + "\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
