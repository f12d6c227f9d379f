"""End to end as a user sees it: `graphshard run` (cold and warm Prefect server, cached) vs the steps as CLI commands
vs the steps as library calls vs DGL's `partition_graph`, each timed as process wall with start-up, in one run.

Usage (the graph is generated under the same lock if absent):
    flock /tmp/graphshard-heavy.lock python bench/flow.py [--graph /work/data/rmat20m] [--parts 4] [--rounds 3]

Every graphshard command runs as a new process; the largest process (RSS high-water mark, /proc VmHWM, polled
over the process tree every 0.1 s: the command, its Dask workers) and the Prefect server's are reported. The
background Prefect server lives in a private GRAPHSHARD_HOME, so the first `run` starts it cold; it is stopped at the
end. Options on every side: k parts, random, halo 1, orig-ID files, COO; graphshard validates with its defaults.
DGL runs when /work/dgl-venv exists (bench/dgl_partition.py). This machine's speed swings by +-30% from one minute to
the next, so the warm variants and DGL run in `--rounds` interleaved rounds (in each, the warm run and the library
calls back to back, which of them first alternating by round; then the step commands, then DGL); the table gives
medians and each variant's median per-round ratio to DGL. Prints a markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import measure  # bench/measure.py
import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
DGL_PY = Path("/work/dgl-venv/bin/python")


def timed(args: list[str], env: dict, log: Path) -> dict:
    """Run a command to completion (output to `log`); its wall time and the largest peak RSS in its process tree."""
    with open(log, "w") as out:
        run = measure.run(args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({run.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    return {"wall": run.wall, "peak": run.peak}


def write_config(folder: Path, metadata: Path, parts: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"input": {"metadata": str(metadata)}, "output": {"dir": str(folder / "out")},
            "work_dir": str(folder / "work"), "num_parts": parts, "assign": {"method": "random"},
            "shuffle": {"save_orig_nids": True, "save_orig_eids": True},
            "cluster": {"workers": 2, "threads_per_worker": 1}}
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


LIBRARY = """
import sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from prefect_overhead import library_run
from graphshard.pipeline.config import load_config
cfg = load_config({config!r})
library_run(Path({metadata!r}), Path({out!r}), cfg)
"""


def cold_and_cached(root: Path, metadata: Path, parts: int, env: dict) -> tuple[dict[str, dict], psutil.Process]:
    """The first `run` (starts the background server cold), its cached re-run without that server; the server."""
    gs = [PY, "-m", "graphshard.cli"]
    cold = write_config(root / "cold", metadata, parts)
    results = {"run_cold": timed([*gs, "run", str(cold)], env, root / "run_cold.log")}
    server = psutil.Process(json.loads((Path(env["GRAPHSHARD_HOME"]) / "prefect" / "server.json").read_text())["pid"])
    time.sleep(5)  # let the new server finish its start-up work
    results["run_cached_ephemeral"] = timed([*gs, "run", str(cold)], {**env, "GRAPHSHARD_PREFECT": "ephemeral"},
                                            root / "run_cached_ephemeral.log")  # the design replaced: per-run server
    shutil.rmtree(root / "cold")
    return results, server


def run_pair(root: Path, metadata: Path, parts: int, env: dict, server: psutil.Process,
             library_first: bool) -> dict[str, dict]:
    """A warm `run` (then its cached re-run) and the same steps as library calls, back to back, in the given order."""
    gs = [PY, "-m", "graphshard.cli"]
    results: dict[str, dict] = {}

    def warm_run() -> None:
        warm = write_config(root / "warm", metadata, parts)
        busy = sum(server.cpu_times()[:2])
        results["run_warm"] = timed([*gs, "run", str(warm)], env, root / "run_warm.log")
        results["run_warm"]["server_cpu"] = sum(server.cpu_times()[:2]) - busy
        results["run_cached"] = timed([*gs, "run", str(warm)], env, root / "run_cached.log")
        shutil.rmtree(root / "warm")

    def library() -> None:
        lib = write_config(root / "lib", metadata, parts)
        code = LIBRARY.format(bench=str(REPO / "bench"), config=str(lib), metadata=str(metadata),
                              out=str(root / "lib"))
        results["library"] = timed([PY, "-c", code], env, root / "library.log")
        shutil.rmtree(root / "lib")

    for step in ((library, warm_run) if library_first else (warm_run, library)):
        step()
    return results


def step_commands(root: Path, metadata: Path, parts: int, env: dict) -> dict[str, dict]:
    """The steps as CLI commands: assign, dispatch, validate --input."""
    gs, steps = [PY, "-m", "graphshard.cli"], root / "steps"
    results = {"assign_cli": timed([*gs, "assign", "--in", str(metadata), "--out", str(steps / "asg"),
                                    "--num-parts", str(parts), "--method", "random"], env, root / "assign.log")}
    results["dispatch_cli"] = timed([*gs, "dispatch", "--in", str(metadata), "--partitions", str(steps / "asg"),
                                     "--out", str(steps / "parts"), "--save-orig-nids", "--save-orig-eids"],
                                    env, root / "dispatch.log")
    results["validate_cli"] = timed([*gs, "validate", "--partitions", str(steps / "parts" / "rmat.json"), "--input",
                                     str(metadata)],
                                    env, root / "validate.log")
    shutil.rmtree(steps)
    return results


def dgl_run(root: Path, metadata: Path, parts: int) -> dict | None:
    if not DGL_PY.exists():
        return None
    env = dict(os.environ, DGLBACKEND="pytorch", PYTHONPATH=str(REPO))
    res = timed([str(DGL_PY), str(REPO / "bench" / "dgl_partition.py"), "--in", str(metadata), "--out",
                 str(root / "dgl"), "--parts", str(parts), "--method", "random", "--save-orig-ids"],
                env, root / "dgl.log")
    shutil.rmtree(root / "dgl", ignore_errors=True)
    return res


ROWS = [("run_cold", "`graphshard run`, first: starts the Prefect server (cold), nothing cached"),
        ("run_warm", "`graphshard run`, server up, nothing cached"),
        ("run_cached", "`graphshard run` again, every step Cached"),
        ("run_cached_ephemeral", "the same cached run with `GRAPHSHARD_PREFECT=ephemeral` (temporary server per run)"),
        ("assign_cli", "`graphshard assign` (CLI process)"),
        ("dispatch_cli", "`graphshard dispatch` (CLI process, orig-ID files)"),
        ("validate_cli", "`graphshard validate --input` (CLI process)"),
        ("library", "the run's steps as library calls in one process (no Prefect)"),
        ("dgl", "DGL 2.1 `partition_graph(..., \"random\")` incl. loading the graph"),
        ("server", "the background Prefect server process (stays up)")]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(rounds: list[dict[str, dict]], once: dict[str, dict], args: argparse.Namespace) -> None:
    """One table: per variant the median wall over the rounds, the largest peak, and the median of its per-round
    ratio to DGL (each round's variants ran next to that round's DGL run)."""
    print(f"\nmachine: {platform.node()}, {os.cpu_count()} cores, "
          f"{psutil.virtual_memory().total / 2**30:.0f} GiB; graph {args.graph}; k={args.parts}, random; "
          f"{len(rounds)} round(s); {time.strftime('%Y-%m-%d')}")
    print("| run | median wall s (each round) | largest process GB | wall / DGL, median of rounds |")
    print("|---|---|---|---|")
    for key, label in ROWS:
        samples = [r[key] for r in rounds if key in r] or ([once[key]] if key in once else [])
        if not samples:
            continue
        walls = [s["wall"] for s in samples]
        ratios = [r[key]["wall"] / r["dgl"]["wall"] for r in rounds if key in r and "dgl" in r and key != "dgl"]
        shown = "-" if key == "server" else f"{median(walls):.1f} ({', '.join(f'{w:.1f}' for w in walls)})"
        ratio = f"{median(ratios):.2f}" if ratios else "-"
        print(f"| {label} | {shown} | {max(s['peak'] for s in samples) / 1e9:.2f} | {ratio} |")
    gaps = [r["run_warm"]["wall"] - r["library"]["wall"] for r in rounds]
    print(f"\nwarm run minus library calls, per round: {', '.join(f'{g:+.1f}' for g in gaps)} s "
          f"(median {median(gaps):+.1f} s); Prefect server CPU during a warm run: "
          f"{median([r['run_warm']['server_cpu'] for r in rounds]):.1f} s")
    print(json.dumps({"once": once, "rounds": rounds}, default=lambda v: round(v, 3)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", type=Path, default=Path("/work/data/rmat20m"))
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=20_000_000)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every warm variant and DGL (medians reported)")
    ap.add_argument("--no-dgl", action="store_true")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="graphshard-bench-flow-", dir="/work/data" if Path("/work/data").is_dir()
                                 else None))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPHSHARD_"))}
    env.update(GRAPHSHARD_HOME=str(root / "home"), PYTHONPATH=str(REPO))
    metadata = args.graph / "metadata.json"
    if not metadata.exists():
        timed([PY, "-m", "graphshard.cli", "generate", "rmat", "--out", str(args.graph), "--nodes", str(args.nodes),
               "--edges", str(args.edges), "--chunks", str(args.chunks)], env, root / "generate.log")
    rounds: list[dict[str, dict]] = []
    try:
        once, server = cold_and_cached(root, metadata, args.parts, env)
        for i in range(args.rounds):  # the run and the library calls back to back, which goes first alternating
            rounds.append({**run_pair(root, metadata, args.parts, env, server, library_first=i % 2 == 1),
                           **step_commands(root, metadata, args.parts, env)})
            dgl = None if args.no_dgl else dgl_run(root, metadata, args.parts)
            if dgl:
                rounds[-1]["dgl"] = dgl
        once["server"] = {"wall": 0.0, "peak": measure.hwm(server.pid)}
    finally:
        subprocess.run([PY, "-m", "graphshard.cli", "server", "stop"], env=env, cwd=REPO, capture_output=True)
    report(rounds, once, args)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
