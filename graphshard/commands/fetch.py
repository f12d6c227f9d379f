"""`graphshard fetch`: copy a published partition set (or some parts) from a path or URL to local disk, checked
against the set's digests, with a config that DGL's `load_partition`/DistDGL read unchanged."""

from __future__ import annotations

import argparse

NAME = "fetch"
HELP = ("Download a partition set's config and its parts (default all) from a path or URL (s3://, gs://, abfs://) to "
        "a local folder, checking every file against the digests written with the set.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG_URL",
                        help="the partition config <graph_name>.json, or the set's folder (path or URL)")
    parser.add_argument("--out", required=True, metavar="DIR", help="local folder to create with the fetched set")
    parser.add_argument("--parts", default=None, metavar="IDS",
                        help="comma-separated partition ids to fetch, e.g. 0,3 (default: all); the config still "
                             "describes every part, as DGL's partition book needs")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out folder that holds a partition set (an earlier fetch); "
                             "its files that match the set's digests are kept, not downloaded again")
    parser.add_argument("--transfers", type=int, default=4,
                        help="files copied at once (default 4); each holds one 8 MiB block in memory")


def run(args: argparse.Namespace) -> int:
    from graphshard.commands.validate import partition_config
    from graphshard.fetch import fetch

    config = partition_config(args.config)  # a folder: the one partition config in it, as validate --partitions
    done = fetch(str(config), args.out, parts=args.parts, overwrite=args.overwrite, transfers=args.transfers)
    kept = f", {done.kept} already there" if done.kept else ""
    print(f"graphshard: fetched part(s) {','.join(map(str, done.parts))} ({done.files} files: "
          f"{done.files - done.kept} downloaded, {done.bytes:,} bytes{kept}; digests checked) into "
          f"{done.config.parent}; config {done.config}")
    return 0
