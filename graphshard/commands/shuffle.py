"""`graphshard shuffle` (also `graphshard dispatch`, its first name): shuffle a chunked graph by an assignment folder
and write DGL partitions, on Dask."""

from __future__ import annotations

import argparse

from graphshard.errors import GraphshardError

NAME = "shuffle"
ALIASES = ["dispatch"]  # the command's first name, which scripts already type
HELP = "shuffle a chunked graph by a partition assignment and write DGL-loadable partitions (runs on Dask)"
STORE_CHOICES = ("store_eids", "store_inner_node", "store_inner_edge")  # DGL 2.1's dgl_partition_to_graphbolt's


def _formats(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in ("coo", "csc", "csr")]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of coo,csc,csr, found '{text}'")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="metadata", required=True,
                        help="the chunked graph's metadata.json (or its folder)")
    parser.add_argument("--partitions", required=True, help="assignment folder: <ntype>.txt + partition_meta.json")
    parser.add_argument("--out", required=True, help="output folder for <graph_name>.json and part<i>/")
    parser.add_argument("--halo-hops", type=int, default=1, help="halo hops as in DGL's partition_graph (default 1)")
    parser.add_argument("--halo-mode", choices=["full", "in_edges"], default="full",
                        help="full: partition_graph's halo; in_edges: owned in-edges only, as DGL's pipeline writes")
    parser.add_argument("--save-orig-nids", action="store_true", help="write part<i>/orig_nids.dgl")
    parser.add_argument("--save-orig-eids", action="store_true", help="write part<i>/orig_eids.dgl")
    parser.add_argument("--graph-formats", type=_formats, default=["coo"],
                        help="e.g. coo,csc: the formats graph.dgl saves, as DGL's graph_formats (default coo)")
    parser.add_argument("--scratch-dir", default=None, help="folder for the exchange's bucket files "
                        "(default: inside the output's staging folder; must be visible to every worker)")
    parser.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    parser.add_argument("--workers", type=int, default=2, help="local cluster: worker processes (default 2)")
    parser.add_argument("--threads-per-worker", type=int, default=1, help="local cluster: threads per worker")
    parser.add_argument("--memory-limit", default="auto", help="local cluster: memory limit per worker, e.g. 1GB")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    parser.add_argument("--graphbolt", action="store_true", help="also write GraphBolt's part<i>/fused_csc_sampling_"
                        "graph.pt, as DGL's use_graphbolt=True (DGL's converter: needs dgl>=2.1 and torch)")
    for name in STORE_CHOICES:
        parser.add_argument(f"--{name.replace('_', '-')}", action="store_true",
                            help=f"with --graphbolt: DGL's {name} (what the GraphBolt graph keeps)")


def _graphbolt_options(args: argparse.Namespace):
    """--graphbolt and DGL's store choices (GraphboltOptions or None); a choice without --graphbolt, or no DGL here,
    is one line."""
    from graphshard.shuffle.graphbolt import GraphboltOptions, require_dgl

    chosen = {name: getattr(args, name) for name in STORE_CHOICES}
    if not args.graphbolt:
        stray = [name for name, on in chosen.items() if on]
        if stray:
            raise GraphshardError(f"--{stray[0].replace('_', '-')}: only with --graphbolt")
        return None
    require_dgl("--graphbolt")
    return GraphboltOptions(**chosen)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from graphshard.cluster import ClusterSpec, check_spec, dask_client
    from graphshard.plan.fit import start_problem
    from graphshard.precheck import checked_graph, precheck_assignment, refuse
    from graphshard.shuffle import ShuffleOptions, shuffle
    from graphshard.shuffle.graphbolt import to_graphbolt

    try:
        options = ShuffleOptions(halo_hops=args.halo_hops, halo_mode=args.halo_mode,
                                 save_orig_nids=args.save_orig_nids, save_orig_eids=args.save_orig_eids,
                                 graph_formats=args.graph_formats, scratch_dir=args.scratch_dir)
    except ValidationError as err:
        first = err.errors()[0]
        raise GraphshardError(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}") from None
    graphbolt = _graphbolt_options(args)
    spec = ClusterSpec(address=args.scheduler, workers=args.workers, threads_per_worker=args.threads_per_worker,
                       memory_limit=args.memory_limit)
    check_spec(spec)
    if not spec.address and (line := start_problem("--memory-limit", spec.memory_limit, spec.workers,
                                                   spec.threads_per_worker)):
        raise GraphshardError(line)
    refuse(precheck_assignment(checked_graph(args.metadata), args.partitions))  # before the cluster starts
    with dask_client(spec) as client:
        config = shuffle(args.metadata, args.partitions, args.out, options, client, overwrite=args.overwrite)
        if graphbolt is not None:
            to_graphbolt(config, graphbolt, client)
    print(config)
    return 0
