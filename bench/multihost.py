"""`graphshard run` on the multi-host rig (tests/multihost_rig.py: three worker hosts sharing no filesystem, moto on
an S3 host) against the single-host run with the same s3:// locations on the same S3 server, in the same run: R-MAT,
`random` and `multilevel`, validation on. Both clusters are one Dask scheduler and three `dask worker` processes
(1 thread, 2 GiB, nanny), restarted before every run; the single host's run in the root namespace, each worker with
its own local directory.

Per run: process wall time of `graphshard run`; per worker its peak RSS (VmHWM, read at the end), the largest size
of its local directory (polled every 0.5 s; on the rig read through /proc/<pid>/root, the host's private /tmp), the
bytes it sent to other workers (Dask's `transfer_outgoing_bytes_total`); bytes through the store: the S3 host's link
counters (bytes up and down, HTTP and TCP included). Needs root (`ip netns`).

    flock /tmp/graphshard-heavy.lock .venv/bin/python bench/multihost.py --nodes 50000 --edges 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from measure import hwm, machine  # bench/measure.py

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from multihost_rig import VENV_BIN, Rig  # noqa: E402
from s3_helpers import free_port  # noqa: E402

GS = [sys.executable, "-m", "graphshard.cli"]


def _worker_facts(dask_worker) -> dict:
    return {"pid": os.getpid(), "dir": dask_worker.local_directory, "sent": dask_worker.transfer_outgoing_bytes_total,
            "transfers_in": dask_worker.state.transfer_incoming_count_total}


def _tree_bytes(folder: str) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


class DiskPoll:
    """The largest size seen of each worker's local directory (through /proc/<pid>/root: the worker's own view), and
    its peak RSS so far (kept should the nanny replace the process: a worker over its memory limit)."""

    def __init__(self, facts: dict[str, dict], period: float = 0.5):
        self.paths = {w: f"/proc/{f['pid']}/root{f['dir']}" for w, f in facts.items()}
        self.pids = {w: f["pid"] for w, f in facts.items()}
        self.peak = {w: 0 for w in facts}
        self.rss = {w: 0 for w in facts}
        self.period, self._stop = period, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for w, path in self.paths.items():
                self.peak[w] = max(self.peak[w], _tree_bytes(path))
                self.rss[w] = max(self.rss[w], hwm(self.pids[w]))
            self._stop.wait(self.period)

    def __enter__(self) -> DiskPoll:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def link_bytes(veth: str) -> tuple[int, int]:
    """(to the host, from the host) on the root side of its veth: tx there is what the host received."""
    stats = Path("/sys/class/net") / veth / "statistics"
    return int((stats / "tx_bytes").read_text()), int((stats / "rx_bytes").read_text())


def config(folder: Path, url: str, prefix: str, method: str, address: str, parts: int) -> Path:
    data = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    data.update({"input": {"metadata": url}, "output": {"dir": f"{prefix}/out"}, "work_dir": f"{prefix}/work",
                 "num_parts": parts, "assign": {"method": method, "seed": 0}, "cluster": {"address": address}})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.yaml").write_text(yaml.safe_dump(data))
    return folder / "run.yaml"


def measured_run(cfg: Path, address: str, env: dict, s3_veth: str) -> dict:
    """`graphshard run` against a freshly restarted cluster: wall, and per worker peak RSS, local disk, sent bytes."""
    from distributed import Client

    with Client(address, timeout=120) as client:
        client.restart(wait_for_workers=True)
        facts = client.run(_worker_facts)
        up0, down0 = link_bytes(s3_veth)
        with DiskPoll(facts) as disk:
            start = time.perf_counter()
            done = subprocess.run([*GS, "run", str(cfg)], env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
        up1, down1 = link_bytes(s3_veth)
        if done.returncode != 0:
            raise SystemExit(f"graphshard run {cfg} failed:\n{(done.stdout + done.stderr)[-4000:]}")
        after = client.run(_worker_facts)
        workers = {f"w{i + 1}": {"peak_rss_mib": round(max(disk.rss[addr], hwm(f["pid"])) / 2**20),
                                 "local_disk_mib": round(disk.peak[addr] / 2**20, 2),
                                 "sent_mib": round(after[addr]["sent"] / 2**20, 2) if addr in after else None,
                                 "replaced": addr not in after}
                   for i, (addr, f) in enumerate(sorted(facts.items()))}
    return {"wall_s": round(wall, 1), "store_up_mib": round((up1 - up0) / 2**20, 1),
            "store_down_mib": round((down1 - down0) / 2**20, 1), "workers": workers,
            "between_workers_mib": round(sum(w["sent_mib"] or 0 for w in workers.values()), 2),
            "workers_replaced": len(set(after) - set(facts))}


class SingleHost:
    """A scheduler and `n` workers in the root namespace (the flow's host), as the rig's but sharing this host."""

    def __init__(self, root: Path, env: dict, n: int = 3):
        self.root, self.env, self.n, self.procs = root, env, n, []
        self.address = f"tcp://127.0.0.1:{free_port()}"

    def __enter__(self) -> SingleHost:
        logs = open(self.root / "single-host.log", "ab")
        port = self.address.rsplit(":", 1)[1]
        self.procs.append(subprocess.Popen([str(VENV_BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                                            port, "--dashboard-address", ":0"], env=self.env, stdout=logs,
                                           stderr=subprocess.STDOUT))
        for i in range(self.n):
            self.procs.append(subprocess.Popen(
                [str(VENV_BIN / "dask"), "worker", self.address, "--host", "127.0.0.1", "--name", f"single{i + 1}",
                 "--nthreads", "1", "--memory-limit", "2GiB", "--local-directory", str(self.root / f"w{i + 1}"),
                 "--no-dashboard"], env=self.env, stdout=logs, stderr=subprocess.STDOUT))
        from distributed import Client

        with Client(self.address, timeout=120) as client:
            client.wait_for_workers(self.n, timeout=120)
        return self

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def table(results: list[dict]) -> None:
    print("\n| method | run | process s | x single | worker peak RSS MiB | worker local disk MiB (peak) | "
          "store up / down MiB | between workers MiB | workers replaced |\n|---|---|---|---|---|---|---|---|---|")
    base = {r["method"]: r["wall_s"] for r in results if r["cluster"] == "single-host"}
    for r in results:
        w = r["workers"].values()
        print(f"| {r['method']} | {r['cluster']} | {r['wall_s']} | {r['wall_s'] / base[r['method']]:.2f} | "
              f"{' / '.join(str(x['peak_rss_mib']) for x in w)} | {' / '.join(str(x['local_disk_mib']) for x in w)} "
              f"| {r['store_up_mib']} / {r['store_down_mib']} | {r['between_workers_mib']} | {r['workers_replaced']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--methods", default="random,multilevel")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="graphshard-bench-multihost-"))
    try:
        run_all(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(args: argparse.Namespace, work: Path) -> None:
    """Generate the graph, build the rig, upload the graph to its S3 host, then each method on both clusters."""
    from graphshard.storage import Storage, location

    subprocess.run([*GS, "generate", "rmat", "--out", str(work / "graph"), "--nodes", str(args.nodes), "--edges",
                    str(args.edges), "--chunks", str(args.chunks)], check=True, stdout=subprocess.DEVNULL)
    load = os.getloadavg()
    results = []
    with Rig(work / "rig") as rig:
        env = {**rig.env(), "GRAPHSHARD_LOG_DIR": str(work / "logs")}
        env.pop("DASK_DISTRIBUTED__DASHBOARD__LINK", None)
        storage = Storage({"s3://": rig.s3.options()})
        bucket = rig.s3.new_bucket()
        graph = location(f"{bucket}/graph")
        for p in sorted((work / "graph").rglob("*")):
            if p.is_file():
                storage.upload(p, graph.join(p.relative_to(work / "graph").as_posix()))
        url = f"{graph.url}/metadata.json"
        (work / "single").mkdir()
        with SingleHost(work / "single", env) as single:
            for method in args.methods.split(","):
                for name, address in (("single-host", single.address), ("rig", rig.scheduler_address)):
                    cfg = config(work / f"{name}-{method}", url, f"{bucket}/{name}-{method}", method, address,
                                 args.parts)
                    res = measured_run(cfg, address, env, rig.hosts["s3"].veth)
                    results.append({"method": method, "cluster": name, **res})
                    print(json.dumps(results[-1]), flush=True)
    summary = {**machine(), "bench": "multihost", "nodes": args.nodes, "edges": args.edges, "parts": args.parts,
               "load_before": [round(x, 2) for x in load], "load_after": [round(x, 2) for x in os.getloadavg()],
               "results": results}
    print(json.dumps(summary))
    table(results)


if __name__ == "__main__":
    main()
