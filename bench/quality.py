"""Partition quality matrix: methods x graph families x k in one run. Per cell: edge cut (input edges), its ratio to
METIS's cut in the same run, imbalance per balance constraint, process wall time and the largest process peak RSS
(a multilevel run's largest is a Dask worker). Every (family, method, k) runs in its own process (measure.run).

    flock /tmp/graphshard-heavy.lock .venv/bin/python bench/quality.py --data /work/data/quality \\
        --families rmat-100k grid2d-250k --methods metis multilevel --parts 4 8 16 32 64 --out quality.jsonl

Graphs are generated once into --data (seeded, so a rerun finds the same graphs). Result lines are appended to --out
(JSON lines); cells already there are skipped, so an interrupted run resumes. Prints the Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from measure import machine, run  # bench/measure.py

# family -> (generator, its arguments, assignment options every method gets)
MAG_BALANCE = {"balance_ntypes": ["ntype", "paper/train_mask"]}  # a class per node type x paper train mask
FAMILIES = {
    "rmat-100k": ("rmat", {"nodes": 100_000, "edges": 2_000_000, "seed": 0}, {}),
    "rmat-300k-s2": ("rmat", {"nodes": 300_000, "edges": 6_000_000, "seed": 2}, {}),
    "rmat-1m": ("rmat", {"nodes": 1_000_000, "edges": 20_000_000, "seed": 0}, {}),
    "grid2d-250k": ("grid", {"nodes": 250_000, "dims": 2}, {}),
    "grid2d-1m": ("grid", {"nodes": 1_000_000, "dims": 2}, {}),
    "grid3d-1m": ("grid", {"nodes": 1_000_000, "dims": 3}, {}),
    "planted-500k": ("planted", {"nodes": 500_000, "edges": 5_000_000}, {}),
    "geometric-1m": ("geometric", {"nodes": 1_000_000}, {}),
    "chunglu-500k": ("chunglu", {"nodes": 500_000, "edges": 5_000_000}, {}),
    "mag-100k": ("mag", {"papers": 100_000}, MAG_BALANCE),
    "grid3d-216k": ("grid", {"nodes": 216_000, "dims": 3}, {}),
    "planted-200k": ("planted", {"nodes": 200_000, "edges": 2_000_000}, {}),
    "geometric-500k": ("geometric", {"nodes": 500_000}, {}),
    "chunglu-200k": ("chunglu", {"nodes": 200_000, "edges": 2_000_000}, {}),
    "mag-50k": ("mag", {"papers": 50_000}, MAG_BALANCE),
    # Barabasi-Albert (min degree 5, no communities) and dense graphs (100 edges per node, as GNN datasets like Reddit)
    "ba-300k": ("ba", {"nodes": 300_000, "edges": 1_500_000}, {}),
    "ba-3m": ("ba", {"nodes": 3_000_000, "edges": 15_000_000}, {}),
    "planted-230k-dense": ("planted", {"nodes": 230_000, "edges": 23_000_000, "communities": 50, "mixing": 0.3,
                                       "seed": 3}, {}),
    "chunglu-230k-dense": ("chunglu", {"nodes": 230_000, "edges": 23_000_000, "seed": 3}, {}),
    # bipartite user-item graphs: 80% of picks in a user's genres (strong), 40% (weak: little structure, as BA's)
    "useritem-1.6m": ("useritem", {"nodes": 1_600_000, "edges": 9_600_000, "mixing": 0.2}, {}),
    "useritem-weak-500k": ("useritem", {"nodes": 500_000, "edges": 3_000_000, "mixing": 0.6}, {}),
    "useritem-weak-1.6m": ("useritem", {"nodes": 1_600_000, "edges": 9_600_000, "mixing": 0.6}, {}),
    # small screening graphs (under 1M edges: they may run outside the heavy-work lock)
    "rmat-50k": ("rmat", {"nodes": 50_000, "edges": 800_000, "seed": 1}, {}),
    "grid2d-62k": ("grid", {"nodes": 62_500, "dims": 2}, {}),
    "grid3d-64k": ("grid", {"nodes": 64_000, "dims": 3}, {}),
    "planted-50k": ("planted", {"nodes": 50_000, "edges": 500_000}, {}),
    "geometric-100k": ("geometric", {"nodes": 100_000}, {}),
    "chunglu-50k": ("chunglu", {"nodes": 50_000, "edges": 500_000}, {}),
    "ba-30k": ("ba", {"nodes": 30_000, "edges": 150_000}, {}),
    "useritem-weak-50k": ("useritem", {"nodes": 50_000, "edges": 300_000, "mixing": 0.6}, {}),
    "mag-5k": ("mag", {"papers": 5_000}, MAG_BALANCE),
    # for the remote share (objtype fetch): more nodes per edge, so a mini-batch reaches less of the graph
    "rmat-200k-sparse": ("rmat", {"nodes": 200_000, "edges": 990_000, "seed": 3}, {}),
    "mag-15k": ("mag", {"papers": 15_000}, MAG_BALANCE),
    # the same edges with 10% of the nodes in `train_mask` (seeds a subset, as ogbn-products' 8%)
    "rmat-50k-t10": ("rmat", {"nodes": 50_000, "edges": 800_000, "seed": 1, "train_share": 0.1}, {}),
    "rmat-200k-sparse-t10": ("rmat", {"nodes": 200_000, "edges": 990_000, "seed": 3, "train_share": 0.1}, {}),
    "rmat-300k-s2-t10": ("rmat", {"nodes": 300_000, "edges": 6_000_000, "seed": 2, "train_share": 0.1}, {}),
}
# row name -> assignment options (method and its own options)
METHODS = {
    "random": {"method": "random"},
    "metis": {"method": "metis"},
    "kaminpar": {"method": "kaminpar"},
    "kaminpar-strong": {"method": "kaminpar", "kaminpar_preset": "strong"},
    "multilevel": {"method": "multilevel"},
    "parmetis": {"method": "parmetis"},
    "metis-fetch": {"method": "metis", "objtype": "fetch"},
    "kaminpar-strong-fetch": {"method": "kaminpar", "kaminpar_preset": "strong", "objtype": "fetch"},
    "multilevel-fetch": {"method": "multilevel", "objtype": "fetch"},
    # the fetch edge weights alone, without the post-pass on the expected share (assign/fetch_refine.py)
    "metis-fetch-weights": {"method": "metis", "objtype": "fetch", "fetch_refine_rounds": 0},
    "kaminpar-strong-fetch-weights": {"method": "kaminpar", "kaminpar_preset": "strong", "objtype": "fetch",
                                      "fetch_refine_rounds": 0},
}
# KaMinPar refuses balance constraints
UNCONSTRAINED_ONLY = {"kaminpar", "kaminpar-strong", "kaminpar-strong-fetch", "kaminpar-strong-fetch-weights"}


def graph_path(data: Path, family: str) -> Path:
    """The family's metadata.json, generated on first use."""
    from graphshard.generate import GENERATORS

    kind, kwargs, _ = FAMILIES[family]
    meta = data / family / "metadata.json"
    if not meta.exists():
        GENERATORS[kind](data / family, chunks=4, overwrite=True, **kwargs)
    return meta


def child(args: argparse.Namespace) -> None:
    """One cell in this process; prints one JSON line (multilevel on a local cluster of --workers, or in-process)."""
    from contextlib import nullcontext

    from distributed import Client, LocalCluster

    from graphshard.assign import REPORT_FILE, assign
    from graphshard.assign.options import AssignOptions

    opts = AssignOptions(seed=args.seed, **METHODS[args.one], **FAMILIES[args.family][2], **json.loads(args.extra))
    local = opts.method == "multilevel" and args.workers > 0
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0") if local \
        else nullcontext()
    with cluster as c, (Client(c) if c is not None else nullcontext()) as client, \
            tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        t0 = time.perf_counter()
        out = assign(graph_path(args.data, args.family), Path(tmp) / "a", args.k, opts, client=client)
        step = time.perf_counter() - t0
        report = json.loads((out / REPORT_FILE).read_text())
        if args.parts_out:
            save_parts(graph_path(args.data, args.family), out, args.k, Path(args.parts_out))
    print(json.dumps({"cut": report["edge_cut"]["count"], "edges": report["num_edges"],
                      "imbalance": report["imbalance"], "step_s": step,
                      "partitioner": {k: v for k, v in report["partitioner"].items()
                                      if k in ("seconds", "levels", "coarsest_cut")}}))


def save_parts(meta: Path, folder: Path, k: int, path: Path) -> None:
    """Every node's part (type-major homogeneous order) as one .npy, for the remote-share estimate."""
    import numpy as np

    from graphshard.formats.assignment import read_parts
    from graphshard.formats.chunked import load_metadata

    g = load_metadata(meta)
    np.save(path, np.concatenate([read_parts(folder, nt, g.num_nodes(nt), k) for nt in g.node_type]))


def share(args: argparse.Namespace) -> None:
    """The remote share of sampled mini-batch input nodes for saved parts (validate/remote_share.py's in-memory draw,
    within 0.03 of DGL's sampling: tests/dgl/test_remote_share_dgl.py); seeds, fanouts and batch size as `fetch`."""
    import numpy as np

    from graphshard.assign.fetch import seed_entry, seed_mask
    from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk
    from graphshard.assign.options import AssignOptions
    from graphshard.formats.chunked import load_metadata
    from graphshard.validate.remote_share import in_csr, remote_share

    g = load_metadata(graph_path(args.data, args.family))
    opts = AssignOptions(**FAMILIES[args.family][2], **json.loads(args.extra))
    pieces = [homogeneous_chunk(g, et, i) for et, i in edge_chunks(g)]
    src, dst = np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])
    del pieces
    indptr, sources = in_csr(src, dst, g.total_nodes)
    del src, dst
    seeds = seed_mask(g, seed_entry(opts), 0, g.total_nodes) > 0
    parts = np.load(args.share)
    est = remote_share(indptr, sources, parts, seeds, opts.sample_fanouts, seed=args.seed,
                       batch_size=opts.sample_batch_size)
    per_part = np.bincount(parts[seeds], minlength=args.k)  # the seeds' balance, constrained or not
    print(json.dumps({"remote_share": est["overall"], "seeds": int(seeds.sum()),
                      "seed_imbalance": float(per_part.max() * args.k / max(per_part.sum(), 1))}))


def cell(args: argparse.Namespace, family: str, method: str, k: int) -> dict:
    """Run one cell in a fresh process under `timeout`; its wall time and the largest peak RSS in its tree."""
    common = ["--family", family, "--k", str(k), "--data", str(args.data), "--seed", str(args.seed), "--tmp", args.tmp,
              "--workers", str(args.workers), "--extra", args.extra]
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        name = f"{family}-{method}-k{k}.npy" if args.keep_parts else "parts.npy"
        parts = str((args.keep_parts or Path(tmp)) / name)
        cmd = ["timeout", "--kill-after=10", str(args.timeout), sys.executable, __file__, "--one", method, *common]
        done = run(cmd + (["--parts-out", parts] if args.remote else []), stdout=-1, stderr=-1, text=True)
        row = {"family": family, "method": method, "k": k, "wall_s": round(done.wall, 2), "peak_rss_bytes": done.peak}
        if done.returncode == 124 or done.returncode == 137:
            return {**row, "error": f"did not finish in {args.timeout:.0f} s"}
        if done.returncode != 0:
            return {**row, "error": done.stderr.strip().splitlines()[-1][:200] if done.stderr.strip() else "failed"}
        row.update(json.loads(done.stdout.strip().splitlines()[-1]))
        if args.remote:  # untimed, in its own process (the cell's peak RSS stays the partitioner's)
            est = run([sys.executable, __file__, "--share", parts, *common], stdout=-1, stderr=-1, text=True)
            got = json.loads(est.stdout.strip().splitlines()[-1]) if est.returncode == 0 else {"remote_share": None}
            row.update(got)
    return row


def tables(rows: list[dict], parts: list[int]) -> str:
    """Cut matrix (cut share, ratio to the same run's METIS) per family, then wall / peak / worst imbalance."""
    got = {(r["family"], r["method"], r["k"]): r for r in rows}
    families = list(dict.fromkeys(r["family"] for r in rows))
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    head = "| family | method | " + " | ".join(f"k={k}" for k in parts) + " |"
    out = [head, "|---|---|" + "---|" * len(parts)]
    for fam in families:
        for m in methods:
            cells = []
            for k in parts:
                r, base = got.get((fam, m, k)), got.get((fam, "metis", k))
                if r is None or "error" in r:
                    cells.append("" if r is None else r["error"])
                    continue
                ratio = f" ({r['cut'] / base['cut']:.2f}x)" if base and "cut" in base and base["cut"] else ""
                cells.append(f"{r['cut'] / r['edges']:.1%}{ratio}")
            if any(cells):
                out.append(f"| {fam} | {m} | " + " | ".join(cells) + " |")
    out += remote_table(got, families, methods, parts)
    out += ["", "| family | method | k | wall (s) | peak RSS (GB) | worst imbalance (constraint) | seed imbalance |",
            "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            continue
        label, worst = max(r["imbalance"].items(), key=lambda kv: kv[1])
        out.append(f"| {r['family']} | {r['method']} | {r['k']} | {r['wall_s']:.1f} | {r['peak_rss_bytes'] / 1e9:.2f} "
                   f"| {worst:.3f} ({label}) | {r.get('seed_imbalance', float('nan')):.3f} |")
    return "\n".join(out)


def remote_table(got: dict, families: list[str], methods: list[str], parts: list[int]) -> list[str]:
    """Remote share of sampled mini-batch input nodes per cell (ratio to the same run's METIS), when estimated."""
    if not any(r.get("remote_share") is not None for r in got.values()):
        return []
    out = ["", "| family | method | " + " | ".join(f"remote k={k}" for k in parts) + " |",
           "|---|---|" + "---|" * len(parts)]
    for fam in families:
        for m in methods:
            cells = []
            for k in parts:
                r, base = got.get((fam, m, k)) or {}, got.get((fam, "metis", k)) or {}
                value, ref = r.get("remote_share"), base.get("remote_share")
                cells.append("" if value is None else f"{value:.3f}" + (f" ({value / ref:.2f}x)" if ref else ""))
            if any(cells):
                out.append(f"| {fam} | {m} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/quality"), help="generated graphs")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--methods", nargs="+", default=[m for m in METHODS if m != "parmetis" and "fetch" not in m],
                        choices=list(METHODS))
    parser.add_argument("--parts", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="multilevel: local Dask workers (0: in-process)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per cell")
    parser.add_argument("--extra", default="{}", help="JSON of extra AssignOptions for every cell (e.g. levers)")
    parser.add_argument("--tmp", default="/tmp", help="folder for the assignment outputs (and multilevel scratch)")
    parser.add_argument("--out", type=Path, default=None, help="JSON lines of the results (appended; resumes)")
    parser.add_argument("--remote", action="store_true",
                        help="also estimate the remote share of sampled mini-batch input nodes (fanouts and batch "
                             "size from --extra's sample_fanouts / sample_batch_size, default 10,25 and 1000)")
    parser.add_argument("--keep-parts", type=Path, default=None,
                        help="with --remote: keep each cell's parts as <family>-<method>-k<k>.npy in this folder "
                             "(for bench/dgl_share.py)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--share", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--parts-out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--family", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--k", type=int, default=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        child(args)
        return
    if args.share:
        share(args)
        return
    Path(args.tmp).mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out and args.out.exists() else []
    done = {(r["family"], r["method"], r["k"]) for r in rows}
    print(json.dumps({"machine": machine(), "extra": args.extra}), file=sys.stderr)
    for family in args.families:
        graph_path(args.data, family)
        constrained = bool(FAMILIES[family][2]) or "balance_ntypes" in json.loads(args.extra)
        for k in args.parts:
            for method in args.methods:
                if (family, method, k) in done or (constrained and method in UNCONSTRAINED_ONLY):
                    continue
                rows.append(cell(args, family, method, k))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                if args.out:
                    with args.out.open("a") as fh:
                        fh.write(json.dumps(rows[-1]) + "\n")
    print(tables([r for r in rows if r["family"] in args.families], args.parts))


if __name__ == "__main__":
    main()
