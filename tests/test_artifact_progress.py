"""The step's Prefect progress artifact: throttled updates, the final counts always shown, a stopped step never
shown complete."""

from __future__ import annotations

from graphshard.pipeline.steps import common


def test_updates_are_throttled_and_the_last_counts_are_shown_on_close(monkeypatch):
    sent: list[tuple[float, str]] = []
    clock = [100.0]
    monkeypatch.setattr(common, "create_progress_artifact", lambda *a, **k: "artifact-id")
    monkeypatch.setattr(common, "update_progress_artifact",
                        lambda aid, pct, description=None: sent.append((pct, description)))
    monkeypatch.setattr(common.time, "monotonic", lambda: clock[0])

    progress = common.ArtifactProgress("shuffle", every=2.0)
    progress(1, 8, "route-edge-chunks _N:_E:_N/chunk0")
    assert sent == []  # created just now: nothing new worth an API call yet
    clock[0] += 2.5
    progress(2, 8, "route-edge-chunks _N:_E:_N/chunk1")
    clock[0] += 0.5
    progress(3, 8, "route-edge-chunks _N:_E:_N/chunk2")
    progress(7, 8, "write-partitions part3")
    assert sent == [(25.0, "shuffle: 2/8 Dask tasks finished; running route-edge-chunks _N:_E:_N/chunk1")]
    progress(8, 8, "write-partitions part3")
    progress.close()
    assert sent[-1] == (100.0, "shuffle: 8/8 Dask tasks finished")
    assert len(sent) == 2


def test_close_sends_nothing_when_the_final_counts_are_already_shown(monkeypatch):
    sent: list[float] = []
    clock = [0.0]
    monkeypatch.setattr(common, "create_progress_artifact", lambda *a, **k: "artifact-id")
    monkeypatch.setattr(common, "update_progress_artifact", lambda aid, pct, description=None: sent.append(pct))
    monkeypatch.setattr(common.time, "monotonic", lambda: clock[0])
    progress = common.ArtifactProgress("assign", every=1.0)
    clock[0] = 5.0
    progress(4, 4)
    progress.close()
    assert sent == [100.0]


def test_a_step_stopped_midway_is_not_shown_complete(monkeypatch):
    sent: list[tuple[float, str]] = []
    monkeypatch.setattr(common, "create_progress_artifact", lambda *a, **k: "artifact-id")
    monkeypatch.setattr(common, "update_progress_artifact",
                        lambda aid, pct, description=None: sent.append((pct, description)))
    progress = common.ArtifactProgress("shuffle", every=0.0)
    progress(12, 14, "route-edge-chunks _N:_E:_N/chunk7")
    progress.close(failed=True)  # a task failed, or the run was cancelled from the UI (was shown 100%)
    assert sent[-1] == (85.7, "shuffle: stopped (failed or cancelled) with 12/14 Dask tasks finished")
