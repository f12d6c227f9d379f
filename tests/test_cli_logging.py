"""A failing command prints one line naming its log file; the traceback (a Dask worker's too) is only in that file,
or on the terminal with --debug."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphshard import cli
from graphshard.assign import AssignOptions, assign


def _graph_with_a_bad_id(make_graph, tmp_path: Path) -> tuple[Path, Path]:
    src = make_graph("rmat", nodes=300, edges=3000, chunks=2, seed=5).parent
    graph = tmp_path / "graph"
    shutil.copytree(src, graph)
    asg = assign(graph / "metadata.json", tmp_path / "asg", 2, AssignOptions())
    chunk = next(iter(sorted((graph / "edges").iterdir())))
    edges = np.load(chunk)
    edges[5, 1] = 300  # headers are sound: found only when a dispatch task reads the chunk
    np.save(chunk, edges)
    return graph, asg


def _dispatch(graph: Path, asg: Path, out: Path, logs: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, GRAPHSHARD_LOG_DIR=str(logs))
    return subprocess.run([sys.executable, "-m", "graphshard.cli", "dispatch", "--in", str(graph / "metadata.json"),
                           "--partitions", str(asg), "--out", str(out), *extra],
                          capture_output=True, text=True, env=env, timeout=300)


def test_task_failure_is_one_line_with_the_traceback_in_the_log(make_graph, tmp_path):
    graph, asg = _graph_with_a_bad_id(make_graph, tmp_path)
    proc = _dispatch(graph, asg, tmp_path / "out", tmp_path / "logs")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.match(r"graphshard dispatch: error: .*_N___E___N-0\.npy: field 'edges\['_N:_E:_N'\]\.data\[0\] dst': "
                    r"expected _N IDs in \[0, 300\), found 1 out of range, first 300 at row 5 \(details: (.+\.log)\)$",
                    lines[0])
    log = Path(re.search(r"details: (.+\.log)\)$", lines[0]).group(1))
    assert log.parent == tmp_path / "logs"
    text = log.read_text()
    assert "Traceback" in text and "route_edge_chunk" in text  # the worker-side frames
    assert not (tmp_path / "out").exists()


def test_debug_prints_the_traceback(make_graph, tmp_path):
    graph, asg = _graph_with_a_bad_id(make_graph, tmp_path)
    proc = _dispatch(graph, asg, tmp_path / "out", tmp_path / "logs", "--debug")
    assert proc.returncode == 2  # as without --debug: the traceback is added, the status stays
    assert "Traceback" in proc.stderr and "InputError" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("graphshard dispatch: error: ")


def test_unexpected_error_is_one_line_exit_1(monkeypatch, tmp_path, capsys):
    from graphshard.commands import inspect

    def boom(args):
        raise RuntimeError("something unforeseen\n  and a second line of it")

    monkeypatch.setattr(inspect, "run", boom)
    assert cli.main(["inspect", str(tmp_path / "metadata.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("graphshard inspect: internal error: RuntimeError: something unforeseen")
    log = Path(re.search(r"traceback in (.+\.log);", err[0]).group(1))
    assert "Traceback" in log.read_text() and "a second line of it" in log.read_text()
    # --debug: the traceback on the terminal too, then the same line and status
    assert cli.main(["inspect", "--debug", str(tmp_path / "metadata.json")]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "a second line of it" in err
    assert err.strip().splitlines()[-1].startswith("graphshard inspect: internal error: RuntimeError: something")


@pytest.mark.parametrize("debug", [False, True])
def test_expected_dask_errors_stay_in_the_log_file(tmp_path, monkeypatch, capsys, debug):
    from graphshard import daskrun, logs  # noqa: F401 (daskrun registers the scheduler's broadcast errors)

    monkeypatch.setenv("GRAPHSHARD_LOG_DIR", str(tmp_path))
    monkeypatch.delenv("GRAPHSHARD_DEBUG", raising=False)
    path = logs.setup("test", debug=debug)
    scheduler = logging.getLogger("distributed.scheduler")
    scheduler.error("broadcast to tcp://127.0.0.1:1 failed: CommClosedError: in <TCP (closed)>")
    scheduler.error("an error of Dask's own")
    err = capsys.readouterr().err
    assert "an error of Dask's own" in err
    assert ("broadcast to tcp://127.0.0.1:1" in err) == debug
    logging.getLogger().handlers[-1].flush()
    assert "broadcast to tcp://127.0.0.1:1" in path.read_text()


@pytest.mark.parametrize("flags,words", [
    (["--workers", "-1"], "cluster.workers (--workers): expected at least 1 worker, found -1"),
    (["--scheduler", "localhost"], "expected a scheduler address like tcp://host:8786, found 'localhost'"),
])
def test_bad_cluster_flags_are_one_line_before_any_cluster(flags, words, rmat_small, capsys):
    """`inspect --check --workers -1` waited for ever for a worker; `--scheduler localhost` was an internal error."""
    assert cli.main(["inspect", str(rmat_small), "--check", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("graphshard inspect: error: ") and words in err[0], err


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    """`graphshard run ... | head -1` ended in 'internal error: BrokenPipeError' after a successful run."""
    script = ("import sys; from graphshard import cli; from graphshard.commands import inspect; "
              "inspect.run = lambda args: [print('x' * 100) for _ in range(100_000)] and 0; "
              "sys.exit(cli.main(['inspect', 'metadata.json']))")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, GRAPHSHARD_LOG_DIR=str(tmp_path)))
    assert proc.stdout.readline() == b"x" * 100 + b"\n"
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141 and proc.stderr.read() == b""


def test_counts_below_one_are_one_line(rmat_small, tmp_path, capsys):
    """`assign --workers -1` ran in this process and `fetch --transfers 0` as with 1: both now say what they take."""
    assert cli.main(["assign", "--in", str(rmat_small), "--out", str(tmp_path / "a"), "--num-parts", "2",
                     "--workers", "-1"]) == 2
    assert cli.main(["fetch", str(tmp_path / "set.json"), "--out", str(tmp_path / "f"), "--transfers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["graphshard assign: error: cluster.workers (--workers): expected at least 1 worker, found -1",
                   "graphshard fetch: error: --transfers: expected at least 1 file copied at a time, found 0"]
    assert not (tmp_path / "a").exists() and not (tmp_path / "f").exists()


def test_bad_memory_limit_flag_is_one_line(make_graph, tmp_path, capsys):
    """`shuffle --memory-limit lots` was an internal error (Dask's ValueError), exit 1."""
    graph = make_graph("rmat", nodes=300, edges=3000, chunks=2, seed=5)
    asg = assign(graph, tmp_path / "asg", 2, AssignOptions())
    code = cli.main(["shuffle", "--in", str(graph), "--partitions", str(asg), "--out", str(tmp_path / "out"),
                     "--workers", "1", "--memory-limit", "lots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--memory-limit): expected a size like '4GB' or 'auto', found 'lots'" \
        in err[0], err
    assert not (tmp_path / "out").exists()


def test_log_folder_follows_graphshard_home(monkeypatch, tmp_path):
    """Without GRAPHSHARD_LOG_DIR, a command's log goes under $GRAPHSHARD_HOME/logs, beside the Prefect server's
    state, not under the home folder."""
    from graphshard import logs

    monkeypatch.delenv("GRAPHSHARD_LOG_DIR", raising=False)
    monkeypatch.setenv("GRAPHSHARD_HOME", str(tmp_path / "home"))
    assert logs._default_dir() == tmp_path / "home" / "logs"
    monkeypatch.setenv("GRAPHSHARD_LOG_DIR", str(tmp_path / "elsewhere"))
    assert logs._default_dir() == tmp_path / "elsewhere"


def test_a_closing_clusters_comm_message_has_no_traceback_wherever_it_is_shown():
    """Dask logs 'Batched Comm Closed' at INFO with a CommClosedError traceback when a cluster closes while its
    scheduler still sends; a deployment run's log (Prefect's handlers, not ours) showed that traceback. The line
    stays, the traceback goes; other records keep theirs."""
    import io
    import logging

    import graphshard.daskrun  # noqa: F401 - registers the filter, as every step does

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    logger = logging.getLogger("distributed.batched")
    logger.addHandler(handler)
    old, logger.level = logger.level, logging.INFO
    try:
        for message in ("Batched Comm Closed <TCP (closed)>", "Something else"):
            try:
                raise OSError("comm closed")
            except OSError:
                logger.info(message, exc_info=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    text = stream.getvalue()
    assert "Batched Comm Closed <TCP (closed)>" in text and text.count("Traceback") == 1, text
    assert text.index("Traceback") > text.index("Something else"), text


def test_no_password_of_a_url_reaches_the_log_file(tmp_path, monkeypatch):
    """httpx logs every request's URL at INFO: a PREFECT_API_URL with `user:password@` wrote the password 36 times
    into the run's log file."""
    from graphshard import logs

    monkeypatch.setenv("GRAPHSHARD_LOG_DIR", str(tmp_path))
    path = logs.setup("test")
    logging.getLogger("httpx").info('HTTP Request: %s %s "%s"', "GET", "http://alice:s3cr3tpw@127.0.0.1:1/api/health",
                                    "HTTP/1.1 200 OK")
    logging.getLogger().handlers[-1].flush()
    text = path.read_text()
    assert "http://***@127.0.0.1:1/api/health" in text and "s3cr3tpw" not in text and "alice" not in text


def test_prefects_service_failures_reach_the_log_file_not_the_terminal(tmp_path):
    """The Prefect API gone mid-run: its events service logged each queued event through a stderr handler of its
    own (a screenful each), and its API log handler wrote '--- Error logging to API ---' straight to stderr, around
    graphshard's one line. Both are the run's log file's now (the terminal's rules: shown with --debug)."""
    script = """if True:
        import asyncio, logging, sys
        from graphshard import logs
        path = logs.setup("t")
        import graphshard.pipeline.flow
        from prefect.logging.handlers import APILogWorker
        logging.getLogger("prefect._internal.concurrency").error("Service %r failed to process item %r",
                                                                  "EventsWorker", "Event(" + "x" * 5000 + ")")

        class Gone:
            async def create_logs(self, items):
                raise OSError("All connection attempts failed")

        worker = APILogWorker.__new__(APILogWorker)
        worker._client = Gone()
        asyncio.run(worker._handle_batch([{"message": "m"}]))
        print(path)
    """
    env = {**os.environ, "GRAPHSHARD_LOG_DIR": str(tmp_path)}
    env.pop("GRAPHSHARD_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "Service 'EventsWorker' failed to process item" in Path(done.stdout.strip()).read_text()
