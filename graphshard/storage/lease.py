"""Leases on a store (or a folder hosts share): a prefix a run works in (a scratch root, a step's cache build, an
output it is publishing to) is marked by a small record its process rewrites while it works, so that a later run
can delete what a killed run left there, leave alone what a live one is writing, and wait for a live one building
what it needs (`claimed`). A store has no process to ask whether it is alive, and hosts share no clock but the
store's: a lease's age is its record's time against the asking run's own record, both stamped by the store."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator

from graphshard.storage.failures import StorageError
from graphshard.storage.locations import Location
from graphshard.storage.store import Storage

LEASES = ".leases"  # the records of a scratch folder's prefixes, `<where>/.leases/<name>.json`
DEFAULT_SECONDS = 600.0
POLL_SECONDS = 2.0  # how often a run waiting for another's claim looks again
log = logging.getLogger(__name__)


def lease_seconds() -> float:
    """How long a record may go unrenewed before its run counts as dead (`GRAPHSHARD_LEASE` seconds; default ten
    minutes: a paused process keeps its prefixes that long, a killed one's stay that long, and a run waits that
    long for a claim that a run killed on another host left; one on this host is taken over at once)."""
    return float(os.environ.get("GRAPHSHARD_LEASE") or DEFAULT_SECONDS)


def alive(pid: int) -> bool:
    """Whether a process with this id runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _record(where: Location, name: str) -> Location:
    return where.join(LEASES).join(f"{name}.json")


def claimed_now(storage: Storage, where: Location, name: str) -> bool:
    """Whether a record of `name` under `where` is there now (its holder at work, or dead and not yet taken over):
    a caller that must not write where nothing is claimed asks this before `claimed`."""
    return storage.exists(_record(where, name))


def _body() -> bytes:
    """A record's content: who holds it, and a token that no other holding shares (a takeover compares it)."""
    return json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex}).encode()


@contextmanager
def held(storage: Storage, where: Location, name: str) -> Iterator[None]:
    """Hold `<where>/<name>` under a lease while the block runs: the record is written, renewed every quarter lease
    by a thread of this process, and deleted on exit (after the block has deleted the prefix itself)."""
    record, body = _record(where, name), _body()
    storage.write_bytes(record, body)
    with _renewed(storage, record, body):
        yield


@contextmanager
def claimed(storage: Storage, where: Location, name: str,
            waiting: Callable[[str], None] | None = None) -> Iterator[bool]:
    """Hold `<where>/<name>` under a lease that no other process holds at the same time (the record is created
    only where none is: `Storage.write_new`). While another live process holds it, wait, telling `waiting` once
    who it is; a holder that died (its process gone, on this host; its record unrenewed for a lease, on any) is
    taken over. Yields whether it waited, i.e. whether another process may have just built what the block builds."""
    record, body = _record(where, name), _body()
    waited, markers = False, []
    try:
        while not storage.write_new(record, body):
            holder = _live_holder(storage, where, name, markers)
            if holder is None:  # released, or its holder died: try again (a moment later, should the store lag)
                time.sleep(0.1)
                continue
            if not waited:
                (waiting or (lambda who: log.info("waiting for %s, held by %s", where.join(name), who)))(holder)
            waited = True
            time.sleep(POLL_SECONDS)
        with _renewed(storage, record, body):
            yield waited
    finally:
        for marker in markers:
            try:
                storage.delete_prefix(marker)
            except StorageError as e:  # a marker left over only slows a later takeover of that record by a lease
                log.warning("could not delete %s: %s", marker, e)


def _live_holder(storage: Storage, where: Location, name: str, markers: list[Location]) -> str | None:
    """Who holds the lease `name` under `where` ("pid P on H, renewed S s ago"); None when nobody does any more:
    the record went, or its holder died (a process gone on this host, a record unrenewed for a lease by the store's
    clock) and the record is deleted here (`_take_over`, which adds its marker to `markers`)."""
    record = _record(where, name)
    try:
        raw = storage.read_bytes(record)
    except StorageError:
        return None  # released between the attempt and this read
    try:
        who = json.loads(raw)
    except ValueError:
        who = {}
    host, pid = (who.get("host"), who.get("pid")) if isinstance(who, dict) else (None, None)
    if host == socket.gethostname() and isinstance(pid, int):
        dead, held_for = not alive(pid), "on this host"
    else:
        age = _age(storage, where, f"{name}.json")
        if age is None:
            return None
        dead, held_for = age > lease_seconds(), (f"renewed {max(age, 0.0):.0f} s ago; taken over once not renewed "
                                                 f"for {lease_seconds():.0f} s, GRAPHSHARD_LEASE")
    if dead:
        return None if _take_over(storage, where, name, raw, markers) else f"another run taking over from pid {pid}"
    return f"pid {pid} on {host}, {held_for}"


def _take_over(storage: Storage, where: Location, name: str, dead: bytes, markers: list[Location]) -> bool:
    """Delete the record of a holder judged dead, if it is still that record; False when another waiter is doing
    so. One waiter alone may (it creates the marker `<name>.gone-<digest of the record>` first, `Storage.write_new`,
    and deletes it once its own claim is released), so a waiter whose judgement came from a read older than
    another's takeover never deletes the record of the run that took over (records never repeat: each holds a token
    of its own). A marker left for a lease (its waiter killed mid-takeover) is deleted, to be taken again."""
    gone = f"{name}.gone-{hashlib.sha256(dead).hexdigest()[:16]}"
    marker = where.join(LEASES).join(gone)
    if not storage.write_new(marker, b""):
        if (_age(storage, where, gone) or 0.0) > lease_seconds():
            storage.delete_prefix(marker)
        return False
    markers.append(marker)
    try:
        if storage.read_bytes(_record(where, name)) == dead:
            log.info("taking over %s from its holder, which is gone", where.join(name))
            storage.delete_prefix(_record(where, name))
    except StorageError:
        pass  # released meanwhile
    return True


def _age(storage: Storage, where: Location, file: str) -> float | None:
    """Seconds since `<where>/.leases/<file>` was last written, by the store's clock (a probe written now; 0 on a
    store that gives no times); None when the file is gone."""
    probe = f"{file}.probe-{uuid.uuid4().hex[:8]}"  # not a `.json`: no lease's record
    storage.write_bytes(where.join(LEASES).join(probe), b"")
    stamped = storage.modified(where.join(LEASES))
    storage.delete_prefix(where.join(LEASES).join(probe))
    if not storage.exists(where.join(LEASES).join(file)):
        return None
    return stamped[probe] - stamped[file] if file in stamped and probe in stamped else 0.0


@contextmanager
def _renewed(storage: Storage, record: Location, body: bytes) -> Iterator[None]:
    """Rewrite `record` every quarter lease from a thread while the block runs; delete it after. A record another
    run holds now (this process paused past a lease and was taken over) is neither rewritten nor deleted."""
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(storage, record, body, stop), daemon=True,
                               name=f"graphshard-lease-{record.path.rsplit('/', 1)[-1]}")
    renewer.start()
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        stop.set()
        renewer.join()
        try:
            if not _taken(storage, record, body):
                storage.delete_prefix(record)
        except StorageError as e:  # the block's own outcome stands; the record lapses and a later run sweeps
            # after a failure (the store gone, say) the failure's own line says it: this goes to the log file
            log.log(logging.INFO if failed else logging.WARNING, "could not delete the lease %s: %s", record, e)


def _taken(storage: Storage, record: Location, body: bytes) -> bool:
    """Whether `record` now holds another run's record (not `body`, and not gone)."""
    try:
        return storage.read_bytes(record) != body
    except StorageError:
        return False


def _renew(storage: Storage, record: Location, body: bytes, stop: threading.Event) -> None:
    level = logging.WARNING  # the first failed renewal on the terminal, the ones after it in the log file
    while not stop.wait(max(0.1, lease_seconds() / 4)):
        try:
            if _taken(storage, record, body):
                log.warning("lost the lease %s: another run took it over while this one was not renewing it",
                            record)
                return
            storage.write_bytes(record, body)
        except StorageError as e:  # the next renewal tries again; a lease lost for good fails the run elsewhere
            log.log(level, "could not renew the lease %s: %s", record, e)
            level = logging.INFO


@contextmanager
def holding(storage: Storage, where: Location, kind: str) -> Iterator[str]:
    """`held` under a fresh name `<kind>-<random>`, after sweeping `where`'s dead leases' records; yields the name."""
    name = f"{kind}-{uuid.uuid4().hex[:12]}"
    with held(storage, where, name):
        sweep(storage, where, name)
        yield name


def _stamped(storage: Storage, where: Location) -> dict[str, float]:
    """The lease records under `where` by name, with the store's time of their last renewal."""
    return {rel[:-len(".json")]: t for rel, t in storage.modified(where.join(LEASES)).items()
            if rel.endswith(".json") and "/" not in rel}


def others_live(storage: Storage, where: Location, own: str) -> list[str]:
    """The other leases under `where` still being renewed (younger than a lease against `own`'s record, by the
    store's clock): other runs at work there now. Every other record when `own`'s is not found."""
    stamped = _stamped(storage, where)
    now = stamped.pop(own, None)
    return sorted(name for name, t in stamped.items() if now is None or now - t <= lease_seconds())


def sweep(storage: Storage, where: Location, own: str) -> list[str]:
    """Delete the prefixes under `where` whose lease expired (their run was killed: nothing renews them), each
    before its record; returns their names. `own` is the caller's held name, whose record gives the store's time
    now. Never fails the caller: a store that refuses is logged and left for a later run."""
    try:
        stamped = _stamped(storage, where)
        now = stamped.get(own)
        dead = [name for name, t in sorted(stamped.items()) if now is not None and now - t > lease_seconds()]
        for name in dead:
            storage.delete_prefix(where.join(name))
            storage.delete_prefix(where.join(LEASES).join(f"{name}.json"))
            log.info("deleted %s: its run's lease expired (the run was killed)", where.join(name))
        return dead
    except StorageError as e:
        log.warning("could not clean up what killed runs left under %s: %s", where, e)
        return []
