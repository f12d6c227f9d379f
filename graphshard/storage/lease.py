"""Leases on a store (or a folder hosts share): a prefix a run works in (a scratch root, a step's cache build, an
output it is publishing to) is marked by a small record its process rewrites while it works, so that a later run
can delete what a killed run left there, and leave alone what a live one is writing. A store has no process to ask
whether it is alive, and hosts share no clock but the store's: a lease's age is its record's time against the
asking run's own record, both stamped by the store."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import uuid
from contextlib import contextmanager
from typing import Iterator

from graphshard.storage.failures import StorageError
from graphshard.storage.locations import Location
from graphshard.storage.store import Storage

LEASES = ".leases"  # the records of a scratch folder's prefixes, `<where>/.leases/<name>.json`
DEFAULT_SECONDS = 3600.0
log = logging.getLogger(__name__)


def lease_seconds() -> float:
    """How long a record may go unrenewed before its run counts as dead (`GRAPHSHARD_LEASE` seconds; default an
    hour: a paused process keeps its prefixes that long, a killed one's stay that long)."""
    return float(os.environ.get("GRAPHSHARD_LEASE") or DEFAULT_SECONDS)


@contextmanager
def held(storage: Storage, where: Location, name: str) -> Iterator[None]:
    """Hold `<where>/<name>` under a lease while the block runs: the record is written, renewed every quarter lease
    by a thread of this process, and deleted on exit (after the block has deleted the prefix itself)."""
    record = where.join(LEASES).join(f"{name}.json")
    body = json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode()
    storage.write_bytes(record, body)
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(storage, record, body, stop), daemon=True,
                               name=f"graphshard-lease-{name}")
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        try:
            storage.delete_prefix(record)
        except StorageError as e:  # the block's own outcome stands; the record lapses and a later run sweeps
            log.warning("could not delete the lease %s: %s", record, e)


def _renew(storage: Storage, record: Location, body: bytes, stop: threading.Event) -> None:
    while not stop.wait(max(0.1, lease_seconds() / 4)):
        try:
            storage.write_bytes(record, body)
        except StorageError as e:  # the next renewal tries again; a lease lost for good fails the run elsewhere
            log.warning("could not renew the lease %s: %s", record, e)


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
