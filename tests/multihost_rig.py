"""A multi-host test rig on one machine: one network namespace per host (an S3 host running moto's server, a Dask
scheduler host, worker hosts), joined by a bridge in the root namespace, where the flow runs. Each worker host's
processes get their own mount namespace with a private tmpfs over /tmp and over the test's working folder, so no
host sees a file another wrote. Needs root and `ip netns`; `unavailable()` says in one line why not.

Layout and what builds on it: docs/DESIGN.md "Multi-host test rig".
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from s3_helpers import S3Server, _wait_up

from graphshard.storage.lease import alive

SUBNET_PREFIX = "10.213"  # private /24s used only inside the rig's namespaces: 10.213.<x>.0/24
SCHEDULER_PORT, DASHBOARD_PORT, S3_PORT = 8786, 8787, 5000
VENV_BIN = Path(sys.executable).parent
OWNERS = Path("/run/graphshard-rig")  # <suffix>: the pid of the process that built that rig
UNOWNED_AGE = 3600  # seconds after which a rig with no owner file (built before owners were recorded) is stale


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def unavailable() -> str | None:
    """Why the rig cannot run here (one line), or None when it can."""
    if os.geteuid() != 0:
        return f"multi-host rig needs root for network namespaces (running as uid {os.geteuid()})"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"multi-host rig needs '{tool}' (iproute2/util-linux), not found on PATH"
    probe = f"gsprobe{uuid.uuid4().hex[:6]}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"multi-host rig: 'ip netns add' failed here: {made.stderr.strip() or made.returncode}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass
class Host:
    """One host of the rig: its network namespace, its address, the root-side end of its veth pair."""

    name: str
    netns: str
    addr: str
    veth: str
    private: bool  # its processes run with a private tmpfs over /tmp and the working folder
    procs: list[subprocess.Popen] = field(default_factory=list)
    inode: int = 0  # of its network namespace: finds its processes even after the namespace's name is gone


def _free_subnet() -> str:
    """A 10.213.<x> prefix with no route in the root namespace yet (another rig running at once has its own)."""
    for _ in range(64):
        x = int.from_bytes(os.urandom(1), "big") % 250 + 2
        if not _ip("-4", "route", "show", f"{SUBNET_PREFIX}.{x}.0/24").stdout.strip():
            return f"{SUBNET_PREFIX}.{x}"
    raise RuntimeError(f"no free {SUBNET_PREFIX}.x.0/24 subnet for the multi-host rig")


class Rig:
    """Hosts `s3`, `scheduler`, `worker1..N` in network namespaces; the root namespace is the flow's host.

    `with Rig(workdir) as rig:` builds the network and starts the services; leaving the block (or the interpreter
    exiting) kills every process and removes every namespace, veth and the bridge."""

    def __init__(self, workdir: Path, workers: int = 3, services: bool = True):
        self.workdir = Path(workdir)
        self.logs = self.workdir / "rig-logs"
        self.suffix = uuid.uuid4().hex[:6]
        self.bridge = f"gsb{self.suffix}"
        self.subnet = ""
        self.worker_names = [f"worker{i}" for i in range(1, workers + 1)]
        self.services = services
        self.hosts: dict[str, Host] = {}
        self.s3 = S3Server("")
        self._closed = False

    # -- addresses -----------------------------------------------------------------------------------------
    @property
    def root_addr(self) -> str:
        return f"{self.subnet}.1"

    @property
    def scheduler_address(self) -> str:
        return f"tcp://{self.hosts['scheduler'].addr}:{SCHEDULER_PORT}"

    @property
    def dashboard_url(self) -> str:
        return f"http://{self.hosts['scheduler'].addr}:{DASHBOARD_PORT}/status"

    @property
    def s3_endpoint(self) -> str:
        return f"http://{self.hosts['s3'].addr}:{S3_PORT}"

    # -- life cycle ----------------------------------------------------------------------------------------
    def __enter__(self) -> Rig:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """The bridge, one namespace per host, then (with `services`) moto, the scheduler and the workers (after
        sweeping away rigs whose owner died without closing them: a SIGKILLed pytest)."""
        sweep_stale()
        atexit.register(self.close)
        self.logs.mkdir(parents=True, exist_ok=True)
        OWNERS.mkdir(parents=True, exist_ok=True)
        (OWNERS / self.suffix).write_text(str(os.getpid()))
        try:
            self.subnet = _free_subnet()
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.root_addr}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            names = ["s3", "scheduler", *self.worker_names]
            for i, name in enumerate(names):
                self._add_host(name, 10 + i, private=name.startswith("worker"))
            if self.services:
                self._start_services()
        except BaseException:
            self.close()
            raise

    def _add_host(self, name: str, octet: int, private: bool) -> None:
        netns, veth, peer = f"gs{self.suffix}-{name}", f"gs{self.suffix}h{octet}", f"gs{self.suffix}p{octet}"
        host = Host(name, netns, f"{self.subnet}.{octet}", veth, private)
        self.hosts[name] = host
        _ip("netns", "add", netns)
        host.inode = os.stat(f"/run/netns/{netns}").st_ino
        _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("link", "set", peer, "netns", netns)
        for args in (("link", "set", "lo", "up"), ("link", "set", peer, "name", "eth0"),
                     ("addr", "add", f"{host.addr}/24", "dev", "eth0"), ("link", "set", "eth0", "up")):
            _ip("-n", netns, *args)

    def _start_services(self) -> None:
        s3 = self.hosts["s3"]
        self.start_process("s3", [sys.executable, "-m", "moto.server", "-H", s3.addr, "-p", str(S3_PORT)])
        self.s3 = S3Server(self.s3_endpoint)
        sched = self.hosts["scheduler"]
        self.start_process("scheduler", [str(VENV_BIN / "dask"), "scheduler", "--host", sched.addr, "--port",
                                         str(SCHEDULER_PORT), "--dashboard-address", f"{sched.addr}:{DASHBOARD_PORT}"])
        for name in self.worker_names:
            self.start_worker(name)
        _wait_up(self.s3_endpoint, timeout=60)
        self.wait_for_workers(len(self.worker_names))
        http_get(self.dashboard_url)  # the first view installs the scheduler's task stream recorder: every run shows

    def start_worker(self, name: str, *extra: str) -> subprocess.Popen:
        """`dask worker` on host `name` (1 thread, its scratch in the host's private /tmp), named after the host."""
        host = self.hosts[name]
        return self.start_process(name, [str(VENV_BIN / "dask"), "worker", self.scheduler_address, "--host", host.addr,
                                         "--name", name, "--nthreads", "1", "--memory-limit", "2GiB",
                                         "--local-directory", "/tmp/dask-scratch", "--no-dashboard", *extra])

    def env(self) -> dict[str, str]:
        """What every rig process gets: this environment, the S3 host's endpoint and dummy credentials, the tests
        folder importable (Dask tasks defined in test modules), no proxy for the rig's addresses."""
        env = {**os.environ, **S3Server(self.s3_endpoint).env()}
        tests = str(Path(__file__).resolve().parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
        env["NO_PROXY"] = env["no_proxy"] = f"{self.subnet}.0/24,{env.get('NO_PROXY', '')}".rstrip(",")
        return env

    def _private_mounts(self, name: str) -> str:
        """Shell commands giving a host an empty tmpfs as /tmp and as the working folder, built aside and moved onto
        /tmp, with the code the rig runs (the checkout and its venv, when they live under /tmp, as in a CI clone)
        bound back in: no host sees a file another wrote, yet every host runs the same interpreter."""
        stage = self.workdir / f".mounts-{name}"
        stage.mkdir(exist_ok=True)
        code = [Path(p).resolve() for p in (Path(__file__).resolve().parents[1], sys.prefix)]
        keep = sorted({p for p in code if p.is_relative_to("/tmp") and not any(
            p != q and p.is_relative_to(q) for q in code)})
        q = shlex.quote
        steps = [f"mount -t tmpfs -o size=2g tmpfs {q(str(stage))}"]
        for path in keep:
            inside = stage / path.relative_to("/tmp")
            steps += [f"mkdir -p {q(str(inside))}", f"mount --bind {q(str(path))} {q(str(inside))}"]
        if self.workdir.resolve().is_relative_to("/tmp"):  # an empty folder in the new /tmp
            steps.append(f"mkdir -p {q(str(stage / self.workdir.resolve().relative_to('/tmp')))}")
            steps.append(f"mount --move {q(str(stage))} /tmp")
        else:
            steps += [f"mount --move {q(str(stage))} /tmp", f"mount -t tmpfs -o size=2g tmpfs {q(str(self.workdir))}"]
        return " && ".join(steps)

    def start_process(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """Run `argv` on host `name` (its network namespace; a worker host also its private mount namespace);
        output to `<workdir>/rig-logs/<host>.log`."""
        host = self.hosts[name]
        prefix = ["ip", "netns", "exec", host.netns]
        if host.private:
            prefix += ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       f'{self._private_mounts(name)} && exec "$@"', "sh"]
        log = open(self.logs / f"{name}.log", "ab")
        proc = subprocess.Popen(prefix + argv, env=env or self.env(), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd="/", start_new_session=True)
        log.close()
        host.procs.append(proc)
        return proc

    def wait_for_workers(self, n: int, timeout: float = 120) -> None:
        """Until `n` workers are connected; a rig process that exited meanwhile fails at once with its log's end."""
        from distributed import Client

        with Client(self.scheduler_address, timeout=timeout) as client:
            deadline = time.monotonic() + timeout
            while len(client.scheduler_info(n_workers=-1)["workers"]) < n:
                dead = [(h, p) for h in self.hosts.values() for p in h.procs if p.poll() is not None]
                if dead or time.monotonic() > deadline:
                    host = dead[0][0].name if dead else "scheduler"
                    tail = (self.logs / f"{host}.log").read_text(errors="replace")[-1500:]
                    raise RuntimeError(f"multi-host rig: {n} workers not connected; {host} log ends:\n{tail}")
                time.sleep(0.3)

    # -- faults --------------------------------------------------------------------------------------------
    def pids(self, name: str) -> list[int]:
        """Every process in host `name`'s network namespace."""
        out = _ip("netns", "pids", self.hosts[name].netns, check=False).stdout
        return [int(p) for p in out.split()]

    def kill_host(self, name: str) -> None:
        """Every process of host `name` gets SIGKILL (the host is lost: nothing runs its shutdown)."""
        deadline = time.monotonic() + 10
        while self.pids(name) and time.monotonic() < deadline:  # again for children forked meanwhile, and until
            self._signal(name, signal.SIGKILL)                 # the killed ones are gone from the namespace
            self._reap(name)
            time.sleep(0.1)
        self.hosts[name].procs.clear()

    def _signal(self, name: str, sig: int) -> None:
        for pid in self.pids(name):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _reap(self, name: str) -> None:
        for proc in self.hosts[name].procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def set_link(self, name: str, up: bool) -> None:
        """Cut host `name` off the bridge (or reconnect it): its veth end in the root namespace goes down/up."""
        _ip("link", "set", self.hosts[name].veth, "up" if up else "down")

    # -- cleanup -------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill every process of every host, delete the namespaces (their veths go with them) and the bridge."""
        if self._closed:
            return
        self._closed = True
        for name in self.hosts:
            self._signal(name, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(self.pids(name) for name in self.hosts):
            for host in self.hosts.values():  # reap the processes started here: a zombie still counts as a pid
                for proc in host.procs:
                    proc.poll()
            time.sleep(0.1)
        for host in self.hosts.values():
            self.kill_host(host.name)
            _ip("link", "del", host.veth, check=False)
            _ip("netns", "del", host.netns, check=False)
        _ip("link", "del", self.bridge, check=False)
        (OWNERS / self.suffix).unlink(missing_ok=True)
        atexit.unregister(self.close)

    def leftovers(self) -> list[str]:
        """What of this rig still exists (namespaces, links, processes): empty after `close`."""
        netns = [n.split()[0] for n in _ip("netns", "list").stdout.splitlines() if self.suffix in n]
        links = [ln for ln in _ip("-o", "link", "show").stdout.splitlines() if f"gs{self.suffix}" in ln
                 or self.bridge in ln]
        inodes = {f"net:[{h.inode}]" for h in self.hosts.values()}
        procs = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and os.readlink(entry / "ns" / "net") in inodes:
                    procs.append(f"pid {entry.name}: {(entry / 'cmdline').read_bytes()[:120]!r}")
            except OSError:
                pass
        return netns + links + procs


def _stale(suffix: str) -> bool:
    """Whether the rig `suffix` lost its owner: its owner process is gone, or (no owner file) it is old."""
    owner = OWNERS / suffix
    if owner.exists():
        return not alive(int(owner.read_text() or 0))
    made = [p.stat().st_mtime for p in Path("/run/netns").glob(f"gs{suffix}-*")]
    return bool(made) and time.time() - min(made) > UNOWNED_AGE


def sweep_stale() -> list[str]:
    """Delete every rig whose owner died without closing it (namespaces `gs<suffix>-<host>`, their processes, veths
    and the bridge); a live rig of another run is left alone. Returns the suffixes swept."""
    names = [n.split()[0] for n in _ip("netns", "list", check=False).stdout.splitlines()]
    suffixes = sorted({n[2:8] for n in names if n.startswith("gs") and n[8:9] == "-"})
    swept = [s for s in suffixes if _stale(s)]
    for suffix in swept:
        inodes = {}
        for ns in (n for n in names if n.startswith(f"gs{suffix}-")):
            try:
                inodes[f"net:[{os.stat(f'/run/netns/{ns}').st_ino}]"] = ns
            except OSError:
                pass
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and os.readlink(entry / "ns" / "net") in inodes:
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass
        for ns in inodes.values():
            _ip("netns", "del", ns, check=False)
        for line in _ip("-o", "link", "show").stdout.splitlines():
            link = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
            if link.startswith((f"gs{suffix}", f"gsb{suffix}")):
                _ip("link", "del", link, check=False)
        (OWNERS / suffix).unlink(missing_ok=True)
    return swept


def http_get(url: str, timeout: float = 10) -> bytes:
    """GET without any proxy of the environment (the rig's addresses are on this machine's own bridge)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as response:
        return response.read()
