"""Benchmark `graphshard generate rmat`: wall time and peak RSS (bench/measure.py) against a write floor.

The floor, measured in the same run, is a process that only writes the same number of bytes as .npy chunk files
(zeros, same chunk sizes): the ratio says what generating the values costs beyond the I/O.

    flock /tmp/graphshard-heavy.lock /work/venv/bin/python bench/generate.py --edges 100000000 --nodes 5000000 \
        --chunks 8 --out /work/data/bench-rmat100m
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import textwrap
from datetime import date
from pathlib import Path

import measure  # bench/measure.py

GRAPHSHARD = str(Path(sys.executable).with_name("graphshard"))

FLOOR = textwrap.dedent("""
    import sys, numpy as np, os
    out, sizes = sys.argv[1], [int(x) for x in sys.argv[2:]]
    os.makedirs(out, exist_ok=True)
    for i, n in enumerate(sizes):
        np.save(f"{out}/chunk-{i}.npy", np.zeros(n, dtype=np.uint8))
""")
FINGERPRINT = "import sys; from graphshard.ingest import fingerprint; fingerprint(sys.argv[1])"


def timed(cmd: list[str]) -> dict:
    """Run a command; wall seconds and the largest peak RSS in its process tree, in MiB."""
    run = measure.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return {"wall_s": run.wall, "peak_rss_mib": run.peak / 2**20}


def folder_file_sizes(folder: Path) -> list[int]:
    return sorted((p.stat().st_size for p in folder.rglob("*") if p.is_file()), reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", type=int, default=100_000_000)
    ap.add_argument("--nodes", type=int, default=5_000_000)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--format", default="numpy")
    ap.add_argument("--out", type=Path, default=Path("/work/data/bench-rmat100m"))
    ap.add_argument("--keep", action="store_true", help="keep the generated graph (default: delete it)")
    ap.add_argument("--check", action="store_true",
                    help="also time `inspect --check` in one process and on 2 Dask workers, and fingerprint()")
    args = ap.parse_args()

    cmd = [GRAPHSHARD, "generate", "rmat", "--out", str(args.out), "--nodes", str(args.nodes), "--edges",
           str(args.edges), "--chunks", str(args.chunks), "--format", args.format, "--overwrite"]
    gen = timed(cmd)
    sizes = folder_file_sizes(args.out)
    floor_dir = args.out.with_name(args.out.name + "-floor")
    floor = timed([sys.executable, "-c", FLOOR, str(floor_dir), *map(str, sizes)])
    shutil.rmtree(floor_dir)
    meta = str(args.out / "metadata.json")
    checks = {
        "inspect --check, in one process": timed([GRAPHSHARD, "inspect", meta, "--check"]),
        "inspect --check --workers 2 (Dask LocalCluster)": timed([GRAPHSHARD, "inspect", meta, "--check",
                                                                 "--workers", "2"]),
        "fingerprint (blake2b of every file)": timed([sys.executable, "-c", FINGERPRINT, meta]),
    } if args.check else {}
    if not args.keep:
        shutil.rmtree(args.out)
    total = sum(sizes)
    print(f"date: {date.today()}  machine: 2 cores, 24 GiB")
    print(f"command: {' '.join(cmd[1:])}")
    print("| run | wall | peak RSS |\n|---|---|---|")
    print(f"| generate rmat: {args.edges:,} edges, {args.nodes:,} nodes, {args.chunks} chunks, {args.format}, "
          f"{total / 2**30:.2f} GiB in {len(sizes)} files | {gen['wall_s']:.1f} s | {gen['peak_rss_mib']:.0f} MiB |")
    print(f"| floor: write the same {len(sizes)} files as zeros (np.save) | {floor['wall_s']:.1f} s | "
          f"{floor['peak_rss_mib']:.0f} MiB |")
    for name, t in checks.items():
        print(f"| {name} | {t['wall_s']:.1f} s | {t['peak_rss_mib']:.0f} MiB |")
    print(f"ratio generate / floor: {gen['wall_s'] / floor['wall_s']:.1f}x wall; "
          f"{args.edges / gen['wall_s'] / 1e6:.2f} M edges/s")


if __name__ == "__main__":
    main()
