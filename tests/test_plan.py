"""`graphshard plan` and the plan check of `graphshard run`: the plan's shape and key figures for the shipped configs,
a predicted output size against a real shuffle, refusals before any work (memory, the flow host, disk)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from graphshard import assign as assign_pkg
from graphshard.cli import main
from graphshard.formats.chunked import load_metadata
from graphshard.pipeline.config import load_config
from graphshard.pipeline.preflight import check_config
from graphshard.plan import coefficients, fit, gate
from graphshard.plan.build import plan_run
from graphshard.plan.model import CLASS_COLUMN_BYTES, Settings, plan_steps
from graphshard.plan.sizes import GraphSizes

REPO = Path(__file__).resolve().parents[1]
STEPS = ["ingest", "assign", "shuffle", "validate"]


def shipped(name: str, metadata: Path, folder: Path) -> list[str]:
    """`--set` overrides that point a shipped config at a test graph and temporary folders."""
    return [f"input.metadata={metadata}", f"output.dir={folder / 'out'}", f"work_dir={folder / 'work'}"]


def plan_json(capsys, config: Path, overrides: list[str]) -> tuple[int, dict]:
    code = main(["plan", str(config), "--json", *[x for o in overrides for x in ("--set", o)]])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def example_graph(make_graph) -> Path:
    """The example's graph (scripts/example.sh: 5,000 nodes, 50,000 edges, 4 chunks)."""
    return make_graph("rmat", nodes=5000, edges=50000, chunks=4)


def test_example_plan_shape_and_figures(tmp_path, capsys, example_graph):
    config = REPO / "configs" / "example.yaml"
    code, plan = plan_json(capsys, config, shipped("example", example_graph, tmp_path))
    assert code == 0 and plan["fits"] and plan["misfits"] == []
    graph = load_metadata(example_graph)
    files = sum(len(s.data) for d in (graph.node_data, graph.edge_data) for f in d.values() for s in f.values())
    feats = sum(len(f) for d in (graph.node_data, graph.edge_data) for f in d.values())
    g = plan["graph"]
    assert (g["nodes"], g["edges"], g["edge_chunks"], g["largest_chunk"]) == (5000, 50000, 4, 12500)
    assert [s["step"] for s in plan["steps"]] == STEPS
    tasks = {s["step"]: s["tasks"] for s in plan["steps"]}
    # the tasks the steps submit: a check per file; a draw per node block; convert, index, route, write; phase
    # zero (orig_nids), scans and cross-checks per partition plus a checksum per input file
    # and the remote-share estimate: a task per partition and sampling layer
    assert tasks == {"ingest": 4 + files, "assign": 1, "shuffle": 1 + feats + 1 + 4 + 4,
                     "validate": 3 * 4 + 4 + files + 2 * 4}
    base, flow = coefficients.load()["worker_base"], coefficients.load()["flow_base"]
    per_node = coefficients.load()["flow_bytes_per_node"]  # the flow process's per-node share: small at 5,000 nodes
    # the remote share's pairs: 8 batches x at most the graph's edges per layer, the bound's measured share
    pairs = 8 * 50000 * coefficients.load()["remote_share_pair_share"]["random"] * 48
    assert all(base < s["worker_peak"] < 0.5e9 and s["flow_peak"] == int(
        flow + per_node.get(s["step"], 0) * 5000 + (pairs if s["step"] == "validate" else 0)) for s in plan["steps"])
    assert plan["limits"]["worker_memory"] == 2_000_000_000 and not plan["limits"]["external"]
    assert [loc["key"] for loc in plan["limits"]["locations"]] == ["work_dir"]  # output.dir: same filesystem
    sets = [x for o in shipped("example", example_graph, tmp_path) for x in ("--set", o)]
    assert main(["plan", str(config), *sets]) == 0
    text = capsys.readouterr().out
    assert "worker peak" in text and "\nfits: yes" in text and text.count("\nshuffle (4 partitions") == 1


def test_predicted_partition_bytes_match_a_real_shuffle(tmp_path, example_graph):
    """The shuffle's output figure against the bytes the shuffle writes for the example config (within 25%)."""
    from graphshard.shuffle import shuffle

    cfg = load_config(REPO / "configs" / "example.yaml", shipped("example", example_graph, tmp_path))
    plan = plan_run(cfg, check_config(cfg))
    predicted = next(s.output for s in plan.steps if s.step == "shuffle")
    assignment = assign_pkg.assign(example_graph, tmp_path / "a", 4, cfg.assign, edge_report=False)
    shuffle(example_graph, assignment, tmp_path / "parts", cfg.shuffle, None)
    written = sum(p.stat().st_size for p in (tmp_path / "parts").rglob("*") if p.is_file())
    assert 0.75 < predicted / written < 1.25, (predicted, written)


def test_mag_plan_metis_in_the_flow_host(tmp_path, capsys, mag_small, monkeypatch):
    config = REPO / "configs" / "mag.yaml"
    code, plan = plan_json(capsys, config, shipped("mag", mag_small, tmp_path))
    assert code == 0 and plan["graph"]["node_types"] == 4 and plan["settings"]["method"] == "metis"
    step = {s["step"]: s for s in plan["steps"]}
    c = coefficients.load()
    metis = c["flow_bytes_per_edge"]["metis"]
    assert step["assign"]["flow_peak"] == int(c["flow_base"] + metis * plan["graph"]["edges"])
    assert "flow host" in step["assign"]["detail"] and plan["limits"]["worker_memory"] == 4_000_000_000
    # a flow host just above the flow process's baseline cannot hold METIS's graph: refused, multilevel suggested
    monkeypatch.setattr("graphshard.plan.build.host_memory", lambda: c["flow_base"] + 1)
    cfg = load_config(config, shipped("mag", mag_small, tmp_path))
    with pytest.raises(gate.PlanRefused) as err:
        gate.check(cfg, check_config(cfg))
    line = str(err.value)
    assert line.startswith("plan: assign: predicted peak of the flow process") and "assign.method: multilevel" in line
    assert "\n" not in line
    assert gate.check(cfg, check_config(cfg), force=True).misfits  # --force-plan: planned, not refused


def test_run_refuses_a_too_small_cluster_before_any_work(tmp_path, example_graph):
    config = tmp_path / "run.yaml"
    data = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    data.update(input={"metadata": str(example_graph)}, output={"dir": str(tmp_path / "out")},
                work_dir=str(tmp_path / "work"))
    data["cluster"]["memory_limit"] = "150MB"
    config.write_text(yaml.safe_dump(data))
    env = {**os.environ, "GRAPHSHARD_HOME": str(tmp_path / "home"), "GRAPHSHARD_LOG_DIR": str(tmp_path / "logs")}
    env.pop("GRAPHSHARD_PREFECT", None)
    proc = subprocess.run([sys.executable, "-m", "graphshard.cli", "run", str(config)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("graphshard run: error: plan: ") and "predicted peak per worker" in lines[0]
    assert "above the limit 142 MB" in lines[0] and "cluster.memory_limit >= " in lines[0]
    assert "--force-plan" in lines[0]
    # nothing started: no work folder, no output, no Prefect server
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists() and not (tmp_path / "home").exists()
    shown = subprocess.run([sys.executable, "-m", "graphshard.cli", "run", str(config), "--plan"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 1 and "fits: NO" in shown.stdout and not (tmp_path / "work").exists()


def test_a_scheduler_address_is_planned_with_the_workers_it_has(capsys, example_graph, tmp_path):
    """With `cluster.address` the plan described the local default (2 workers, memory not checked) whatever the
    scheduler had: now its workers as they are, and their memory limit checked."""
    from distributed import LocalCluster

    config = REPO / "configs" / "example.yaml"
    with LocalCluster(n_workers=3, threads_per_worker=1, memory_limit="1GB", dashboard_address=":0") as cluster:
        code, plan = plan_json(capsys, config, [*shipped("example", example_graph, tmp_path),
                                                f"cluster.address={cluster.scheduler_address}"])
        assert code == 0 and plan["settings"]["workers"] == 3 and plan["settings"]["threads"] == 1
        assert plan["limits"]["worker_memory"] == 1_000_000_000 and not plan["limits"]["external"]
    with LocalCluster(n_workers=0, dashboard_address=":0") as empty:  # no workers yet: not checked, said so
        assert main(["plan", str(config), *[x for o in [*shipped("example", example_graph, tmp_path),
                                                         f"cluster.address={empty.scheduler_address}"]
                                             for x in ("--set", o)]]) == 0
        shown = capsys.readouterr().out
        assert "the scheduler has no workers yet: their memory is not checked, and `graphshard run` stops" in shown


def test_a_limit_no_worker_starts_under_is_refused_even_when_forced(tmp_path, example_graph):
    """Below an idle worker's size the nanny restarts workers for ever: run --force-plan and shuffle refuse it."""
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"input": {"metadata": str(example_graph)}, "output": {"dir": str(tmp_path / "o")},
                                      "num_parts": 2, "work_dir": str(tmp_path / "work"),
                                      "cluster": {"memory_limit": "60MB"}}))
    env = {**os.environ, "GRAPHSHARD_HOME": str(tmp_path / "home"), "GRAPHSHARD_LOG_DIR": str(tmp_path / "logs")}
    env.pop("GRAPHSHARD_PREFECT", None)
    commands = (["run", str(config), "--force-plan"],
                ["shuffle", "--in", str(example_graph), "--partitions", str(tmp_path), "--out", str(tmp_path / "s"),
                 "--memory-limit", "60MB"])
    for command, key in zip(commands, ("cluster.memory_limit", "--memory-limit")):
        proc = subprocess.run([sys.executable, "-m", "graphshard.cli", *command], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert f"{key}: 60 MB per worker is below what an idle Dask worker" in proc.stderr
        assert "give at least 0.1" in proc.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "s").exists()


def test_advice_names_what_the_peak_grows_with():
    """A partition-sized peak gets a partition count that fits, a chunk-sized one a chunk size that fits."""
    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    s = Settings(num_parts=4, orig_nids=True, orig_eids=True)
    shuffle = next(st for st in plan_steps(g, s) if st.step == "shuffle")
    assert shuffle.driver == "partition"
    cap = 2_000_000_000 * fit.kill_threshold()
    advice = fit.worker_advice(g, s, shuffle, int(cap))
    parts = int(next(a for a in advice if a.startswith("num_parts >= ")).split(">= ")[1])
    assert next(st for st in plan_steps(g, Settings(**{**s.__dict__, "num_parts": parts})) if st.step == "shuffle"
                ).worker_peak <= cap
    big_chunks = GraphSizes.synthetic(5_000_000, 100_000_000, 100_000_000, 73, 4)
    ingest = plan_steps(big_chunks, s)[0]
    assert ingest.driver == "chunk" and ingest.worker_peak > cap
    advice = fit.worker_advice(big_chunks, s, ingest, int(cap))
    assert any(a.startswith("smaller edge chunks (at most ") for a in advice)


def test_fitting_parts_is_the_smallest_count_every_step_fits():
    """The bench's `--parts auto`: the least k whose every step fits; none when a step's peak does not shrink with k
    (here a chunk-sized ingest peak)."""
    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    s = Settings(num_parts=4, orig_nids=True, orig_eids=True)
    cap = int(2_000_000_000 * fit.kill_threshold())

    def fits(k: int) -> bool:
        return all(st.worker_peak <= cap for st in plan_steps(g, Settings(**{**s.__dict__, "num_parts": k})))

    k = fit.fitting_parts(g, s, cap)
    assert k is not None and k > 4 and fits(k) and not fits(k - 1)
    assert fit.fitting_parts(g, Settings(**{**s.__dict__, "num_parts": 64}), cap) == 64  # fits already: unchanged
    big_chunks = GraphSizes.synthetic(5_000_000, 100_000_000, 100_000_000, 73, 4)
    assert fit.fitting_parts(big_chunks, s, cap) is None


def test_disk_short_of_the_plan_is_refused(tmp_path, example_graph, monkeypatch):
    cfg = load_config(REPO / "configs" / "example.yaml", shipped("example", example_graph, tmp_path))
    real = fit.shutil.disk_usage
    monkeypatch.setattr(fit.shutil, "disk_usage", lambda p: real(p)._replace(free=1_000_000))
    with pytest.raises(gate.PlanRefused) as err:
        gate.check(cfg, check_config(cfg))
    assert str(err.value).startswith("plan: disk: predicted space needed ") and "work_dir" in str(err.value)
    assert "above the limit 1 MB" in str(err.value)
    # an earlier run's artifacts in the work folder (a cached re-run writes nothing): not refused
    done = tmp_path / "work" / "shuffle" / "key" / "partitions"
    done.mkdir(parents=True)
    (done / "part0.bin").write_bytes(b"x" * 8_000_000)
    assert not gate.check(cfg, check_config(cfg)).misfits


def test_methods_that_pack_edge_keys_need_fewer_than_2_31_nodes():
    g = GraphSizes.synthetic(3_000_000_000, 6_000_000_000, 5_000_000)
    for method, refused in (("multilevel", True), ("metis", True), ("random", False)):
        found = fit.width_misfits(g, Settings(num_parts=64, method=method))
        assert bool(found) == refused
    assert "3,000,000,000" in fit.width_misfits(g, Settings(num_parts=64, method="metis"))[0].line()


def test_validation_scan_follows_the_partition_not_the_graph():
    """The scan keeps a partition's original and halo edge IDs (or marks them, whichever is smaller) and reads the
    graph-sized maps a window at a time: at a fixed partition size its memory does not grow with the graph (before:
    a byte per edge of the graph per kind of ID and 9 per node, 25 GB per worker predicted at 10B edges)."""
    from graphshard.validate.checks import KEPT_BYTES

    def scan(nodes: int, parts: int, **changes) -> int:
        g = GraphSizes.synthetic(nodes, 20 * nodes, 5_000_000, 73, 4)
        base = Settings(num_parts=parts, orig_nids=True, orig_eids=True, remote_share=False)  # the scan alone
        s = Settings(**{**base.__dict__, **changes})
        return next(st for st in plan_steps(g, s) if st.step == "validate").worker_peak

    edges = scan(25_000_000, 19) - scan(25_000_000, 19, orig_eids=False)
    assert 0.9 < edges / (KEPT_BYTES * 500_000_000 / 19) < 1.2  # the partition's edge IDs, kept
    assert scan(25_000_000, 19, halo_mode="in_edges") < scan(25_000_000, 19)  # halo edges' IDs: none to keep
    assert scan(2_500_000_000, 1_900) < 1.05 * scan(25_000_000, 19)  # 100x the graph, same partitions


def test_shuffle_write_task_follows_the_partition_not_the_graph():
    """The write task's new -> local IDs are dense over at most `WINDOW_IDS` IDs (`shuffle.local_ids`): at a fixed
    partition size its predicted peak does not grow with the graph (before: 3 + 4 B per node of the graph, 3.5 GB at
    10B edges, so at 10B and 100B no partition count fitted a 2 GB worker with `random`)."""
    def write(nodes: int, parts: int) -> int:
        g = GraphSizes.synthetic(nodes, 20 * nodes, 5_000_000, 73, 4)
        step = next(st for st in plan_steps(g, Settings(num_parts=parts, remote_share=False)) if st.step == "shuffle")
        assert step.peak_task.startswith("write-partitions")
        return step.worker_peak

    assert write(5_000_000_000, 10_000) < 1.05 * write(500_000_000, 1_000)  # 10x the graph, same partitions
    assert write(500_000_000, 1_000) < 1.05 * write(50_000_000, 100)


def test_node_balanced_partitions_hold_more_of_a_power_law_graphs_edges_as_k_grows():
    """multilevel balances nodes: on R-MAT its largest partition held 2.92x the mean edges at k=4 (20M edges),
    3.47x at k=15 and 4.53x at k=19 (100M, the shuffle tasks that died); random stays near 1 at any k."""
    from graphshard.plan.model import edge_imbalance

    base = coefficients.load()["edge_imbalance"]
    assert edge_imbalance(Settings(num_parts=4, method="multilevel")) == base["multilevel"]
    assert 3.47 <= edge_imbalance(Settings(num_parts=15, method="multilevel")) < 4.3  # the fit over-predicts k=15
    assert 4.4 < edge_imbalance(Settings(num_parts=19, method="multilevel")) < 4.7
    assert edge_imbalance(Settings(num_parts=512, method="random")) == base["random"]


def test_a_shuffle_over_the_limit_by_edge_imbalance_is_told_to_balance_edges(tmp_path, example_graph, monkeypatch):
    """multilevel at 100M edges, k=19, 2 GB workers (bench/plan.py's run whose write task died): its node-balanced
    partitions hold ~4.5x the mean edges, the shuffle does not fit; with `balance_edges` it does, so the refusal line
    names `assign.balance_edges: true` before a memory limit or a partition count. Off stays the default."""
    from graphshard.plan import build

    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    monkeypatch.setattr(build.GraphSizes, "of", classmethod(lambda cls, graph: g))
    real = fit.shutil.disk_usage
    monkeypatch.setattr(fit.shutil, "disk_usage", lambda p: real(p)._replace(free=10**15))
    sets = shipped("example", example_graph, tmp_path) + [
        "num_parts=19", "assign.method=multilevel", "cluster.workers=2", "cluster.threads_per_worker=1",
        "cluster.memory_limit=2GB", "shuffle.save_orig_nids=true", "shuffle.save_orig_eids=true"]
    cfg = load_config(REPO / "configs" / "example.yaml", sets)
    assert cfg.assign.balance_edges is False
    with pytest.raises(gate.PlanRefused) as err:
        gate.check(cfg, check_config(cfg))
    line = str(err.value)
    assert line.startswith("plan: shuffle: predicted peak per worker ") and "write-partitions" in line
    advice = line.split(": ", 3)[3]
    assert advice.startswith("assign.balance_edges: true (") and advice.index("balance_edges") < advice.index(
        "cluster.memory_limit >= ") < advice.index("num_parts >= ")
    balanced = load_config(REPO / "configs" / "example.yaml", sets + ["assign.balance_edges=true"])
    assert gate.check(balanced, check_config(balanced)).fits
    # random balances nodes at random: near 1 already, and it has no balance_edges to name
    s = Settings(num_parts=4, orig_nids=True, orig_eids=True)
    shuffle = next(st for st in plan_steps(g, s) if st.step == "shuffle")
    assert not any("balance_edges" in a for a in fit.worker_advice(g, s, shuffle, 1))


def test_balance_edges_flattens_the_edge_imbalance_and_skews_the_nodes():
    """With `balance_edges` multilevel balances in-degrees (a partition's owned edges): R-MAT 50k measured 1.025-1.030
    at k = 4 to 28, R-MAT 100M 1.030 at k=8; the nodes go the other way (R-MAT 100M: 3.06x the mean at k=8). Off:
    nodes at the mean."""
    from graphshard.plan.model import edge_imbalance, node_imbalance, shape

    on = [Settings(num_parts=k, method="multilevel", balance_edges=True, balance_columns=1) for k in (4, 19, 512)]
    assert all(1.0 < edge_imbalance(s) < 1.1 for s in on)
    assert node_imbalance(on[0]) == coefficients.load()["node_imbalance_balanced"]["multilevel"]
    assert 3 < node_imbalance(on[1]) < 6 and node_imbalance(replace(on[0], num_parts=8)) == pytest.approx(3.06, 0.01)
    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    off = Settings(num_parts=19, method="multilevel")
    assert node_imbalance(off) == 1.0 and shape(g, off).owned_nodes == g.nodes / 19
    assert shape(g, on[2]).owned_nodes <= g.nodes


def test_balance_edges_adds_nothing_per_node_to_the_flow_process():
    """The chunk tasks sum in-degrees per (column, partition), so `balance_edges` leaves the flow process as it was
    (R-MAT 100M, 20 chunks: 1.27 GB measured when every chunk's array over the nodes was gathered there); balance
    classes add their numbering's transient per node in the assign step only."""
    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    off = Settings(num_parts=8, method="multilevel")
    on = Settings(num_parts=8, method="multilevel", balance_edges=True, balance_columns=1)
    classes = Settings(num_parts=8, method="multilevel", balance_edges=True, balance_columns=2)
    steps_off, steps_on, steps_cls = plan_steps(g, off), plan_steps(g, on), plan_steps(g, classes)
    assert steps_on[1].flow_peak == steps_off[1].flow_peak < 0.5e9
    assert steps_cls[1].flow_peak - steps_on[1].flow_peak == CLASS_COLUMN_BYTES * g.nodes
    assert steps_cls[2].flow_peak == steps_on[2].flow_peak  # freed after the step


def test_auto_parts_and_advice_keep_the_run_to_run_margin():
    """Identical runs put one partition's write task at 1.76-1.89 GB (R-MAT 100M, multilevel k=8, balance_edges),
    so `fitting_parts` (bench/plan.py's `--parts auto`) and the advice aim `peak_margin` below the kill threshold;
    a plan inside the margin still fits (the refusal is at the threshold) and says it is close."""
    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    s = Settings(num_parts=4, method="multilevel", balance_edges=True, balance_columns=1, orig_nids=True,
                 orig_eids=True)
    cap = int(2_000_000_000 * fit.kill_threshold())
    aim = fit.headroom(cap)
    assert 1.07 < cap / aim < 1.08 and coefficients.load()["peak_margin"] == 0.075

    def peak(k: int) -> int:
        return max(st.worker_peak for st in plan_steps(g, Settings(**{**s.__dict__, "num_parts": k})))

    k = fit.fitting_parts(g, s, cap)
    assert peak(k) <= aim < peak(k - 1)
    close = next(j for j in range(4, k) if aim < peak(j) <= cap)  # fits, without the margin
    steps = plan_steps(g, Settings(**{**s.__dict__, "num_parts": close}))
    lines = fit.tight(steps, fit.Limits(2_000_000_000, 10**11))
    assert lines and all("within 7.5% of the kill threshold" in line for line in lines)
    shuffle = next(st for st in steps if st.step == "shuffle")
    advice = fit.worker_advice(g, Settings(**{**s.__dict__, "num_parts": close}), shuffle, cap)
    parts = int(next(a for a in advice if a.startswith("num_parts >= ")).split(">= ")[1])
    assert parts > close and peak(parts) <= aim


def test_validation_models_the_remote_share_estimate(tmp_path, example_graph):
    """validate.remote_share (on by default) adds, per layer, a task per partition that holds its nodes' IDs and its
    draws, and gathers the drawn pairs in the flow process; the input checksums read a chunk each. R-MAT 100M
    multilevel k=5 balance_edges, no edge-ID files (2026-11-25): the largest task 0.51 GB (an input chunk's
    checksums), the flow process 0.55 GB, 105 tasks; 100M random k=4: 0.37 GB, 100 tasks."""
    g = GraphSizes.synthetic(5_000_000, 100_000_000, 5_000_000, 73, 4)
    g = replace(g, features=4, feature_files=80, edge_feature_files=20)
    on = Settings(num_parts=5, method="multilevel", balance_edges=True, balance_columns=1, orig_nids=True,
                  orig_eids=False, halo_mode="in_edges")
    off = Settings(**{**on.__dict__, "remote_share": False})
    v_on, v_off = plan_steps(g, on)[3], plan_steps(g, off)[3]
    assert v_on.peak_task.startswith("input-checksums") and v_on.tasks == 105 and v_on.tasks - v_off.tasks == 5 * 2
    assert 0.9 < v_on.worker_peak / 0.51e9 < 1.1 and 0.85 < v_on.flow_peak / 0.55e9 < 1.15
    assert v_on.flow_peak > v_off.flow_peak and v_on.seconds > v_off.seconds
    rnd = plan_steps(g, Settings(**{**on.__dict__, "num_parts": 4, "method": "random", "balance_edges": False}))[3]
    assert 0.8 < rnd.worker_peak / 0.37e9 < 1.2 and rnd.tasks == 100
    longer = Settings(**{**on.__dict__, "fanouts": (10, 25, 25)})  # one more layer: 26x the frontier's pairs
    assert plan_steps(g, longer)[3].flow_peak > v_on.flow_peak + 1e9
    cfg = load_config(REPO / "configs" / "example.yaml",
                      shipped("example", example_graph, tmp_path) + ["validate.remote_share=false"])
    assert plan_run(cfg, check_config(cfg)).settings.remote_share is False


def test_multilevel_levels_follow_the_measured_coarsening():
    """The level model against measured runs (R-MAT, 20 edges per node, `balance_edges`, bench/plan.py 2026-11-28,
    after the hub rule was removed): a level far above the node cap shrinks to it (about 20x at 100M) keeping about a
    fifth of its edges, then each level keeps about a tenth of them until the edge cap. 20M: 2 levels, 177 assign
    tasks, 0.64 GB of scratch; 100M: 3 levels, 1,189 tasks, 3.41 GB. 500M: reaches the cap in a few levels."""
    from graphshard.assign.options import multilevel_blocks
    from graphshard.plan.model import ml_levels

    for nodes, parts, levels, tasks, scratch in [(1_000_000, 4, 2, 177, 0.64e9), (5_000_000, 9, 3, 1_189, 3.41e9),
                                                  (25_000_000, 39, None, None, None)]:
        g = GraphSizes.synthetic(nodes, 20 * nodes, 5_000_000, 73, 4)
        s = Settings(num_parts=parts, method="multilevel", balance_edges=True, balance_columns=1)
        made = ml_levels(g, s)
        level0 = multilevel_blocks(20 * nodes, s.block_edges)
        assert made[-1][1] <= s.coarse_edges and [b for _, _, b in made][:2] == [level0] * 2
        if levels is None:  # level 1: as many blocks as level 0 (above)
            assert len(made) <= 5
            continue
        assert abs(len(made) - levels) <= 1
        step = plan_steps(g, s)[1]
        assert 0.8 < step.tasks / tasks < 1.25 and 0.8 < step.scratch / scratch < 1.25
    small = GraphSizes.synthetic(1_000, 20_000, 5_000, 73, 4)  # its own coarsest level: no coarsening
    assert len(ml_levels(small, Settings(num_parts=4, method="multilevel"))) == 1


def test_multilevel_vcycles_add_time_and_tasks_not_memory():
    """Each V-cycle coarsens and refines again (`ml_vcycle_share` of the step's time, its tasks again); the levels it
    makes replace the first cycle's, so the worker peak and the scratch stay."""
    g = GraphSizes.synthetic(1_000_000, 20_000_000, 5_000_000)

    def step(vcycles: int):
        s = Settings(num_parts=4, method="multilevel", vcycles=vcycles, remote_share=False)
        return next(st for st in plan_steps(g, s) if st.step == "assign")

    one, two = step(0), step(1)
    share = coefficients.load()["ml_vcycle_share"]
    assert two.seconds[1] > one.seconds[1] * (1 + share / 2) and two.tasks > 1.8 * one.tasks
    assert (two.worker_peak, two.scratch) == (one.worker_peak, one.scratch)
