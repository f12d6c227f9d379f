"""Where a command's messages go: one line per problem on the terminal, everything (tracebacks too) in a log file.

Each command run logs to its own file, `<log dir>/<command>-<time>-<pid>.log` (log dir: `$GRAPHSHARD_LOG_DIR`,
else `$GRAPHSHARD_HOME/logs`, default `~/.graphshard/logs`, else a temporary folder); `graphshard run` moves it into
its work folder. The terminal gets warnings without tracebacks; `--debug` (or `GRAPHSHARD_DEBUG=1`) prints everything,
tracebacks included, and leaves Dask's own worker and nanny messages on.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from pathlib import Path

KEEP = 50  # log files kept per folder; older ones are removed when a new one starts
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_state: dict = {"file": None, "handler": None, "terminal": None, "debug": False}
_quiet: set[str] = set()  # libraries whose errors graphshard itself reports as one line (see quiet_on_terminal)
_quiet_messages: set[tuple[str, str]] = set()  # (library, message start): errors graphshard expects and handles


class _NoTraceback(logging.Formatter):
    """The terminal's format: the message alone, never the traceback (that is in the log file)."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.name.split('.')[0]}: {record.getMessage()}"


def debug_enabled() -> bool:
    """True when the user asked for tracebacks and Dask's own logs on the terminal."""
    return _state["debug"] or os.environ.get("GRAPHSHARD_DEBUG", "") not in ("", "0")


def log_file() -> Path | None:
    """The file this process logs to, if `setup` was called."""
    return _state["file"]


def _default_dir() -> Path:
    home = os.environ.get("GRAPHSHARD_HOME") or Path.home() / ".graphshard"  # as the Prefect server's state
    for candidate in (os.environ.get("GRAPHSHARD_LOG_DIR"), Path(home) / "logs",
                      Path(tempfile.gettempdir()) / "graphshard-logs"):
        if candidate:
            try:
                Path(candidate).mkdir(parents=True, exist_ok=True)
                if os.access(candidate, os.W_OK):
                    return Path(candidate)
            except OSError:
                continue
    raise OSError("no writable folder for graphshard's log file")


def quiet_on_terminal(library: str) -> None:
    """Keep a library's messages (e.g. Prefect's task-failure tracebacks) off the terminal unless --debug: graphshard
    reports the same failure as its one line. They still go to the log file."""
    _quiet.add(library)


def quiet_message(library: str, start: str) -> None:
    """Keep one kind of a library's errors off the terminal unless --debug: one graphshard expects and handles
    (e.g. Dask's scheduler failing to reach a worker that just died, which the run's own line reports)."""
    _quiet_messages.add((library, start))


def adopt(logger: str) -> None:
    """Send a library logger that writes to stderr through handlers of its own (Prefect's `prefect._internal`: a
    failing service logs each queued item, a screenful each) through graphshard's instead: all of it to the log
    file, and to the terminal by the rules of `_for_terminal`."""
    target = logging.getLogger(logger)
    for handler in list(target.handlers):
        if type(handler) is not logging.FileHandler and isinstance(handler, logging.StreamHandler):
            target.removeHandler(handler)
    target.propagate = True


class _Untraced(logging.Filter):
    """Passes every record, without the traceback of those whose message starts with `start`."""

    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith(self.start):
            record.exc_info = record.exc_text = None
        return True


def untraced(logger: str, start: str) -> None:
    """Log one kind of a library's informational record without its traceback, wherever it is shown (a Prefect
    deployment run's log too, which no handler of ours formats): a benign race it reports with one."""
    logging.getLogger(logger).addFilter(_Untraced(start))


def _redacted(record: logging.LogRecord) -> bool:
    """Any library's record without a URL's user and password or a signed URL's secret (httpx logs each request's
    URL: a PREFECT_API_URL with `user:password@` put the password in the log file)."""
    from graphshard.storage.locations import redact

    text = record.getMessage()
    if "@" in text or "=" in text:
        shown = redact(text)
        if shown != text:
            record.msg, record.args = shown, None
    return True


def _for_terminal(record: logging.LogRecord) -> bool:
    """graphshard's messages; other libraries' errors, except those of quieted libraries (all of them with --debug)."""
    if record.name.startswith("graphshard"):
        return True
    if record.levelno < logging.ERROR:
        return False
    library = record.name.split(".")[0]
    return _state["debug"] or (library not in _quiet and not any(
        library == lib and record.getMessage().startswith(start) for lib, start in _quiet_messages))


def setup(command: str, debug: bool = False) -> Path:
    """Log to a fresh file for this command run and to the terminal (warnings only unless `debug`)."""
    _state["debug"] = False  # an earlier command's --debug (tests run several in one process) does not carry over
    _state["debug"] = debug or debug_enabled()
    root = logging.getLogger()
    root.setLevel(logging.INFO)  # other libraries' INFO and up; graphshard's own DEBUG (tracebacks) too
    if _state["terminal"] is not None:  # a second command in one process (tests): replace, don't stack
        root.removeHandler(_state["terminal"])
    terminal = logging.StreamHandler(sys.stderr)
    terminal.setLevel(logging.DEBUG if _state["debug"] else logging.WARNING)
    terminal.setFormatter(logging.Formatter(FORMAT) if _state["debug"] else _NoTraceback())
    terminal.addFilter(_redacted)
    terminal.addFilter(_for_terminal)
    root.addHandler(terminal)
    _state["terminal"] = terminal
    logging.getLogger("graphshard").setLevel(logging.DEBUG)
    return move_to(_default_dir(), command)


def move_to(folder: Path, command: str) -> Path:
    """Continue logging in a new file in `folder` (e.g. the run's work folder), with what was logged so far; returns
    its path. A folder that cannot take it (a full disk) keeps the current file, which the failure lines then name
    (the run's own writes there fail with their own line)."""
    folder = Path(folder)
    path = folder / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    old, old_file = _state["handler"], _state["file"]
    carried = old_file is not None and old_file.exists() and old_file.parent != folder
    root = logging.getLogger()
    if old is not None:
        root.removeHandler(old)
        old.close()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _prune(folder)
        if carried:
            path.write_bytes(old_file.read_bytes())
    except OSError:
        if old is None:
            raise
        path.unlink(missing_ok=True)
        root.addHandler(old)  # reopens its file (append) on the next record
        return old_file
    if carried:
        old_file.unlink()
    handler = logging.FileHandler(path, delay=True, encoding="utf-8")
    handler.addFilter(_redacted)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    _state.update(file=path, handler=handler)
    return path


def _prune(folder: Path) -> None:
    """Keep the newest KEEP log files of a folder."""
    logs = sorted(folder.glob("*.log"), key=lambda p: p.stat().st_mtime)
    for old in logs[:-KEEP] if len(logs) >= KEEP else []:
        old.unlink(missing_ok=True)


def record_failure(err: BaseException) -> Path | None:
    """Write a failure with its traceback (and any Dask worker traceback it carries) to the log file."""
    logging.getLogger("graphshard").debug("command failed: %s", err, exc_info=err)
    handler = _state["handler"]
    if handler is not None:
        handler.flush()
    return _state["file"]
