"""The pipeline flow end to end on real steps: from nothing to validated partitions, caching, invalidation, re-runs."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
from contextlib import redirect_stdout

import numpy as np
import pytest
from flow_helpers import REPO, STATES, copy_graph, run, tree_bytes, write_config

from graphshard.cli import main
from graphshard.errors import GraphshardError
from graphshard.formats.partition_reader import load_partition


def _ran(summary: dict) -> set[str]:
    return {k for k, v in summary["steps"].items() if v != "Cached"}


def test_example_config_from_nothing_then_fully_cached(tmp_path, rmat_small, dask_address):
    config = write_config(tmp_path, rmat_small, dask_address)
    printed = io.StringIO()
    with redirect_stdout(printed):  # not capsys: Prefect's log handler keeps the stderr it first saw
        assert main(["run", str(config)]) == 0
    out = printed.getvalue()
    assert f"partitions: {tmp_path / 'out' / 'rmat.json'}" in out
    assert f"report:     {tmp_path / 'out' / 'report.html'}" in out
    assert "edge cut" in out and "cached: none" in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["ok"] and report["num_problems"] == 0
    assert report["sampling"]["full"] is True
    assert not [c for c in report["checks"] if c["status"] == "failed"]
    published = str(tmp_path / "out" / "rmat.json")  # the report names the published set, not the step cache
    assert report["config"] == published
    assert f"<p>{published} &middot;" in (tmp_path / "out" / "report.html").read_text()
    (cached,) = (tmp_path / "work" / "validate").glob("*/report/report.json")
    assert json.loads(cached.read_text())["config"] != published  # the cache's own copy is left as it was
    book_nodes = 0
    for p in range(4):  # the published set loads with DGL's semantics (graphshard's reader, no DGL needed)
        part = load_partition(tmp_path / "out" / "rmat.json", p)
        inner = part.graph.ndata["inner_node"].astype(bool)
        book_nodes += int(inner.sum())
        assert part.node_feats["_N/feat"].shape[0] == inner.sum()
    assert book_nodes == 2000
    # the published set carries its digests: a training host fetches one part, checked against them
    assert main(["fetch", published, "--out", str(tmp_path / "host"), "--parts", "3"]) == 0
    assert (tmp_path / "host" / "part3" / "graph.dgl").read_bytes() == \
        (tmp_path / "out" / "part3" / "graph.dgl").read_bytes()
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*")}

    summary = run(config)  # second identical run: no work at all
    assert summary["steps"] == {s: "Cached" for s in STATES}
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*")} == before
    assert summary["edge_cut"] > 0 and summary["partition_config"] == str(tmp_path / "out" / "rmat.json")


def test_edge_cut_from_validation_else_from_the_assignment_report(tmp_path, rmat_small, dask_address):
    """A validating run skips the assignment report's pass over the edges (validation measures the cut on the
    output); without validation the report makes it, and the two counts agree."""
    config = write_config(tmp_path, rmat_small, dask_address)
    validated = run(config)
    quality = json.loads((tmp_path / "out" / "report.json").read_text())["quality"]
    assert validated["edge_cut_count"] == quality["edge_cut"]["count"] > 0
    (lean,) = (tmp_path / "work" / "assign").glob("*/assignment/assignment_report.json")
    assert json.loads(lean.read_text())["edge_cut"] is None

    unvalidated = run(config, ["validate.enabled=false", "output.dir=" + str(tmp_path / "out2")])
    assert unvalidated["steps"]["assign"] == "Completed"  # another key: its report measures the edges
    assert unvalidated["edge_cut_count"] == quality["edge_cut"]["count"]
    (full,) = [r for r in map(json.loads, (p.read_text() for p in (tmp_path / "work" / "assign").glob(
        "*/assignment/assignment_report.json"))) if r["edge_cut"] is not None]
    halo_nodes = sum(sum(q["halo_nodes"].values()) for q in quality["partitions"])
    assert full["communication_volume"] == halo_nodes  # one full halo hop: the halos are the volume


def test_num_parts_change_reruns_assign_and_later_not_ingest(tmp_path, rmat_small, dask_address):
    config = write_config(tmp_path, rmat_small, dask_address)
    assert _ran(run(config)) == set(STATES)
    summary = run(config, ["num_parts=3"])
    assert summary["steps"]["ingest"] == "Cached"
    assert _ran(summary) == {"assign", "shuffle", "validate", "publish"}
    layout = json.loads((tmp_path / "out" / "rmat.json").read_text())
    assert layout["num_parts"] == 3 and not (tmp_path / "out" / "part3").exists()
    assert _ran(run(config, ["num_parts=3"])) == set()


def test_a_work_folder_may_replace_every_output_it_published(tmp_path, rmat_small, dask_address):
    """It remembered its last output only: a config whose output.dir went elsewhere and back (or two configs sharing
    a work folder) was refused its own earlier output ('expected a folder that does not exist yet')."""
    config = write_config(tmp_path, rmat_small, dask_address)
    run(config)
    run(config, [f"output.dir={tmp_path / 'elsewhere'}", "num_parts=3"])
    summary = run(config, ["num_parts=2"])  # back to the first output, changed: replaced, not refused
    assert summary["steps"]["publish"] == "Completed"
    assert json.loads((tmp_path / "out" / "rmat.json").read_text())["num_parts"] == 2
    assert json.loads((tmp_path / "elsewhere" / "rmat.json").read_text())["num_parts"] == 3


def test_a_cleared_work_folder_is_told_why_its_earlier_output_is_refused(tmp_path, rmat_small, dask_address):
    config = write_config(tmp_path, rmat_small, dask_address)
    run(config)
    shutil.rmtree(tmp_path / "work")  # the README's way to clear the cache: the publish record goes with it
    with pytest.raises(GraphshardError, match=r"expected a folder that does not exist yet \(or output.overwrite: "
                                              r"true\), found .*out exists, and work_dir holds no record of"):
        run(config)
    assert run(config, ["output.overwrite=true"])["steps"]["publish"] == "Completed"


def test_editing_one_input_chunk_reruns_everything_downstream(tmp_path, rmat_small, dask_address):
    metadata = copy_graph(rmat_small, tmp_path / "graph")
    config = write_config(tmp_path, metadata, dask_address)
    first = run(config)
    chunk = tmp_path / "graph" / json.loads(metadata.read_text())["node_data"]["_N"]["feat"]["data"][1]
    feat = np.load(chunk)
    feat[0] += 1.0  # same size, new content
    np.save(chunk, feat)
    second = run(config)
    assert _ran(second) == set(STATES)
    moved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert moved["ok"]
    assert first["partition_config"] == second["partition_config"]


def test_from_and_force(tmp_path, rmat_small, dask_address):
    config = write_config(tmp_path, rmat_small, dask_address)
    run(config)
    reference = tree_bytes(tmp_path / "out", skip=("report.json", "report.html"))
    assert _ran(run(config, from_step="assign")) == {"assign", "shuffle", "validate", "publish"}
    assert _ran(run(config, force=["validate"])) == {"validate", "publish"}
    # a forced assignment that comes out identical keeps the shuffle cached (timings are not part of its digest)
    assert _ran(run(config, force=["assign"])) == {"assign"}
    assert tree_bytes(tmp_path / "out", skip=("report.json", "report.html")) == reference


def test_a_forced_step_replaces_a_published_file_changed_in_place(tmp_path, rmat_small, dask_address):
    """A published file damaged in place (same size), then `--force shuffle`: the shuffle came out the same, so
    validate and publish stayed cached and the damaged set stayed published (exit 0)."""
    config = write_config(tmp_path, rmat_small, dask_address)
    run(config)
    reference = tree_bytes(tmp_path / "out", skip=("report.json", "report.html"))
    damaged = tmp_path / "out" / "part0" / "node_feat.dgl"
    data = bytearray(damaged.read_bytes())
    data[-9] ^= 0x40
    with open(damaged, "r+b") as fh:  # in place: the cache's hard-linked copy changes with it
        fh.write(bytes(data))
    summary = run(config, force=["shuffle"])
    assert summary["steps"]["publish"] == "Completed", summary
    assert tree_bytes(tmp_path / "out", skip=("report.json", "report.html")) == reference
    assert _ran(run(config)) == set()  # and then cached again


def test_a_published_file_changed_in_place_is_rebuilt_by_the_next_run(tmp_path, rmat_small, dask_address):
    """Published files are hard links to the shuffle artifact's: writing one in place (same size) changed the
    cached set too, which every later run, into any output, then reused and published as validated."""
    config = write_config(tmp_path, rmat_small, dask_address)
    run(config)
    reference = tree_bytes(tmp_path / "out", skip=("report.json", "report.html"))
    damaged = tmp_path / "out" / "part1" / "node_feat.dgl"
    data = bytearray(damaged.read_bytes())
    data[-9] ^= 0x40
    with open(damaged, "r+b") as fh:
        fh.write(bytes(data))
    summary = run(config, ["output.dir=" + str(tmp_path / "out2")])
    assert _ran(summary) == {"shuffle", "publish"}, summary  # the same set again: validate stays cached
    assert tree_bytes(tmp_path / "out2", skip=("report.json", "report.html")) == reference
    assert _ran(run(config)) == {"publish"}  # the first output is replaced by the rebuilt set's files
    assert tree_bytes(tmp_path / "out", skip=("report.json", "report.html")) == reference


def test_an_input_file_changed_during_the_run_keeps_nothing(tmp_path, rmat_small, dask_address, monkeypatch):
    """A chunk rewritten while the shuffle reads the input (a checkout switched mid-run): the run fails in one line
    naming it, and keeps no artifact built from it; put back, it is not reused, and the set is a clean run's."""
    import graphshard.pipeline.steps.shuffle as shuffle_step

    metadata = copy_graph(rmat_small, tmp_path / "graph")
    chunk = tmp_path / "graph" / json.loads(metadata.read_text())["node_data"]["_N"]["feat"]["data"][1]
    original = chunk.read_bytes()
    (tmp_path / "clean").mkdir()
    run(write_config(tmp_path / "clean", metadata, dask_address))
    build = shuffle_step.build

    def switched(*args, **kwargs):
        feat = np.load(chunk)
        feat[0] += 1.0
        np.save(chunk, feat)  # the shuffle reads this content, ingest hashed the other
        return build(*args, **kwargs)

    monkeypatch.setattr(shuffle_step, "build", switched)
    config = write_config(tmp_path, metadata, dask_address)
    line = f"{chunk}: changed while this run read it (1 input file(s) changed since ingest hashed them); nothing"
    with pytest.raises(GraphshardError, match="^" + re.escape(line + " was kept or published")):
        run(config)
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(shuffle_step, "build", build)
    chunk.write_bytes(original)
    assert _ran(run(config)) >= {"shuffle", "publish"}
    assert tree_bytes(tmp_path / "out", skip=("report.json", "report.html")) \
        == tree_bytes(tmp_path / "clean" / "out", skip=("report.json", "report.html"))


def test_failed_validation_publishes_nothing(tmp_path, rmat_small, dask_address):
    """A partition artifact tampered with in the work folder fails validation: no output, report kept aside."""
    config = write_config(tmp_path, rmat_small, dask_address)
    run(config, ["validate.enabled=false"])
    shuffle_dir = next((tmp_path / "work" / "shuffle").glob("[!.]*"))  # the artifact, not its claims' folder
    layout_path = shuffle_dir / "partitions" / "rmat.json"
    text = layout_path.read_text()
    end = json.loads(text)["node_map"]["_N"][0][1]
    shifted = end - 1 if len(str(end - 1)) == len(str(end)) else end + 1
    at = text.index(str(end), text.index('"node_map"'))  # shift a boundary, same file size: same artifact key
    stat = layout_path.stat()
    layout_path.write_text(text[:at] + str(shifted) + text[at + len(str(end)):])
    os.utime(layout_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # damage the cache's own checks cannot see
    with pytest.raises(GraphshardError, match="validation failed: .*node_map"):
        run(config, ["output.dir=" + str(tmp_path / "out2")])
    assert not (tmp_path / "out2").exists()
    assert (tmp_path / "work" / "validate" / "failed" / "report.html").is_file()


def test_mag_config_heterogeneous_metis_balanced(tmp_path, mag_small, dask_address):
    """configs/mag.yaml as shipped (METIS balancing paper/train_mask) on the heterogeneous graph."""
    from graphshard.pipeline.config import load_config

    cfg = load_config(REPO / "configs" / "mag.yaml")
    assert cfg.assign.method == "metis" and cfg.assign.balance_ntypes == ["paper/train_mask"]
    summary = run(REPO / "configs" / "mag.yaml", [f"input.metadata={mag_small}", f"output.dir={tmp_path / 'out'}",
                                                  f"work_dir={tmp_path / 'work'}", f"cluster.address={dask_address}"])
    assert summary["method"] == "metis" and summary["graph_name"] == "mag"
    assert {"paper/train_mask=0", "paper/train_mask=1"} <= set(summary["imbalance"])
    assert max(summary["imbalance"].values()) <= 1.05
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["ok"] and len(report["quality"]["ntypes"]) == 4


def test_trainers_per_machine_reach_the_published_set(tmp_path, mag_small, dask_address):
    """`assign.num_trainers_per_machine: 2` in a run: the published partitions hold DGL's `trainer_id` per node and
    edge type, each a trainer of that machine (an edge: its destination's), and validation checked them. Was: the
    trainer ids stayed in the work folder's assignment and the set had none."""
    run(REPO / "configs" / "mag.yaml", [f"input.metadata={mag_small}", f"output.dir={tmp_path / 'out'}",
                                        f"work_dir={tmp_path / 'work'}", f"cluster.address={dask_address}",
                                        "assign.method=random", "assign.num_trainers_per_machine=2"])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["ok"] and next(c for c in report["checks"] if c["name"] == "trainer-ids")["status"] == "passed"
    for p in range(4):
        part = load_partition(tmp_path / "out" / "mag.json", p)
        ntypes, etypes = {k for k in part.node_feats if k.endswith("/trainer_id")}, \
            {k for k in part.edge_feats if k.endswith("/trainer_id")}
        assert len(ntypes) == 4 and len(etypes) == 8, (ntypes, etypes)
        assert all(set(np.unique(part.node_feats[k] // 2)) <= {p} for k in ntypes)
        assert all(set(np.unique(part.edge_feats[k] // 2)) <= {p} for k in etypes)


def test_multilevel_config_on_a_cluster_address(tmp_path, mag_small, dask_address):
    """configs/multilevel.yaml as shipped runs the whole pipeline with the multilevel method on the cluster."""
    summary = run(REPO / "configs" / "multilevel.yaml", [
        f"input.metadata={mag_small}", f"output.dir={tmp_path / 'out'}", f"work_dir={tmp_path / 'work'}",
        f"cluster.address={dask_address}", "assign.multilevel_coarse_nodes=500", "assign.multilevel_block_edges=5000"])
    assert summary["method"] == "multilevel"
    assert {"paper/train_mask=0", "paper/train_mask=1"} <= set(summary["imbalance"])
    assert max(summary["imbalance"].values()) <= 1.03
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["ok"]


@pytest.mark.parametrize("configured", [None, "45"])
def test_run_has_no_heartbeat_thread_unless_configured(monkeypatch, configured):
    """The CLI's in-process run drops Prefect's flow heartbeats (up to 1 s at the end of every run) unless the user
    set a frequency, which then stays."""
    from prefect.settings import get_current_settings

    from graphshard.pipeline.flow import _heartbeats_as_configured

    if configured is None:
        monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    else:
        monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", configured)
    before = get_current_settings().flows.heartbeat_frequency
    with _heartbeats_as_configured():
        got = get_current_settings().flows.heartbeat_frequency
    assert before is not None and got == (None if configured is None else before)


def test_remote_share_estimate_can_be_turned_off(tmp_path, rmat_small, dask_address):
    """`validate.remote_share: false` skips the estimate (report.json holds null); turning it on again re-runs
    validation alone (the key is in the validate section) and the report carries the estimate."""
    config = write_config(tmp_path, rmat_small, dask_address)
    off = run(config, ["validate.remote_share=false"])
    assert off["remote_share"] is None and off["edge_cut"] > 0
    assert json.loads((tmp_path / "out" / "report.json").read_text())["quality"]["remote_share"] is None
    on = run(config)
    assert _ran(on) == {"validate", "publish"} and 0 < on["remote_share"] < 1
    assert json.loads((tmp_path / "out" / "report.json").read_text())["quality"]["remote_share"]["overall"] > 0


def test_an_output_published_meanwhile_is_not_replaced(tmp_path, rmat_small, dask_address, monkeypatch):
    """Another run publishing to output.dir after this run's pre-flight passed (two runs at once): the publish step
    refuses with one line, and the other run's set stays as it was."""
    from graphshard.pipeline.steps import publish as step

    config = write_config(tmp_path, rmat_small, dask_address)
    theirs = tmp_path / "out" / "theirs.json"
    real = step.is_current

    def published_meanwhile(*args, **kwargs):
        theirs.parent.mkdir(exist_ok=True)
        theirs.write_text("{}")
        return real(*args, **kwargs)

    monkeypatch.setattr(step, "is_current", published_meanwhile)
    with pytest.raises(GraphshardError, match="publish: .*another run published there.*nothing was replaced"):
        run(config)
    assert [p.name for p in theirs.parent.iterdir()] == ["theirs.json"]


@pytest.mark.parametrize("when", ["publish", "pre-flight"])
def test_a_run_of_a_config_whose_set_another_run_is_publishing_waits_and_finds_it_current(
        when, tmp_path, rmat_small, dask_address, monkeypatch):
    """Two runs of one config at once. The second reaches its publish while the first publishes: it waits, then
    finds the set current (was: it published beside the first, and whichever renamed its set into place second
    failed with 'output folder exists'). Or the second starts when the first's set is in place, not yet recorded as
    the work folder's: its pre-flight waits for that publish (was: refused, 'expected a folder that does not exist
    yet')."""
    import subprocess
    import sys

    from flow_helpers import subprocess_env, wait_for

    from graphshard.pipeline import publish
    from graphshard.pipeline.steps import publish as step

    config = write_config(tmp_path, rmat_small, dask_address)
    log = tmp_path / "second.log"
    module, name = (step, "publish_output") if when == "publish" else (publish, "write_record")
    real, second = getattr(module, name), []

    def second_run_meanwhile(*args, **kwargs):
        second.append(subprocess.Popen([sys.executable, "-m", "graphshard.cli", "run", str(config)],
                                       env=subprocess_env(), stdout=open(log, "w"), stderr=subprocess.STDOUT))
        wait_for(lambda: second[0].poll() is not None or "waiting for another run publishing to" in log.read_text(),
                 300, "the second run to wait")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, second_run_meanwhile)
    assert _ran(run(config)) == set(STATES)
    assert second[0].wait(timeout=300) == 0, log.read_text()
    assert "waiting for another run publishing to" in log.read_text()
    assert "cached: ingest, assign, shuffle, validate, publish" in log.read_text()


def _corrupt_chunk(tmp_path, rmat_small):
    """A copy of the graph whose second edge chunk names a node that does not exist (ingest's check fails)."""
    metadata = copy_graph(rmat_small, tmp_path / "graph")
    chunk = tmp_path / "graph" / json.loads(metadata.read_text())["edges"]["_N:_E:_N"]["data"][1]
    edges = np.load(chunk)
    edges[5, 0] = 10**9
    np.save(chunk, edges)
    return metadata


@pytest.mark.parametrize("via", ["call", "engine"])
@pytest.mark.parametrize("where", ["config check", "step"])
def test_a_deployment_run_failing_with_graphshards_line_logs_no_traceback(where, via, tmp_path, rmat_small,
                                                                        dask_address):
    """A run Prefect starts (a deployment's; no `graphshard run` around it) failing with graphshard's one line: the run
    is Failed with that line as its message, and Prefect's log (the UI's, `graphshard serve`'s terminal) has it with
    no traceback (was Prefect's 'Encountered exception during execution' with the whole traceback, per task too)."""
    from graphshard.pipeline.flow import partition

    if where == "config check":
        config, line = write_config(tmp_path, rmat_small, dask_address, num_prts=4), "did you mean 'num_parts'?"
    else:
        config, line = write_config(tmp_path, _corrupt_chunk(tmp_path, rmat_small), dask_address), "out of range"
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("prefect").addHandler(handler)
    try:
        if via == "call":
            state = partition(str(config), return_state=True)
        else:  # as a Prefect worker's flow-run process runs it: its engine logged what the run raised, traceback too
            from prefect.flow_engine import run_flow

            with pytest.raises(GraphshardError, match=line) as err:
                run_flow(partition, parameters={"config": str(config)},
                         error_logger=logging.getLogger("prefect.flow_runs"))
            state = type("Ended", (), {"is_failed": lambda self: True, "message": str(err.value)})()
    finally:
        logging.getLogger("prefect").removeHandler(handler)
    assert state.is_failed() and line in state.message and "Traceback" not in state.message
    assert [r for r in records if r.levelno >= logging.ERROR and line in r.getMessage()]
    assert not [r for r in records if r.exc_info], [r.getMessage() for r in records if r.exc_info]
    assert not (tmp_path / "out").exists()


def test_the_ui_link_hides_a_password_and_is_none_without_a_ui(monkeypatch):
    """Ephemeral mode has no UI (`prefect: None` was printed once the link was redacted); a URL with a password in it
    is shown without it."""
    from graphshard.pipeline import flow

    monkeypatch.setattr(flow, "url_for", lambda *a, **k: None)
    assert flow.ui_link("0b1c") is None and flow.ui_link(None) is None
    monkeypatch.setattr(flow, "url_for", lambda kind, obj_id: f"http://alice:pw@127.0.0.1:1/runs/{kind}/{obj_id}")
    assert flow.ui_link("0b1c") == "http://***@127.0.0.1:1/runs/flow-run/0b1c"
