"""`graphshard run` on the multi-host rig (tests/multihost_rig.py: three worker hosts sharing no filesystem, moto on
an S3 host) against the single-host run with the same s3:// locations on the same S3 server, in the same run: R-MAT,
`random` and `multilevel`, validation on. Both clusters are one Dask scheduler and three `dask worker` processes
(1 thread, 2 GiB, nanny), restarted before every run; the single host's run in the root namespace, each worker with
its own local directory.

Per run: process wall time of `graphshard run`; per worker its peak RSS (VmHWM, read at the end), the largest size
of its local directory (polled every 0.5 s; on the rig read through /proc/<pid>/root, the host's private /tmp), the
bytes it sent to other workers (Dask's `transfer_outgoing_bytes_total`); bytes through the store: the S3 host's link
counters (bytes up and down, HTTP and TCP included); the 1-minute load average at its start and end. After both
clusters ran a method, the rig's published set is compared with the single host's byte for byte (sha256 of every
file, named as `graphshard fetch` names it). Each run has its own bucket, deleted after the comparison; the two
clusters take turns at running first. Each worker's peaks are named after the task round running when they were
first reached (the run log's `daskrun` lines). The rig's store gets a longer read timeout (`STORE_OPTIONS`).
Needs root (`ip netns`).

    flock /tmp/graphshard-heavy.lock .venv/bin/python bench/multihost.py --nodes 1000000 --edges 20000000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import yaml
from measure import hwm, machine  # bench/measure.py

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from multihost_rig import VENV_BIN, Rig  # noqa: E402
from s3_helpers import free_port  # noqa: E402

GS = [sys.executable, "-m", "graphshard.cli"]
REPORT = ("report.json", "report.html")


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
    its peak RSS so far (kept should the nanny replace the process: a worker over its memory limit), each with the
    time it was first reached (which task round it fell in: `round_at`)."""

    def __init__(self, facts: dict[str, dict], period: float = 0.5):
        self.paths = {w: f"/proc/{f['pid']}/root{f['dir']}" for w, f in facts.items()}
        self.pids = {w: f["pid"] for w, f in facts.items()}
        self.peak = {w: (0, 0.0) for w in facts}  # (bytes, time.time() when first seen)
        self.rss = {w: (0, 0.0) for w in facts}
        self.period, self._stop = period, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for w, path in self.paths.items():
                now = time.time()
                self.peak[w] = max(self.peak[w], (_tree_bytes(path), -now))
                self.rss[w] = max(self.rss[w], (hwm(self.pids[w]), -now))
            self._stop.wait(self.period)

    def __enter__(self) -> DiskPoll:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


ROUND = re.compile(r"^(\S+ \S+) INFO graphshard\.daskrun: (.+): \d+ tasks in ([\d.]+) s$")


def task_rounds(log_dir: Path, since: float) -> list[tuple[float, float, str]]:
    """(start, end, name) of every Dask task round the newest run log since `since` records (its `daskrun` lines:
    "<step> <round>: N tasks in X s", stamped at the round's end)."""
    logs = [p for p in log_dir.glob("*.log") if p.stat().st_mtime >= since]
    rounds = []
    for line in max(logs, key=lambda p: p.stat().st_mtime).read_text(errors="replace").splitlines() if logs else []:
        if m := ROUND.match(line):
            end = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            rounds.append((end - float(m[3]), end, m[2]))
    return rounds


def round_at(rounds: list[tuple[float, float, str]], when: float) -> str:
    """The task round running at `when` (the nearest one, 0.5 s either side: the poll's period), else "-"."""
    near = [(max(start - when, when - end, 0), name) for start, end, name in rounds]
    best = min(near, default=(1.0, "-"))
    return best[1] if best[0] <= 0.5 else "-"


def link_bytes(veth: str) -> tuple[int, int]:
    """(to the host, from the host) on the root side of its veth: tx there is what the host received."""
    stats = Path("/sys/class/net") / veth / "statistics"
    return int((stats / "tx_bytes").read_text()), int((stats / "rx_bytes").read_text())


# moto joins a multipart upload's parts inside the CompleteMultipartUpload request: publish's copy of a 400 MB part
# file took 22 s at 20M edges, past s3fs's 15 s read timeout; the retried request raced the running one and moto
# answered it 500 (BENCHMARKS.md, "The size on the rig"). A longer read timeout on the rig's store only.
STORE_OPTIONS = {"s3://": {"config_kwargs": {"read_timeout": 600}}}


def config(folder: Path, url: str, prefix: str, method: str, address: str, parts: int) -> Path:
    """The run's config: configs/example.yaml with every location under `prefix` on the rig's S3 host."""
    data = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    data.update({"input": {"metadata": url}, "output": {"dir": f"{prefix}/out"}, "work_dir": f"{prefix}/work",
                 "num_parts": parts, "assign": {"method": method, "seed": 0}, "cluster": {"address": address},
                 "storage_options": STORE_OPTIONS})
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
        load0, since = os.getloadavg()[0], time.time()
        with DiskPoll(facts) as disk:
            start = time.perf_counter()
            done = subprocess.run([*GS, "run", str(cfg)], env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
        up1, down1 = link_bytes(s3_veth)
        if done.returncode != 0:
            raise SystemExit(f"graphshard run {cfg} failed:\n{(done.stdout + done.stderr)[-4000:]}")
        after = client.run(_worker_facts)
    rounds = task_rounds(Path(env["GRAPHSHARD_LOG_DIR"]), since)
    workers = {f"w{i + 1}": _worker_result(disk, addr, f["pid"], after.get(addr), rounds)
               for i, (addr, f) in enumerate(sorted(facts.items()))}
    return {"wall_s": round(wall, 1), "load_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
            "store_up_mib": round((up1 - up0) / 2**20, 1),
            "store_down_mib": round((down1 - down0) / 2**20, 1), "workers": workers,
            "between_workers_mib": round(sum(w["sent_mib"] or 0 for w in workers.values()), 2),
            "workers_replaced": len(set(after) - set(facts))}


def _worker_result(disk: DiskPoll, addr: str, pid: int, after: dict | None, rounds: list) -> dict:
    """One worker's peak RSS and local disk, the task rounds they were reached in, the bytes it sent (None: replaced
    by its nanny)."""
    rss, rss_at = disk.rss[addr]
    final = hwm(pid)
    return {"peak_rss_mib": round(max(rss, final) / 2**20),
            "peak_rss_in": round_at(rounds, -rss_at) if rss >= final else "end",
            "local_disk_mib": round(disk.peak[addr][0] / 2**20, 2),
            "local_disk_in": round_at(rounds, -disk.peak[addr][1]),
            "sent_mib": round(after["sent"] / 2**20, 2) if after else None, "replaced": after is None}


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
                                           stderr=subprocess.STDOUT, start_new_session=True))
        for i in range(self.n):
            self.procs.append(subprocess.Popen(
                [str(VENV_BIN / "dask"), "worker", self.address, "--host", "127.0.0.1", "--name", f"single{i + 1}",
                 "--nthreads", "1", "--memory-limit", "2GiB", "--local-directory", str(self.root / f"w{i + 1}"),
                 "--no-dashboard"], env=self.env, stdout=logs, stderr=subprocess.STDOUT, start_new_session=True))
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
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: the nanny's worker process too


def published_digests(storage, prefix: str) -> dict[str, str]:
    """sha256 of every file of the set published under `prefix`/out, as `graphshard fetch` gives it back: names and
    the partition config without the run prefix `.runs/<run id>/` (the id digests the run's step artifacts), the
    run's report (timings) left out. Objects are read in blocks (parts are large)."""
    import hashlib

    from graphshard.runprefix import RUNS, split_prefix

    digests = {}
    for entry in storage.listing(f"{prefix}/out"):
        parts = entry.rel.split("/")
        name = "/".join(parts[2:]) if parts[0] == RUNS else entry.rel
        if parts[-1] in REPORT:
            continue
        digest = hashlib.sha256()
        if parts[0] != RUNS and name.endswith(".json"):
            digest.update(split_prefix(storage.read_bytes(f"{prefix}/out/{entry.rel}").decode())[1].encode())
        else:
            with storage.open_read(f"{prefix}/out/{entry.rel}") as f:
                for block in iter(lambda: f.read(1 << 24), b""):
                    digest.update(block)
        digests[name] = digest.hexdigest()
    return digests


def compare_published(storage, single: str, rig: str) -> dict:
    """The rig's published set against the single host's, byte for byte (by sha256 of every file)."""
    a, b = published_digests(storage, single), published_digests(storage, rig)
    differ = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
    return {"files": len(a), "identical": not differ and bool(a), "differ": differ[:20]}


def table(results: list[dict]) -> None:
    """The runs as a Markdown table (time as a ratio to the same method's single-host run; the task round in which
    the largest worker peak was reached), then per method whether the rig's published set equals the single host's."""
    print("\n| method | run | process s | x single | load 1 min (start, end) | worker peak RSS MiB (largest in) | "
          "worker local disk MiB (largest in) | store up / down MiB | between workers MiB | workers replaced |\n"
          + "|---" * 10 + "|")
    base = {r["method"]: r["wall_s"] for r in results if r["cluster"] == "single-host"}
    for r in results:
        w = r["workers"].values()
        rss, disk = (max(w, key=lambda x: x[key]) for key in ("peak_rss_mib", "local_disk_mib"))
        print(f"| {r['method']} | {r['cluster']} | {r['wall_s']} | {r['wall_s'] / base[r['method']]:.2f} | "
              f"{r['load_1m'][0]}, {r['load_1m'][1]} | {' / '.join(str(x['peak_rss_mib']) for x in w)} "
              f"({rss['peak_rss_in']}) | {' / '.join(str(x['local_disk_mib']) for x in w)} ({disk['local_disk_in']}) "
              f"| {r['store_up_mib']} / {r['store_down_mib']} | {r['between_workers_mib']} | "
              f"{r['workers_replaced']} |")
    for r in results:
        if r["cluster"] == "rig" and "published_equals_single_host" in r:
            print(f"{r['method']}: the rig's published set equals the single host's byte for byte: "
                  f"{r['published_equals_single_host']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--methods", default="random,multilevel")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a TERMed bench still takes its clusters down
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
            for i, method in enumerate(args.methods.split(",")):
                clusters = [("single-host", single.address), ("rig", rig.scheduler_address)]
                prefixes = {}
                for name, address in clusters[::-1] if i % 2 else clusters:  # each cluster first in turn
                    prefixes[name] = f"{rig.s3.new_bucket()}/{method}"  # its own bucket: moto lists by scanning one
                    cfg = config(work / f"{name}-{method}", url, prefixes[name], method, address, args.parts)
                    res = measured_run(cfg, address, env, rig.hosts["s3"].veth)
                    results.append({"method": method, "cluster": name, **res})
                    print(json.dumps(results[-1]), flush=True)
                same = compare_published(storage, prefixes["single-host"], prefixes["rig"])
                for r in results[-2:]:
                    r["published_equals_single_host"] = same
                print(json.dumps({"method": method, "published_equals_single_host": same}), flush=True)
                for prefix in prefixes.values():  # moto keeps every object: free the S3 host before the next
                    storage.delete_prefix(prefix)
    summary = {**machine(), "bench": "multihost", "nodes": args.nodes, "edges": args.edges, "parts": args.parts,
               "load_before": [round(x, 2) for x in load], "load_after": [round(x, 2) for x in os.getloadavg()],
               "results": results}
    print(json.dumps(summary))
    table(results)


if __name__ == "__main__":
    main()
