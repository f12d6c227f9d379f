"""`graphshard generate rmat|mag|grid|planted|geometric|chunglu|ba|useritem`: write a seeded synthetic chunked graph,
chunk by chunk."""

from __future__ import annotations

import argparse

from graphshard.errors import GraphshardError
from graphshard.formats.chunked_writer import WRITE_FORMATS
from graphshard.generate import GENERATORS
from graphshard.generate.planted import MIXING
from graphshard.generate.rmat import TRAIN_FRACTION
from graphshard.generate.useritem import GENRES_PER_USER

NAME = "generate"
HELP = ("Write a synthetic chunked graph: rmat (power-law), grid (2-D/3-D mesh), planted (communities), geometric "
        "(road-like), chunglu and ba (power-law without communities), useritem (bipartite, genres), all with scattered "
        "IDs, or mag (heterogeneous).")
# The options only some kinds take (every other kind refuses them, rather than ignore them), and the reason.
ONLY = {
    "edges": (("rmat", "mag", "planted", "geometric", "chunglu", "ba", "useritem"),
              "a grid's edges follow from --nodes and --dims"),
    "dims": (("grid",), "the other kinds are not meshes"),
    "communities": (("planted", "useritem"), "the other kinds have no planted groups"),
    "mixing": (("planted", "useritem"), "the other kinds have no planted groups"),
    "train_share": (("rmat",), "the other kinds mark a fixed share"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=list(GENERATORS),
                        help="rmat: R-MAT (a=.57, b=c=.19, d=.05); mag: MAG-like; grid: a mesh; planted: planted "
                             "communities; geometric: random geometric graph in the unit square; chunglu: Chung-Lu "
                             "power law (exponent 2.5); ba: Barabasi-Albert preferential attachment; useritem: "
                             "users' picks of items (a quarter of the nodes), in genres")
    parser.add_argument("--out", required=True, help="output folder (metadata.json and chunk files)")
    parser.add_argument("--nodes", type=int, default=None,
                        help="node count (default 16384; grid: rounded to a power of --dims); mag: paper count, "
                             "other types scale with it (default 1000)")
    parser.add_argument("--edges", type=int, default=None,
                        help="edge count (default 262144; geometric: 3 per node, the radius follows); mag: forward "
                             "edges over the 4 relations, reverse types double it (default 28.7 per paper); ba: "
                             "edges / nodes edges per node, rounded")
    parser.add_argument("--dims", type=int, default=None, choices=[2, 3], help="grid: 2-D or 3-D mesh (default 2)")
    parser.add_argument("--communities", type=int, default=None,
                        help="planted: community count (default nodes/1000); useritem: genre count (default "
                             "nodes/5000)")
    parser.add_argument("--mixing", type=float, default=None,
                        help=f"planted: share of edges between communities; useritem: share of picks outside "
                             f"the user's {GENRES_PER_USER} genres (default {MIXING})")
    parser.add_argument("--chunks", type=int, default=None, help="chunks per type (default 4; mag 2)")
    parser.add_argument("--format", default="numpy", choices=WRITE_FORMATS,
                        help="chunk file format; mixed uses csv, numpy and parquet for different files")
    parser.add_argument("--feat-dim", type=int, default=16, help="width of the float32 node feature 'feat'")
    parser.add_argument("--seed", type=int, default=0, help="random seed: same seed, byte-identical output")
    parser.add_argument("--train-share", type=float, default=None,
                        help=f"rmat: share of nodes marked in 'train_mask' (default {TRAIN_FRACTION}); a smaller "
                             "share marks a subset of a larger one's nodes (same seed)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def run(args: argparse.Namespace) -> int:
    kwargs = {"fmt": args.format, "seed": args.seed, "overwrite": args.overwrite, "feat_dim": args.feat_dim}
    given = {"chunks": args.chunks, "nodes" if args.kind != "mag" else "papers": args.nodes}
    kwargs.update({k: v for k, v in given.items() if v is not None})
    for option, (kinds, why) in ONLY.items():
        value = getattr(args, option)
        if value is None:
            continue
        if args.kind not in kinds:
            flag = "--" + option.replace("_", "-")
            raise GraphshardError(f"{flag}: only {', '.join(kinds)} take it ({why}); drop {flag} for {args.kind}")
        kwargs[option] = value
    print(GENERATORS[args.kind](args.out, **kwargs))
    return 0
