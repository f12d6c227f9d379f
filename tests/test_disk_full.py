"""A disk that fills up during a run: one line that says "no space left", where, and what to change.

Real: a few-MB tmpfs (root only; skipped otherwise). Simulated: bucket writes that raise ENOSPC, or numpy's short
write (no errno), in-process and on Dask workers (the exception crosses the wire)."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from graphshard import assign as assign_pkg
from graphshard import diskfull
from graphshard.errors import GraphshardError
from graphshard.shuffle import ShuffleOptions, shuffle

SHORT_WRITE = "220977 requested and 97423 written"


@pytest.fixture()
def assignment(tmp_path, rmat_small) -> Path:
    return assign_pkg.assign(rmat_small, tmp_path / "assignment", 3, assign_pkg.AssignOptions(method="random"))


@pytest.fixture(autouse=True)
def _no_watched_locations():
    yield
    diskfull.watch({})


def _full_disk(errors):
    def write_bucket(path, arrays):
        raise errors(path)
    return write_bucket


@pytest.mark.parametrize("kind", ["enospc", "short-write"])
def test_bucket_write_on_a_full_disk_is_one_line(tmp_path, rmat_small, assignment, monkeypatch, kind):
    scratch = tmp_path / "scratch"
    diskfull.watch({"work_dir": tmp_path / "work", "shuffle.scratch_dir": scratch})
    make = ((lambda p: OSError(errno.ENOSPC, "No space left on device", str(p))) if kind == "enospc"
            else (lambda p: OSError(SHORT_WRITE)))
    monkeypatch.setattr("graphshard.shuffle.exchange.write_bucket", _full_disk(make))
    with pytest.raises(GraphshardError) as err:
        shuffle(rmat_small, assignment, tmp_path / "out", ShuffleOptions(scratch_dir=scratch), None)
    line = str(err.value)
    assert "\n" not in line and "no space left on device in " in line
    assert line.startswith("shuffle: route-node-blocks _N/block0: ") or line.startswith("shuffle: route-edge-chunks")
    if kind == "enospc":  # the file names its folder
        assert f"shuffle.scratch_dir ({scratch}: " in line and "set shuffle.scratch_dir to a larger filesystem" in line
    else:  # no file name: the watched location with the least free space (same filesystem here: the first)
        assert "MB free of " in line and "free space there or set " in line
    assert "nothing was published" in line and not (tmp_path / "out").exists()


def test_what_counts_as_a_full_disk():
    assert diskfull.is_full(OSError(SHORT_WRITE)) and diskfull.is_full(OSError(errno.EDQUOT, "quota"))
    assert diskfull.is_full(OSError(errno.ENOSPC, "No space left on device"))
    assert not diskfull.is_full(OSError(errno.EACCES, "denied")) and not diskfull.is_full(ValueError(SHORT_WRITE))


@pytest.mark.parametrize("on_dask", [False, True])
def test_a_real_full_filesystem(tmp_path, rmat_small, assignment, tiny_tmpfs, on_dask, request):
    """In this process and on Dask workers (the worker's OSError comes back through Dask): the same line."""
    client = request.getfixturevalue("dask_cluster_client") if on_dask else None
    diskfull.watch({"work_dir": tiny_tmpfs})
    with pytest.raises(GraphshardError) as err:
        shuffle(rmat_small, assignment, tiny_tmpfs / "out", ShuffleOptions(save_orig_eids=True), client)
    line = str(err.value)
    assert line.startswith("shuffle: ") and f"no space left on device in work_dir ({tiny_tmpfs}: " in line
    assert "set work_dir to a larger filesystem" in line and "\n" not in line
    assert not (tiny_tmpfs / "out").exists() and not list(tiny_tmpfs.iterdir())  # staging removed


@pytest.mark.slow
def test_graphshard_run_on_a_full_work_disk(tmp_path, rmat_small, tiny_tmpfs, capsys):
    """`graphshard run --force-plan` past the plan's disk refusal: the step that fills the disk ends the run with
    the one line; nothing is published."""
    import flow_helpers  # noqa: F401  (Prefect's test environment, before the CLI imports Prefect)
    import yaml

    from graphshard.cli import main

    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"input": {"metadata": str(rmat_small)}, "output": {"dir": str(tmp_path / "out")},
                                      "work_dir": str(tiny_tmpfs / "work"), "num_parts": 3,
                                      "shuffle": {"save_orig_eids": True, "save_orig_nids": True},
                                      "cluster": {"workers": 1, "memory_limit": "1GB"}}))
    assert main(["run", str(config)]) == 2
    assert capsys.readouterr().err.startswith("graphshard run: error: plan: disk: predicted space needed ")
    assert main(["run", str(config), "--force-plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("graphshard run: error: ") and "no space left on device in work_dir (" in err
    assert "set work_dir to a larger filesystem" in err and not (tmp_path / "out").exists()


def _fill(folder: Path) -> None:
    """Write into `folder` until its filesystem is full."""
    with open(folder / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC


def test_a_command_on_a_full_disk_names_its_folder_and_the_log_stays_where_it_was(tmp_path, tiny_tmpfs, capsys,
                                                                                monkeypatch):
    """A command's own write (generate's files) on a full disk: one line naming the flag's folder, exit 2; a log
    that cannot move onto the full disk (a run moves it into work_dir) keeps its file and content."""
    from graphshard import logs
    from graphshard.cli import main

    monkeypatch.setenv("GRAPHSHARD_LOG_DIR", str(tmp_path / "logs"))
    _fill(tiny_tmpfs)
    assert main(["generate", "rmat", "--out", str(tiny_tmpfs / "g"), "--nodes", "2000", "--edges", "20000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"graphshard generate: error: no space left on device in --out "
                                               f"({tiny_tmpfs / 'g'}: "), err
    assert err[0].endswith("free space there or set --out to a larger filesystem")
    first = logs.setup("run")
    logging.getLogger("graphshard").warning("before the move")
    assert logs.move_to(tiny_tmpfs / "logs", "run") == first
    logging.getLogger("graphshard").warning("after the move")
    assert "before the move" in first.read_text() and "after the move" in first.read_text()


def test_a_copys_full_destination_is_named_not_its_source(tmp_path):
    """Publishing copies from work_dir into output.dir's staging sibling: the copy's error names the source first
    (shutil's sendfile), and the line blamed work_dir, which had room."""
    out = tmp_path / "full" / "out"
    diskfull.watch({"work_dir": tmp_path / "work", "output.dir": out})
    err = OSError(errno.ENOSPC, "No space left on device")
    err.filename = str(tmp_path / "work" / "shuffle" / "k" / "part0" / "graph.dgl")
    err.filename2 = str(tmp_path / "full" / ".out.tmp-1234" / "part0" / "graph.dgl")
    line = diskfull.line("publish", err)
    assert f"no space left on device in output.dir ({out}: " in line and "set output.dir to a larger" in line
