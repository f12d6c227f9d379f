"""No shared scratch (issue 22, items 1 and 2) at library level: the shuffle, the multilevel partitioner and
validation with their scratch on a store (moto), on Dask workers that each keep their own local folder, give the
bytes a shared-folder run gives; a worker killed mid-step, its local folder wiped with it, changes nothing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.multilevel import run as multilevel_run
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import load_metadata
from graphshard.storage.scratch import scratch_space

# Several blocks and levels, few rounds: these tests compare bytes, not cuts; on a store a round is many requests.
SMALL = {"multilevel_coarse_nodes": 300, "multilevel_block_edges": 8000, "multilevel_lp_rounds": 3,
         "multilevel_refine_rounds": 2}


def _files(folder: Path, pattern: str = "*.txt") -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob(pattern)) if p.is_file()}


def _killer(marker_dir: str, key_part: str) -> WorkerPlugin:
    """Kills its worker once over the cluster when a task whose key holds `key_part` starts, wiping the worker's
    local folder first (a lost host takes its disk with it)."""

    class KillHost(WorkerPlugin):
        name = f"kill-host-{key_part}"

        def setup(self, worker):
            self.folder = worker.local_directory

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and key_part in str(key):
                try:
                    os.close(os.open(os.path.join(marker_dir, "killed"), os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return
                shutil.rmtree(self.folder, ignore_errors=True)
                os._exit(1)

    return KillHost()


@pytest.fixture
def own_disk_cluster(s3_env, tmp_path):
    """Two worker processes, each with its own local folder (Dask's worker-<id> folders: none reads another's), the
    S3 environment inherited."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 3}), \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True,
                         local_directory=str(tmp_path / "workers")) as cluster, Client(cluster) as client:
        yield client


def _multilevel_on_store(md: Path, out: Path, url: str, client, **opts) -> None:
    out.mkdir(parents=True)
    graph = load_metadata(md)
    with scratch_space(url, None, client) as scratch:
        multilevel_run(graph, 4, AssignOptions(method="multilevel", **SMALL, **opts), scratch, out, client)


def _killed_on_store(md: Path, out: Path, url: str, client, key_part: str) -> dict[str, bytes]:
    """The parts files of a multilevel run on a store during which one worker dies (its folder wiped) as a task
    whose key holds `key_part` starts."""
    markers = out.parent / f"{out.name}-markers"
    markers.mkdir()
    client.register_plugin(_killer(str(markers), key_part))
    _multilevel_on_store(md, out, url, client)
    assert (markers / "killed").exists()
    return _files(out)


@pytest.mark.slow
def test_multilevel_on_a_store_equals_the_shared_folder(rmat_small, tmp_path, s3_bucket, own_disk_cluster):
    assign(rmat_small, tmp_path / "ref", 4, AssignOptions(method="multilevel", **SMALL))
    _multilevel_on_store(rmat_small, tmp_path / "store", f"{s3_bucket}/ml", own_disk_cluster)
    assert _files(tmp_path / "store") == _files(tmp_path / "ref")
    killed = _killed_on_store(rmat_small, tmp_path / "killed", f"{s3_bucket}/ml2", own_disk_cluster, "ml-refine-L0")
    assert killed == _files(tmp_path / "ref")
    from graphshard.storage import Storage
    assert Storage().listing(f"{s3_bucket}/ml") == [] and Storage().listing(f"{s3_bucket}/ml2") == []


@pytest.mark.slow
def test_vcycles_on_a_store_equal_the_shared_folder(rmat_small, tmp_path, s3_bucket, own_disk_cluster):
    """Every cycle's level files have names of their own: a worker's local copy of a store array is keyed by its
    name, so a name used again would serve the previous cycle's bytes."""
    assign(rmat_small, tmp_path / "ref", 4, AssignOptions(method="multilevel", multilevel_vcycles=2, **SMALL))
    _multilevel_on_store(rmat_small, tmp_path / "store", f"{s3_bucket}/mlv", own_disk_cluster, multilevel_vcycles=2)
    assert _files(tmp_path / "store") == _files(tmp_path / "ref")


@pytest.mark.slow
def test_regions_on_a_store_equal_the_shared_folder(make_graph, tmp_path, s3_bucket, own_disk_cluster):
    """A mesh renumbers its input level into regions (a level of new names), also when a worker dies renumbering."""
    md = make_graph("grid", nodes=8000, dims=3, chunks=2)
    assign(md, tmp_path / "ref", 4, AssignOptions(method="multilevel", **SMALL))
    assert json.loads((tmp_path / "ref" / REPORT_FILE).read_text())["partitioner"]["regions"]["used"]
    killed = _killed_on_store(md, tmp_path / "store", f"{s3_bucket}/mlr", own_disk_cluster, "ml-region-edges")
    assert killed == _files(tmp_path / "ref")


def _shuffle_bytes(md: Path, asg: Path, out: Path, client, scratch: str | None, hops: int = 2) -> dict[str, bytes]:
    from graphshard.shuffle import ShuffleOptions, shuffle

    opts = ShuffleOptions(save_orig_nids=True, save_orig_eids=True, halo_hops=hops, scratch_dir=scratch,
                          node_block_rows=500)
    shuffle(md, asg, out, opts, client)
    return _files(out, "*")


@pytest.mark.slow
def test_shuffle_on_a_store_equals_the_shared_folder(make_graph, tmp_path, s3_bucket, own_disk_cluster):
    from test_shuffle import random_assignment

    from graphshard.storage import Storage

    md = make_graph("mag", papers=2000, chunks=3)
    asg = random_assignment(md, tmp_path / "asg", 3)
    ref = _shuffle_bytes(md, asg, tmp_path / "ref", None, None)
    assert _shuffle_bytes(md, asg, tmp_path / "store", own_disk_cluster, f"{s3_bucket}/shuffle") == ref
    markers = tmp_path / "markers"
    markers.mkdir()
    own_disk_cluster.register_plugin(_killer(str(markers), "shuffle-route-edge-chunks"))
    assert _shuffle_bytes(md, asg, tmp_path / "killed", own_disk_cluster, f"{s3_bucket}/shuffle2") == ref
    assert (markers / "killed").exists()
    assert Storage().listing(f"{s3_bucket}/shuffle") == [] and Storage().listing(f"{s3_bucket}/shuffle2") == []


@pytest.mark.slow
def test_validation_scratch_on_a_store(make_graph, tmp_path, s3_bucket, own_disk_cluster):
    """Validation with its scratch arrays on the store (orig-ID maps, claims, level arrays of a 2-hop halo) finds
    the same as with a shared folder: a valid set passes, and a broken one fails with the same problems."""
    from test_shuffle import random_assignment

    from graphshard.shuffle import ShuffleOptions, shuffle
    from graphshard.validate import validate

    md = make_graph("mag", papers=1500, chunks=2)
    asg = random_assignment(md, tmp_path / "asg", 3)
    config = shuffle(md, asg, tmp_path / "set", ShuffleOptions(save_orig_nids=True, save_orig_eids=True,
                                                               halo_hops=2), None)
    ref = validate(config, md, client=own_disk_cluster)
    got = validate(config, md, client=own_disk_cluster, scratch_dir=f"{s3_bucket}/validate")
    assert ref["ok"] and got["ok"], (ref["problems"], got["problems"])
    assert got["checks"] == ref["checks"] and got["quality"] == ref["quality"]
    from graphshard.storage import Storage
    assert Storage().listing(f"{s3_bucket}/validate") == []


@pytest.mark.slow
@pytest.mark.parametrize("method", ["random", "multilevel"])
def test_assign_to_a_store_keeps_its_scratch_there(rmat_small, tmp_path, s3_bucket, own_disk_cluster, method):
    """`assign` to an s3:// folder: the methods' task files go to a prefix beside it on the store (never the flow
    host's temporary folder, which other hosts' workers do not see); same `<ntype>.txt` bytes as a local run."""
    from graphshard.storage import Storage

    options = AssignOptions(method=method, **(SMALL if method == "multilevel" else {}))
    assign(rmat_small, tmp_path / "ref", 4, options, own_disk_cluster)
    seen: list[str] = []
    import graphshard.storage.scratch as sc
    original = sc.scratch_space

    def spy(where, storage=None, client=None):
        seen.append(str(where))
        return original(where, storage, client)

    sc_mod = __import__(f"graphshard.assign.{method}", fromlist=["scratch_space"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sc_mod, "scratch_space", spy)
        assign(rmat_small, f"{s3_bucket}/asg", 4, options, own_disk_cluster)
    assert seen and all(s.startswith(f"{s3_bucket}/.asg.scratch") for s in seen), seen
    storage = Storage()
    for name, data in _files(tmp_path / "ref").items():
        assert storage.read_bytes(f"{s3_bucket}/asg/{name}") == data
    assert storage.listing(f"{s3_bucket}/.asg.scratch") == []


def _hide(folder: str) -> WorkerPlugin:
    """Makes `folder` (the flow host's temporary folder) absent on its worker, as on another host: opening, listing
    or making anything under it raises FileNotFoundError (an audit hook, which sees every open, numpy's included)."""

    class Hide(WorkerPlugin):
        name = "hide-flow-host"

        def setup(self, worker):
            import sys

            def hook(event, args):
                if event in ("open", "os.listdir", "os.scandir", "os.mkdir") and args and \
                        isinstance(args[0], (str, bytes, os.PathLike)) and os.fsdecode(args[0]).startswith(folder):
                    raise FileNotFoundError(2, "not on this host", os.fsdecode(args[0]))

            sys.addaudithook(hook)

    return Hide()


EDGE_FIGURES = ("edge_cut", "edges_per_part", "communication_volume", "nodes_per_part", "imbalance")


@pytest.mark.slow
def test_the_report_edge_pass_reads_no_flow_host_folder(rmat_small, tmp_path, s3_bucket, own_disk_cluster):
    """`assign` to s3:// with its report's edge pass (the flow with validation off): the workers, which cannot see the
    flow host's temporary folder, read the parts from the store; the figures equal a local run's, by the in-memory
    marks and by volume blocks counted by tasks."""
    import json
    import tempfile

    from graphshard.assign.report import build_report, load_parts
    from graphshard.formats.chunked import load_metadata
    from graphshard.storage import Storage

    options = AssignOptions(method="random")
    assign(rmat_small, tmp_path / "ref", 4, options)
    ref = json.loads((tmp_path / "ref" / "assignment_report.json").read_text())
    flow_host = tmp_path / "flow-host"
    flow_host.mkdir()
    own_disk_cluster.register_plugin(_hide(str(flow_host)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(flow_host))
        assign(rmat_small, f"{s3_bucket}/asg", 4, options, own_disk_cluster)
    got = json.loads(Storage().read_bytes(f"{s3_bucket}/asg/assignment_report.json"))
    assert {k: got[k] for k in EDGE_FIGURES} == {k: ref[k] for k in EDGE_FIGURES}
    graph = load_metadata(rmat_small)
    part_files = load_parts(graph, tmp_path / "ref", 4, flow_host / "npy")
    with scratch_space(f"{s3_bucket}/report", None, own_disk_cluster) as where:
        blocked = build_report(graph, part_files, 4, options, where, own_disk_cluster, vol_budget=4 * 64)
    assert {k: blocked[k] for k in EDGE_FIGURES} == {k: ref[k] for k in EDGE_FIGURES}
    assert Storage().listing(f"{s3_bucket}/.asg.scratch") == [] and Storage().listing(f"{s3_bucket}/report") == []


def _copies_after(opened: list) -> list[str]:
    """In a worker: open the store arrays `opened` together (in threads of the task, as a multilevel task does),
    then list the local copies this worker holds, relative to its own local directory."""
    from distributed import get_worker

    from graphshard.assign.multilevel.store import prefetch
    from graphshard.storage.scratch import local_dir

    prefetch(*opened)
    folder = Path(get_worker().local_directory)
    assert local_dir().is_relative_to(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.npy"))


def test_copies_made_in_a_tasks_threads_are_the_workers_and_leave_with_their_array(s3_bucket, own_disk_cluster):
    """Arrays a task opens in threads of its own (several requests in flight) are copied to its worker's local
    folder, which `drop_local` empties; a copy goes once the step removes its array from the store (and the copies
    held pass EVICT_BYTES)."""
    import numpy as np

    from graphshard.storage import scratch as sc

    root = sc.scratch_path(f"{s3_bucket}/copies")
    arrays = [root / f"a{i}.npy" for i in range(3)]
    for arr in arrays:
        sc.create_array(arr, (8,), np.int64)
    worker = sorted(own_disk_cluster.scheduler_info()["workers"])[0]
    own_disk_cluster.run(setattr, sc, "EVICT_BYTES", 0)  # eight-row arrays: ask at every copy

    def copies(opened: list) -> list[str]:
        return own_disk_cluster.submit(_copies_after, opened, workers=[worker], pure=False).result()

    first = copies(arrays[:2])
    assert len(first) == 2
    sc.remove(arrays[0])
    after = copies(arrays[2:])
    assert len(after) == 2 and len(set(first) & set(after)) == 1  # a0's copy gone, a1's kept, a2's new
    own_disk_cluster.run(sc.drop_local, root.root)
    assert copies([]) == []
