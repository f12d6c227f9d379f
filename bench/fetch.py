"""`graphshard fetch` from a local S3 server (moto, its own process) with 1 and several parallel transfers, against
the floor: the same files copied by s3fs alone (`fs.get`, its own parallel downloads) in the same run; and the same
fetch again with `--overwrite` over the folder it wrote (a training host's start-up script run twice: the files
already there are checked and kept).

A partition set is written by `graphshard dispatch` of a generated R-MAT graph, uploaded through the storage layer,
then fetched `--rounds` times per variant (fresh process each: `graphshard fetch`); figures are process wall times.

    flock /tmp/graphshard-heavy.lock python bench/fetch.py --nodes 500000 --edges 8000000 --parts 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from s3_helpers import DUMMY_KEY, DUMMY_SECRET, REGION, _wait_up, free_port  # noqa: E402


def make_set(work: Path, nodes: int, edges: int, parts: int) -> Path:
    """Generate, assign at random and dispatch (orig-ID files too); the partition config's path."""
    gs = [sys.executable, "-m", "graphshard.cli"]
    subprocess.run([*gs, "generate", "rmat", "--out", str(work / "graph"), "--nodes", str(nodes), "--edges",
                    str(edges), "--chunks", "4"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*gs, "assign", "--in", str(work / "graph" / "metadata.json"), "--out", str(work / "asg"),
                    "--num-parts", str(parts), "--method", "random"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*gs, "dispatch", "--in", str(work / "graph" / "metadata.json"), "--partitions",
                    str(work / "asg"), "--out", str(work / "set"), "--save-orig-nids", "--save-orig-eids"],
                   check=True, stdout=subprocess.DEVNULL)
    from graphshard.validate.layout import find_config

    return find_config(work / "set")


def timed(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=500_000)
    ap.add_argument("--edges", type=int, default=8_000_000)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="graphshard-bench-fetch-"))
    port = free_port()
    env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": DUMMY_KEY,
           "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET, "AWS_DEFAULT_REGION": REGION}
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_up(env["AWS_ENDPOINT_URL"])
        os.environ.update(env)
        config = make_set(work, args.nodes, args.edges, args.parts)
        from graphshard.storage import Storage, location

        storage, url = Storage(), "s3://bench/set"
        storage.fs(location(url)).mkdir("bench")
        total = sum(storage.upload(p, location(url).join(p.relative_to(config.parent).as_posix()))
                    for p in sorted(config.parent.rglob("*")) if p.is_file())
        floor = ("import s3fs, sys; s3fs.S3FileSystem().get(sys.argv[1], sys.argv[2], recursive=True)")
        variants = {"s3fs get (floor)": [sys.executable, "-c", floor, "bench/set/", str(work / "out") + "/"],
                    **{f"graphshard fetch --transfers {t}": [sys.executable, "-m", "graphshard.cli", "fetch",
                                                             f"{url}/{config.name}", "--out", str(work / "out"),
                                                             "--transfers", str(t)] for t in (1, 4)}}
        again = "graphshard fetch --overwrite, the set already there"
        variants[again] = [*variants["graphshard fetch --transfers 4"], "--overwrite"]  # runs right after that one
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for name, cmd in variants.items():
                if name != again:
                    shutil.rmtree(work / "out", ignore_errors=True)
                times[name].append(timed(cmd, env))
        floor_median = statistics.median(times["s3fs get (floor)"])
        print(f"set: {total / 1e6:.1f} MB, {args.parts} parts, R-MAT {args.nodes:,} nodes / {args.edges:,} edges")
        print("| variant | median s (rounds) | MB/s | / floor |\n|---|---|---|---|")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"| {name} | {med:.2f} ({', '.join(f'{t:.2f}' for t in ts)}) | {total / 1e6 / med:.0f} | "
                  f"{med / floor_median:.2f} |")
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
