"""`graphshard assign`: decide each node's partition and write the assignment folder (step 1 of the pipeline)."""

from __future__ import annotations

import argparse
import json
from contextlib import nullcontext

from pydantic import ValidationError

from graphshard.assign.options import METHODS
from graphshard.errors import GraphshardError
from graphshard.storage.field import as_where

NAME = "assign"
HELP = ("Assign every node to a partition (random, metis, parmetis, kaminpar, multilevel or a user's file); write "
        "<ntype>.txt.")


def _fanouts(text: str) -> list[int]:
    """`--sample-fanouts 10,25` as a list of positive integers."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas (e.g. 10,25), found {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="metadata", type=as_where, required=True,
                        help="metadata.json of the chunked graph (a path or a URL such as s3://bucket/graph/)")
    parser.add_argument("--out", type=as_where, required=True, help="assignment folder to write (a path or a URL)")
    parser.add_argument("--num-parts", type=int, required=True, help="number of partitions (machines)")
    parser.add_argument("--method", choices=METHODS, default="random", help="partitioning method (default random)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    parser.add_argument("--balanced", action="store_true",
                        help="random: exactly balanced node counts per node type")
    parser.add_argument("--balance-ntypes", nargs="+", default=[], metavar="X",
                        help="metis/parmetis/multilevel: balance classes: 'ntype' (one per node type) or "
                             "'<ntype>/<feature>' "
                             "(an integer/bool node feature, e.g. paper/train_mask); entries combine into product "
                             "classes, one constraint each")
    parser.add_argument("--balance-edges", action="store_true",
                        help="metis/parmetis/multilevel: balance in-degrees (per class when --balance-ntypes is given)")
    parser.add_argument("--objtype", choices=["cut", "vol", "fetch"], default="cut",
                        help="metis: minimise the edge cut or the communication volume (default cut); metis, kaminpar, "
                             "multilevel: fetch minimises the remote input nodes of neighbour-sampled mini-batches")
    parser.add_argument("--sample-fanouts", type=_fanouts, default=[10, 25],
                        help="with --objtype fetch: the training's fanouts, input layer first (default 10,25)")
    parser.add_argument("--sample-seeds", default=None,
                        help="with --objtype fetch: <ntype>/<feature> whose non-zero nodes seed mini-batches "
                             "(default: the first feature entry of --balance-ntypes, else every node)")
    parser.add_argument("--fetch-refine-rounds", type=int, default=20,
                        help="metis, kaminpar with --objtype fetch: rounds of the post-pass that moves nodes to lower "
                             "the expected remote share itself (default 20; 0: off)")
    parser.add_argument("--num-trainers-per-machine", type=int, default=1,
                        help="partition into parts x trainers, write trainer_ids/<ntype>.txt, merge per machine")
    parser.add_argument("--ufactor", type=int, default=30, help="allowed imbalance in 1/1000 (default 30 = 3%%)")
    parser.add_argument("--dir", type=as_where, default=None,
                        help="file: the user's assignment folder (a path or a URL)")
    parser.add_argument("--mpi-ranks", type=int, default=2, help="parmetis: number of MPI ranks (default 2)")
    parser.add_argument("--parmetis-lib", default=None,
                        help="parmetis: path of libparmetis.so (default: Debian's int64 PT-Scotch interface)")
    parser.add_argument("--parmetis-idx-bits", type=int, choices=[32, 64], default=64,
                        help="parmetis: idx_t width of a real ParMETIS library (PT-Scotch's is detected)")
    parser.add_argument("--metis-lib", default=None,
                        help="metis: path of libmetis.so (default: Debian's libmetis5, else cmeel-metis's)")
    parser.add_argument("--kaminpar-preset", default="default", help="kaminpar: preset (default, fast, eco, strong...)")
    parser.add_argument("--kaminpar-threads", type=int, default=1,
                        help="kaminpar: threads (default 1, reproducible; more is faster but differs per run)")
    parser.add_argument("--multilevel-coarse-nodes", type=int, default=250_000,
                        help="multilevel: coarsen until at most this many nodes, then METIS in one task "
                             "(default 250000)")
    parser.add_argument("--multilevel-coarse-edges", type=int, default=4_000_000,
                        help="multilevel: and coarsen until at most this many edges (default 4000000)")
    parser.add_argument("--multilevel-block-edges", type=int, default=4_000_000,
                        help="multilevel: input edges per block task (default 4000000)")
    parser.add_argument("--multilevel-lp-rounds", type=int, default=6,
                        help="multilevel: label propagation rounds per coarsening level (default 6)")
    parser.add_argument("--multilevel-refine-rounds", type=int, default=8,
                        help="multilevel: refinement rounds per level at most (default 8)")
    parser.add_argument("--multilevel-jet-rounds", type=int, default=2,
                        help="multilevel: refinement rounds of a level of several blocks that run a Jet pass "
                             "(default 2; up to --multilevel-refine-rounds: a smaller cut, more time)")
    parser.add_argument("--multilevel-vcycles", type=int, default=0,
                        help="multilevel: cycles after the first, each coarsening within the parts found, "
                             "partitioning afresh (the lower cut kept) and refining back; each costs about one more "
                             "coarsening and refinement (default 0)")
    parser.add_argument("--workers", type=int, default=0,
                        help="run the data-parallel work on a local Dask cluster of this many workers (default 0: "
                             "in this process)")
    parser.add_argument("--scheduler", default=None, help="run on the Dask scheduler at this address")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def run(args: argparse.Namespace) -> int:
    import logging

    from graphshard.assign import REPORT_FILE, assign
    from graphshard.assign.options import AssignOptions, OptionConflict, resolve
    from graphshard.cluster import ClusterSpec, dask_client
    from graphshard.precheck import checked_graph, precheck_assignment, refuse
    from graphshard.storage import Storage, location

    try:
        options = AssignOptions(
            method=args.method, seed=args.seed, balanced=args.balanced, balance_ntypes=args.balance_ntypes,
            balance_edges=args.balance_edges, objtype=args.objtype, sample_fanouts=args.sample_fanouts,
            sample_seeds=args.sample_seeds, fetch_refine_rounds=args.fetch_refine_rounds,
            num_trainers_per_machine=args.num_trainers_per_machine, ufactor=args.ufactor, dir=args.dir,
            mpi_ranks=args.mpi_ranks, parmetis_lib=args.parmetis_lib, parmetis_idx_bits=args.parmetis_idx_bits,
            metis_lib=args.metis_lib, kaminpar_preset=args.kaminpar_preset, kaminpar_threads=args.kaminpar_threads,
            multilevel_coarse_nodes=args.multilevel_coarse_nodes, multilevel_coarse_edges=args.multilevel_coarse_edges,
            multilevel_block_edges=args.multilevel_block_edges,
            multilevel_lp_rounds=args.multilevel_lp_rounds, multilevel_refine_rounds=args.multilevel_refine_rounds,
            multilevel_jet_rounds=args.multilevel_jet_rounds, multilevel_vcycles=args.multilevel_vcycles)
    except ValidationError as err:
        first = err.errors()[0]
        raise GraphshardError(f"{_flag(str(first['loc'][0]))}: {first['msg']}") from None
    try:
        options, ignored = resolve(options)  # before any work: a conflict names its flag
    except OptionConflict as err:
        raise GraphshardError(err.line(_flag(err.option))) from None
    for item in ignored:
        logging.getLogger("graphshard.assign").warning(item.warning(_flag(item.option)))
    graph = checked_graph(args.metadata)  # headers of every input file, before any work starts
    if args.method == "file" and args.dir is not None:
        refuse(precheck_assignment(graph, args.dir))
    use_cluster = args.workers or args.scheduler  # a negative count: check_spec's one line
    cluster = dask_client(ClusterSpec(address=args.scheduler, workers=args.workers or 2)) if use_cluster \
        else nullcontext(None)
    with cluster as client:
        out = assign(graph, args.out, args.num_parts, options, client=client, overwrite=args.overwrite)
    report = json.loads(Storage().read_bytes(location(out).join(REPORT_FILE)))
    cut = report["edge_cut"]
    print(f"{out}: {args.num_parts} part(s) by {args.method}; edge cut {cut['count']:,} "
          f"({cut['fraction']:.1%}); imbalance " +
          ", ".join(f"{k} {v:.3f}" for k, v in report["imbalance"].items()) + f"; {report['seconds']:.1f} s")
    return 0
