"""The run's Dask client is opened only when a step needs it; a prestarted one is adopted, or closed if unused."""

from __future__ import annotations

from graphshard.cluster import ClusterSpec
from graphshard.pipeline import ondemand


def test_opened_on_first_use_once(dask_address):
    started = []
    with ondemand.ClusterOnDemand(ClusterSpec(address=dask_address), on_start=started.append) as cluster:
        assert not cluster.started and started == []
        client = cluster.get()
        assert cluster.get() is client and started == [client]
        assert client.status == "running"
    assert client.status == "closed"


def test_prestarted_client_is_adopted_or_closed_unused(dask_address):
    spec = ClusterSpec(address=dask_address, connect_timeout=11.0)  # a spec of this test only
    ondemand.prestart(spec)
    pending = ondemand._prestarted[spec]
    with ondemand.ClusterOnDemand(spec) as cluster:
        assert spec not in ondemand._prestarted  # taken by this run
        client = cluster.get()
        assert client is pending.result()[1]
    assert client.status == "closed"

    ondemand.prestart(spec)
    pending = ondemand._prestarted[spec]
    with ondemand.ClusterOnDemand(spec) as cluster:
        pass  # every step cached: never needed
    assert not cluster.started and pending.result()[1].status == "closed"
