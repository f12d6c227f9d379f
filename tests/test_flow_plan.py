"""The flow itself checks the plan: a deployment that calls it directly (no `graphshard run` in front) is refused
before any work when the plan does not fit, and `force_plan` runs it anyway."""

from __future__ import annotations

import pytest
from flow_helpers import write_config

from graphshard.errors import GraphshardError
from graphshard.plan import fit


def test_flow_called_directly_checks_the_plan(tmp_path, rmat_small, dask_address, monkeypatch):
    from graphshard.pipeline.flow import run_pipeline

    config = write_config(tmp_path, rmat_small, dask_address)
    real = fit.shutil.disk_usage
    monkeypatch.setattr(fit.shutil, "disk_usage", lambda p: real(p)._replace(free=1_000))
    with pytest.raises(GraphshardError) as err:
        run_pipeline(config)
    assert str(err.value).startswith("plan: disk: predicted space needed ") and "--force-plan" in str(err.value)
    work = tmp_path / "work"
    assert not (tmp_path / "out").exists()
    assert not [d for d in ("ingest", "assign", "shuffle", "validate") if (work / d).exists()]  # no step ran
    summary = run_pipeline(config, force_plan=True)
    assert set(summary["steps"].values()) == {"Completed"}
    assert (tmp_path / "out" / "rmat.json").exists()
