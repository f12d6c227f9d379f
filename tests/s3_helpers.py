"""A local S3 for the test suite, as s3fs and dask test themselves: moto's server on a free 127.0.0.1 port with dummy
credentials, started by the suite (fixtures in conftest.py: `s3_server`, `s3_env`, `s3_bucket`).

The AWS environment is set only inside the tests that ask for it (`s3_env`, through monkeypatch), so other tests
and the developer's own AWS settings are untouched; subprocesses started by such a test (the CLI) inherit it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

DUMMY_KEY, DUMMY_SECRET, REGION = "graphshard-test-key", "graphshard-test-secret-5ec2e7", "us-east-1"
# Variables that would send boto elsewhere or give it other credentials: cleared inside s3_env.
AWS_VARS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_ENDPOINT_URL_S3", "AWS_CA_BUNDLE")


@dataclass(frozen=True)
class S3Server:
    """Where the local S3 listens and the dummy credentials it accepts."""

    endpoint: str
    key: str = DUMMY_KEY
    secret: str = DUMMY_SECRET

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.key,
                "AWS_SECRET_ACCESS_KEY": self.secret, "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}

    def options(self) -> dict:
        """The same as storage_options (no environment needed)."""
        return {"key": self.key, "secret": self.secret, "endpoint_url": self.endpoint,
                "client_kwargs": {"region_name": REGION}}

    def new_bucket(self) -> str:
        """A fresh bucket (unique name); returns `s3://<name>`."""
        import boto3

        name = f"gs-test-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key,
                     aws_secret_access_key=self.secret, region_name=REGION).create_bucket(Bucket=name)
        return f"s3://{name}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(endpoint: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextmanager
def threaded_server() -> Iterator[S3Server]:
    """moto's S3 server in a thread of this process (accepts any credentials)."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_up(endpoint)
        yield S3Server(endpoint)
    finally:
        server.stop()


@contextmanager
def process_server(env: dict | None = None) -> Iterator[S3Server]:
    """A moto server in its own process (the suite's session server and the benchmarks': the S3 side then does not
    share the client's interpreter)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_up(endpoint)
        yield S3Server(endpoint)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def authenticating_server(setup_actions: int = 0) -> Iterator[S3Server]:
    """A moto server in its own process that checks credentials after its first `setup_actions` requests
    (INITIAL_NO_AUTH_ACTION_COUNT): with 0, every key is unknown to it, so any request is refused as wrong
    credentials."""
    with process_server({**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(setup_actions)}) as server:
        yield server


READ_ONLY = {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}]}


@contextmanager
def read_only_bucket() -> Iterator[tuple[S3Server, str]]:
    """(a server whose credentials may only read and list, `s3://<bucket>`): an IAM user with a read-only policy on
    a server that checks credentials after the four set-up requests made here."""
    import boto3

    with authenticating_server(setup_actions=4) as server:
        kw = {"endpoint_url": server.endpoint, "aws_access_key_id": server.key,
              "aws_secret_access_key": server.secret, "region_name": REGION}
        iam = boto3.client("iam", **kw)
        boto3.client("s3", **kw).create_bucket(Bucket="read-only-bucket")
        iam.create_user(UserName="reader")
        iam.put_user_policy(UserName="reader", PolicyName="read-only", PolicyDocument=json.dumps(READ_ONLY))
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        yield S3Server(server.endpoint, key["AccessKeyId"], key["SecretAccessKey"]), "s3://read-only-bucket"


def _count_filesystems(dask_worker=None) -> None:
    """In a worker: count the fsspec filesystems (each its own S3 client) made per task group from now on."""
    from collections import Counter

    from dask.utils import key_split
    from distributed.worker import thread_state

    from graphshard.storage import options, overlap

    made: Counter = Counter()
    original = getattr(options.make_filesystem, "__wrapped__", options.make_filesystem)

    def task_key() -> str:
        """The task this thread runs; in a thread a task started (storage.overlap), the worker's one running task."""
        key = getattr(thread_state, "key", None)
        if key is None and threading.current_thread().name.startswith(overlap.THREAD_PREFIX):
            running = [ts.key for ts in dask_worker.state.executing]
            key = running[0] if len(running) == 1 else ""
        return str(key)

    def counted(loc, opts):
        made[key_split(task_key())] += 1
        return original(loc, opts)

    counted.__wrapped__, counted.made = original, made
    options.make_filesystem = counted


def _filesystems_made() -> dict[str, int]:
    from graphshard.storage import options

    return dict(getattr(options.make_filesystem, "made", {}))


def filesystems_per_group(client, run) -> dict[str, int]:
    """The filesystems the workers made while `run()` ran, per task group (`<step>-<what>`), the most any one
    worker made: what a task constant carrying a `Storage` costs (each copy makes its own S3 client)."""
    client.run(_count_filesystems)
    run()
    out: dict[str, int] = {}
    for made in client.run(_filesystems_made).values():
        for group, n in made.items():
            out[group] = max(out.get(group, 0), n)
    return dict(sorted(out.items()))
