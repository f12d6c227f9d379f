"""`graphshard generate rmat|mag|grid`: write a seeded synthetic chunked graph, chunk by chunk."""

from __future__ import annotations

import argparse

from graphshard.errors import GraphshardError
from graphshard.formats.chunked_writer import WRITE_FORMATS
from graphshard.generate import generate_grid, generate_mag, generate_rmat

NAME = "generate"
HELP = ("Write a synthetic chunked graph: rmat (homogeneous power-law), grid (2-D/3-D mesh, scattered IDs) or mag "
        "(heterogeneous, MAG-like).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=["rmat", "mag", "grid"],
                        help="rmat: R-MAT (a=.57, b=c=.19, d=.05); mag: MAG-like; grid: a mesh with scattered IDs")
    parser.add_argument("--out", required=True, help="output folder (metadata.json and chunk files)")
    parser.add_argument("--nodes", type=int, default=None,
                        help="rmat, grid: node count (default 16384; grid: rounded to a power of --dims); "
                             "mag: paper count, other types scale with it "
                             "(default 1000)")
    parser.add_argument("--edges", type=int, default=None,
                        help="rmat: edge count (default 262144); mag: forward edges over the 4 relations, reverse "
                             "types double it (default 28.7 per paper)")
    parser.add_argument("--dims", type=int, default=2, choices=[2, 3], help="grid: 2-D or 3-D mesh (default 2)")
    parser.add_argument("--chunks", type=int, default=None, help="chunks per type (default rmat 4, mag 2)")
    parser.add_argument("--format", default="numpy", choices=WRITE_FORMATS,
                        help="chunk file format; mixed uses csv, numpy and parquet for different files")
    parser.add_argument("--feat-dim", type=int, default=16, help="width of the float32 node feature 'feat'")
    parser.add_argument("--seed", type=int, default=0, help="random seed: same seed, byte-identical output")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def run(args: argparse.Namespace) -> int:
    common = {"fmt": args.format, "seed": args.seed, "overwrite": args.overwrite, "feat_dim": args.feat_dim}
    sizes = {k: v for k, v in (("edges", args.edges), ("chunks", args.chunks)) if v is not None}
    if args.kind == "rmat":
        path = generate_rmat(args.out, **({"nodes": args.nodes} if args.nodes is not None else {}), **sizes, **common)
    elif args.kind == "grid":
        if args.edges is not None:
            raise GraphshardError("--edges: a grid's edges follow from --nodes and --dims; drop --edges")
        path = generate_grid(args.out, **({"nodes": args.nodes} if args.nodes is not None else {}), dims=args.dims,
                             **({"chunks": args.chunks} if args.chunks is not None else {}), **common)
    else:
        path = generate_mag(args.out, **({"papers": args.nodes} if args.nodes is not None else {}), **sizes, **common)
    print(path)
    return 0
