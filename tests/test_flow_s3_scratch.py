"""`graphshard run` with the work folder on S3 and the run's own local cluster: every worker is on this host, so
the shuffle's buckets and validation's shared arrays go to a local folder (as in a local run), never through the
store; a cluster named by address (workers that may be on other hosts) keeps them on the store. (The assignment's
small scratch stays beside its artifact.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from flow_helpers import run
from test_flow_s3 import s3_job

from graphshard.pipeline.config import load_config
from graphshard.pipeline.steps.common import scratch_dir
from graphshard.storage import Storage, location


def test_scratch_is_local_only_for_the_runs_own_cluster(tmp_path, s3_bucket):
    data = {"input": {"metadata": str(tmp_path / "g/metadata.json")}, "output": {"dir": f"{s3_bucket}/out"},
            "work_dir": f"{s3_bucket}/work", "num_parts": 2}
    cfg = load_config_from(tmp_path, data)
    stage = location(f"{s3_bucket}/work/shuffle/k")
    assert isinstance(scratch_dir(cfg, stage), Path)
    assert scratch_dir(cfg, tmp_path / "stage") is None  # a local work folder: the step's own staging folder
    remote = load_config_from(tmp_path, {**data, "cluster": {"address": "tcp://10.0.0.1:8786"}})
    assert scratch_dir(remote, stage) is None  # workers elsewhere: beside the output, on the store
    chosen = load_config_from(tmp_path, {**data, "shuffle": {"scratch_dir": f"{s3_bucket}/scratch"}})
    assert scratch_dir(chosen, stage) == location(f"{s3_bucket}/scratch")


def load_config_from(folder: Path, data: dict):
    import yaml

    (folder / "g").mkdir(exist_ok=True)
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


@pytest.mark.slow  # starts a local cluster of its own
def test_local_cluster_run_keeps_its_scratch_off_the_store(tmp_path, rmat_small, s3_env, s3_bucket, monkeypatch):
    """Every scratch root the shuffle and validation make is a local folder, and nothing of them is left on the
    store."""
    from graphshard.shuffle import step as shuffle_step
    from graphshard.validate import scratch as validate_scratch

    roots = []
    for module in (shuffle_step, validate_scratch.store):
        real = module.scratch_space

        def spy(where, *args, _real=real, **kwargs):
            roots.append(location(where))
            return _real(where, *args, **kwargs)

        monkeypatch.setattr(module, "scratch_space", spy)
    job = s3_job(s3_bucket, rmat_small, "", s3_env.options(), cluster={"workers": 2, "memory_limit": "1GB"})
    summary = run(job)
    assert summary["partition_config"] == f"{s3_bucket}/sets/rmat/rmat.json"
    steps = [r for r in roots if ".assignment.scratch" not in r.url]
    assert len(steps) == 2 and all(r.is_local for r in steps), roots
    left = [e.rel for e in Storage().listing(s3_bucket) if e.rel.endswith(".bkt") or ".validate" in e.rel]
    assert not left, left
