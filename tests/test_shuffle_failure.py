"""A Dask worker dying in the middle of the exchange: shuffle recovers (Dask reruns the idempotent task) or fails
with a clear message, and never publishes partial output. Uses its own cluster, since workers get killed."""

from __future__ import annotations

import os

import dask
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin
from invariants import check_partitions
from test_shuffle import random_assignment

from graphshard.errors import GraphshardError
from graphshard.shuffle import ShuffleOptions, shuffle


def _killer(marker_dir: str, times: int) -> WorkerPlugin:
    """A worker plugin that kills its worker process when an edge-routing task starts, at most `times` times
    over the cluster (counted with marker files, so restarted workers keep the count)."""

    class KillDuringExchange(WorkerPlugin):
        name = "kill-during-exchange"

        def transition(self, key, start, finish, **kwargs):
            if finish != "executing" or "route-edge-chunks" not in str(key):
                return
            for i in range(times):
                try:
                    os.close(os.open(os.path.join(marker_dir, f"kill-{i}"), os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    continue
                os._exit(1)

    return KillDuringExchange()


@pytest.fixture
def fragile_client():
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
            Client(cluster) as client:
        yield client


@pytest.mark.parametrize("kills,recovers", [(1, True), (100, False)])
def test_worker_dies_during_exchange(fragile_client, make_graph, tmp_path, kills, recovers):
    md = make_graph("rmat", nodes=300, edges=3000, chunks=4, seed=11)
    asg = random_assignment(md, tmp_path / "asg", 3)
    markers = tmp_path / "markers"
    markers.mkdir()
    fragile_client.register_plugin(_killer(str(markers), kills))
    out = tmp_path / "out"
    opts = ShuffleOptions(save_orig_nids=True, save_orig_eids=True)
    if recovers:
        config = shuffle(md, asg, out, opts, fragile_client)
        check_partitions(config, md, asg)
        assert len(list(markers.iterdir())) == 1
    else:
        with pytest.raises(GraphshardError, match=r"shuffle: route-edge-chunks \S+: Dask workers died repeatedly"):
            shuffle(md, asg, out, opts, fragile_client)
        assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")], "staging folder left behind"
