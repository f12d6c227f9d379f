"""`graphshard chunk`: turn an OGB-style folder of .npy arrays into a chunked graph."""

from __future__ import annotations

import argparse

from graphshard.chunking import chunk_ogb
from graphshard.formats.chunked_writer import WRITE_FORMATS

NAME = "chunk"
HELP = ("Turn an OGB-style folder (meta.json with num_nodes, <src>___<rel>___<dst>/edge_index.npy, "
        "<ntype>/node_*.npy) into a chunked graph with C chunks per type.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="in_dir", required=True, help="the OGB-style input folder")
    parser.add_argument("--out", required=True, help="output folder (metadata.json and chunk files)")
    parser.add_argument("--chunks", type=int, required=True, help="chunks per node and edge type")
    parser.add_argument("--format", default="numpy", choices=WRITE_FORMATS,
                        help="chunk file format; mixed uses csv, numpy and parquet for different files")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def run(args: argparse.Namespace) -> int:
    print(chunk_ogb(args.in_dir, args.out, args.chunks, fmt=args.format, overwrite=args.overwrite))
    return 0
