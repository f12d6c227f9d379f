"""The storage layer (graphshard/storage) on local paths and on moto's S3: locations, reads (whole and ranged),
atomic writes, listing, deleting, and one-line failures that name the URL and never the secret."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
import threading

import pytest
from fsspec.asyn import sync
from s3_helpers import DUMMY_SECRET, authenticating_server, free_port, read_only_bucket

from graphshard.cli import main
from graphshard.errors import GraphshardError
from graphshard.storage import Storage, StorageError, check_location, location, uploads


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    """A fresh empty prefix: a local folder, or a bucket on the session's S3 server."""
    if request.param == "local":
        return str(tmp_path / "store")
    return request.getfixturevalue("s3_bucket") + "/prefix"


def test_locations_parse_join_and_resolve():
    assert location("s3://b/a/./c/../d").url == "s3://b/a/d"
    assert location("parts/p0", base="s3://b/configs").url == "s3://b/configs/parts/p0"
    assert location("s3://other/x", base="s3://b/c").url == "s3://other/x"
    assert location("file:///tmp/x/").url == "/tmp/x"
    assert location("/tmp/a").join("b", "c.json").url == "/tmp/a/b/c.json"
    assert location("gs://b/k").parent.url == "gs://b"
    assert location("s3://b/k/part0/graph.dgl").relative_to(location("s3://b/k")) == "part0/graph.dgl"
    with pytest.raises(Exception, match="climbs out of the bucket"):
        location("../../x", base="s3://b/c")
    with pytest.raises(Exception, match="found no bucket"):
        location("s3://")


def test_secrets_never_shown():
    url = "https://user:hunter22@example.com/x.json?X-Amz-Signature=abcdef&part=1"
    assert "hunter22" not in str(location(url)) and "abcdef" not in repr(location(url))
    storage = Storage({"s3://b/": {"key": "AKIA-visible-id", "secret": "topsecret-value"}})
    assert "topsecret-value" not in repr(storage) and "topsecret-value" not in repr(pickle.loads(pickle.dumps(storage)))


def test_write_read_list_delete(root):
    storage = Storage()
    base = location(root)
    payload = bytes(range(256)) * 1000
    storage.write_bytes(base.join("a/one.bin"), payload)
    with storage.write_atomic(base.join("two.txt")) as fh:
        fh.write(b"hello ")
        fh.write(b"world")
    assert storage.read_bytes(base.join("a/one.bin")) == payload
    assert storage.read_range(base.join("a/one.bin"), 1000, 1010) == payload[1000:1010]
    with storage.open_read(base.join("a/one.bin"), block_size=4096) as fh:
        fh.seek(5000)
        assert fh.read(3) == payload[5000:5003]
    assert storage.exists(base.join("two.txt")) and storage.size(base.join("two.txt")) == 11
    sibling = location(root + "2").join("keep.bin")  # a prefix that starts like this one is not under it
    storage.write_bytes(sibling, b"keep")
    assert [(e.rel, e.size) for e in storage.listing(base)] == [("a/one.bin", len(payload)), ("two.txt", 11)]
    assert storage.delete_prefix(base) == 2
    assert storage.listing(base) == [] and not storage.exists(base.join("two.txt"))
    assert storage.read_bytes(sibling) == b"keep"


def test_failed_atomic_write_leaves_nothing(root):
    """A write that fails midway shows neither a partial object nor a temporary file; the old content stays."""
    storage = Storage({"s3://": {"default_block_size": 5 << 20}})  # S3: parts of 5 MiB
    target = location(root).join("config.json")
    storage.write_bytes(target, b"old")
    with pytest.raises(RuntimeError):
        with storage.write_atomic(target) as fh:
            fh.write(b"x" * (6 << 20))  # over one part: a multipart upload has started
            raise RuntimeError("crash mid-write")
    assert storage.read_bytes(target) == b"old"
    assert [e.rel for e in storage.listing(location(root))] == ["config.json"]


def _s3_calls(storage: Storage, loc, monkeypatch) -> list[str]:
    """The S3 operations `storage`'s filesystem for `loc` sends from now on, in order."""
    fs, calls = storage.fs(loc), []
    real, real_sync = fs._call_s3, fs.call_s3

    async def counted(method, *args, **kwargs):
        calls.append(method)
        return await real(method, *args, **kwargs)

    def counted_sync(method, *args, **kwargs):  # what s3fs's files call
        calls.append(method)
        return real_sync(method, *args, **kwargs)

    monkeypatch.setattr(fs, "_call_s3", counted)
    monkeypatch.setattr(fs, "call_s3", counted_sync)
    return calls


def test_small_atomic_write_is_one_put(s3_bucket, monkeypatch):
    """An object under the block size is one PutObject; past it, one multipart upload; both appear only whole, and
    one that fails past the block (a multipart upload started) leaves nothing and the old content."""
    storage = Storage({s3_bucket + "/": {"default_block_size": 5 << 20}})
    small, big = location(s3_bucket).join("small.bin"), location(s3_bucket).join("big.bin")
    calls = _s3_calls(storage, small, monkeypatch)
    with storage.write_atomic(small) as fh:
        fh.write(b"ab")
        fh.write(memoryview(b"cd"))
    assert calls == ["put_object"] and storage.read_bytes(small) == b"abcd"
    del calls[:]
    with storage.write_atomic(big) as fh:
        for _ in range(7):
            fh.write(b"x" * (1 << 20))
    assert calls[0] == "create_multipart_upload" and calls[-1] == "complete_multipart_upload"
    assert "put_object" not in calls and storage.size(big) == 7 << 20
    del calls[:]
    with pytest.raises(RuntimeError):
        with storage.write_atomic(small) as fh:
            fh.write(b"y" * (6 << 20))
            raise RuntimeError("crash mid-write")
    assert "abort_multipart_upload" in calls and storage.read_bytes(small) == b"abcd"


def test_parts_go_up_while_the_writer_goes_on(s3_bucket, monkeypatch):
    """A multipart write hands each full part to the event loop and goes on writing: part 1 is held back by the store
    until the writer has written every byte (a writer that waited for each part would wait for ever: here, a
    failure after 10 s), at most `uploads.SLOTS` parts are in flight at once, and the object is whole."""
    storage = Storage({s3_bucket + "/": {"default_block_size": 5 << 20}})  # parts of 5 MiB
    target = location(s3_bucket).join("big.bin")
    fs, written, flying, most = storage.fs(target), threading.Event(), [0], [0]
    real = fs._call_s3

    async def held(method, *args, **kwargs):
        if method != "upload_part":
            return await real(method, *args, **kwargs)
        flying[0] += 1
        most[0] = max(most[0], flying[0])
        try:
            if kwargs["PartNumber"] == 1:
                assert await asyncio.to_thread(written.wait, 10), "the writer waited for part 1"
            return await real(method, *args, **kwargs)
        finally:
            flying[0] -= 1

    monkeypatch.setattr(fs, "_call_s3", held)
    monkeypatch.setattr(fs, "call_s3", lambda *args, **kwargs: sync(fs.loop, held, *args, **kwargs))
    data = bytes(range(251)) * ((uploads.SLOTS * (5 << 20) + 1000) // 251)
    with storage.write_atomic(target) as fh:
        for i in range(0, len(data), 1 << 20):
            fh.write(data[i:i + (1 << 20)])
        written.set()
    assert 2 <= most[0] <= uploads.SLOTS
    assert storage.read_bytes(target) == data


def test_multipart_write_is_whole(s3_bucket):
    storage = Storage()
    target = location(s3_bucket).join("big.bin")
    data = bytes(range(251)) * (60_000)  # ~15 MB: three parts
    with storage.write_atomic(target) as fh:
        for i in range(0, len(data), 1 << 20):
            fh.write(data[i:i + (1 << 20)])
    assert storage.size(target) == len(data) and storage.read_range(target, len(data) - 7, len(data)) == data[-7:]


def test_storage_options_per_prefix(s3_server, monkeypatch):
    """Credentials and the endpoint from storage_options alone (no AWS environment at all)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    bucket = s3_server.new_bucket()
    storage = Storage({bucket + "/": s3_server.options(), "s3://": {"anon": True}})
    assert storage.options.for_location(location("s3://other/x")) == {"anon": True}
    storage.write_bytes(f"{bucket}/k/x.bin", b"abc")
    assert storage.read_bytes(f"{bucket}/k/x.bin") == b"abc"
    assert check_location(f"{bucket}/k", write=True, storage=storage).url == f"{bucket}/k"


def test_check_location_local(tmp_path):
    assert check_location(tmp_path / "new" / "out", write=True).url == str(tmp_path / "new" / "out")
    with pytest.raises(StorageError, match="no such file or folder"):
        check_location(tmp_path / "missing.json")
    (tmp_path / "f").write_text("x")
    with pytest.raises(StorageError, match="is a file, not a folder"):
        check_location(tmp_path / "f" / "out", write=True)


def test_missing_bucket_and_object(s3_env):
    with pytest.raises(StorageError) as err:
        check_location("s3://no-such-bucket-here/out", write=True)
    line = str(err.value)
    assert "\n" not in line and "s3://no-such-bucket-here/out" in line and "does not exist" in line
    assert DUMMY_SECRET not in line
    with pytest.raises(StorageError, match="^s3://no-such-bucket-here/x.bin: bucket 'no-such-bucket-here' does not"):
        with Storage().write_atomic("s3://no-such-bucket-here/x.bin") as fh:
            fh.write(b"x" * (6 << 20))  # under one part: the PUT at the end of the block fails
    bucket = s3_env.new_bucket()
    with pytest.raises(StorageError, match="no such file or object"):
        check_location(f"{bucket}/missing.json")
    with pytest.raises(StorageError, match="no such file or object"):
        Storage().read_bytes(f"{bucket}/missing.json")


def test_unreachable_endpoint(s3_env, monkeypatch):
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead)
    with pytest.raises(StorageError) as err:
        check_location("s3://bucket/out", write=True)
    line = str(err.value)
    assert "\n" not in line and line.startswith("s3://bucket/out: cannot reach the store") and dead in line
    assert DUMMY_SECRET not in line


def test_endpoint_without_scheme(s3_env, monkeypatch):
    """AWS_ENDPOINT_URL=localhost:9000 (no http://) was 'cannot read: ValueError: Invalid endpoint: ...'."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "localhost:9000")
    with pytest.raises(StorageError) as err:
        check_location("s3://bucket/jobs/job.yaml")
    assert str(err.value) == ("s3://bucket/jobs/job.yaml: the endpoint is not a URL (endpoint localhost:9000); set "
                              "AWS_ENDPOINT_URL or storage_options endpoint_url to http(s)://host:port")


def test_endpoint_with_a_mistyped_scheme(s3_env, monkeypatch):
    """AWS_ENDPOINT_URL=htp://localhost:9000 was 'cannot read: EndpointResolutionError: Custom endpoint ... was not
    a valid URI', unlike the same mistake without a scheme."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "htp://localhost:9000")
    for write in (False, True):
        with pytest.raises(StorageError) as err:
            check_location("s3://bucket/jobs/job.yaml", write=write)
        assert str(err.value) == ("s3://bucket/jobs/job.yaml: the endpoint is not a URL (endpoint "
                                  "htp://localhost:9000); set AWS_ENDPOINT_URL or storage_options endpoint_url to "
                                  "http(s)://host:port")


def test_wrong_credentials(monkeypatch):
    """A store that checks credentials refuses ours: one line, the URL, no secret, what to change."""
    with authenticating_server() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        for write in (False, True):
            with pytest.raises(StorageError) as err:
                check_location("s3://bucket/in/metadata.json", write=write)
            line = str(err.value)
            assert "\n" not in line and line.startswith("s3://bucket/in/metadata.json: the store refused the "
                                                        "credentials") and DUMMY_SECRET not in line
        storage = Storage({"s3://bucket/": {"secret": "opt-secret-9876", "key": "k"}})
        with pytest.raises(StorageError) as err:
            storage.read_bytes("s3://bucket/x")
        line = str(err.value)  # read_bytes sends a GET, no HEAD first: its 403 says that the key is wrong
        assert "opt-secret-9876" not in line and line.startswith("s3://bucket/x: the store refused the credentials")
        with pytest.raises(StorageError) as err:
            Storage().size("s3://bucket/in/metadata.json")
        line = str(err.value)  # a HEAD: the 403 carries no reason, so the line gives both and no false certainty
        assert line.startswith("s3://bucket/in/metadata.json: the store answered 403 Forbidden to a read") and \
            "the credentials are wrong or may not do this here; check AWS_ACCESS_KEY_ID" in line


@pytest.mark.parametrize("case", ["none", "profile", "partial"])
def test_no_usable_credentials(case: str, s3_env, tmp_path, monkeypatch):
    """No credentials at all, AWS_PROFILE naming a profile that is not there, a secret without its key: none reached
    the store, so not 'the store refused the credentials' (none), nor 'cannot read: ProfileNotFound: ...' (profile,
    partial) without what to change."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    options = {}
    if case == "profile":
        monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    if case == "partial":
        options = {"s3://": {"secret": "half-a-pair-secret"}}
    with pytest.raises(StorageError) as err:
        check_location("s3://bucket/in/metadata.json", storage=Storage(options))
    line = str(err.value)
    assert line.startswith("s3://bucket/in/metadata.json: no usable credentials (") and "\n" not in line, line
    assert "AWS_PROFILE" in line and "half-a-pair-secret" not in line
    assert {"none": "NoCredentialsError", "profile": "no-such-profile", "partial": "Partial"}[case] in line


def test_unknown_storage_option(s3_env):
    """An option s3fs does not take reaches its session only at the first request: that was 'cannot read:
    TypeError: AioSession.__init__() got an unexpected keyword argument ...', naming neither storage_options nor
    what to change."""
    storage = Storage({"s3://": {"bogus_option": 1, "secret": "opt-secret-4321", "key": "k"}})
    with pytest.raises(StorageError) as err:
        check_location("s3://bucket/in/metadata.json", storage=storage)
    line = str(err.value)
    assert line.startswith("s3://bucket/in/metadata.json: storage options rejected by the s3:// filesystem (") and \
        "'bogus_option'" in line and "storage_options" in line and "opt-secret-4321" not in line, line


def test_credentials_in_a_url_are_refused_unshown(s3_env, tmp_path, capsys, monkeypatch):
    """`s3://KEY:SECRET@bucket/...`: the store's own error repeated the 'bucket name' with the secret in it, on the
    terminal line and in the log file. An abfs container (`container@account`, no password) is not user info."""
    monkeypatch.setenv("GRAPHSHARD_LOG_DIR", str(tmp_path / "logs"))
    url = "s3://some-key:url-secret-5150@bucket/jobs/job.yaml"
    with pytest.raises(GraphshardError) as err:
        location(url)
    assert "url-secret-5150" not in str(err.value) and "credentials in a URL" in str(err.value)
    assert main(["fetch", url, "--out", str(tmp_path / "got")]) == 2
    captured = capsys.readouterr()
    assert "credentials in a URL" in captured.err and "url-secret-5150" not in captured.out + captured.err
    assert not [p for p in (tmp_path / "logs").glob("*.log") if "url-secret-5150" in p.read_text()]
    assert location("abfs://container@account.dfs.core.windows.net/x").path.startswith("container@account")


def test_no_write_permission(monkeypatch):
    """Credentials that may read but not write: the write pre-flight names the URL and says so; reading passes."""
    with read_only_bucket() as (server, bucket):
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        with pytest.raises(StorageError) as err:
            check_location(f"{bucket}/out", write=True)
        line = str(err.value)
        assert line.startswith(f"{bucket}/out: the store denied write access") and server.secret not in line
        with pytest.raises(StorageError, match="no such file or object"):
            check_location(f"{bucket}/in/missing.json")


def test_checks_of_one_store_share_a_client_until_the_credentials_change(s3_env, monkeypatch):
    """The pre-flight's checks of a config's 3-5 locations on one store make one filesystem (a new S3 client costs
    ~0.1 s each), not one per check; other credentials in the environment (or other options) get their own, so a
    changed key is checked as such."""
    from graphshard.storage import check

    made = []
    real = check.make_filesystem
    monkeypatch.setattr(check, "make_filesystem", lambda loc, opts: made.append(loc) or real(loc, opts))
    monkeypatch.setattr(check, "_QUICK", {})
    bucket = s3_env.new_bucket()
    for where, write in ((f"{bucket}/out", True), (f"{bucket}/work", True), (f"{bucket}/in", True)):
        check_location(where, write=write)
    assert len(made) == 1, made
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "another-secret")  # moto takes any key: a new client is the point
    check_location(f"{bucket}/out", write=True)
    assert len(made) == 2, made


def test_client_kwargs_not_a_mapping():
    """`client_kwargs: <text>` was an internal error (TypeError / AttributeError on a str), its value unshown."""
    with pytest.raises(GraphshardError) as err:
        Storage({"s3://": {"endpoint_url": "http://127.0.0.1:9", "client_kwargs": "x-secret-1"}})
    assert str(err.value) == ("storage_options['s3://'].client_kwargs: expected a mapping of the SDK client's "
                              "arguments, found str")


def test_unknown_protocol():
    with pytest.raises(Exception, match="unknown storage protocol 'nosuch'"):
        Storage().exists("nosuch://b/x")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1/g/metadata.json", "http://127.0.0.1:1/g/metadata.json",
                                 "hdfs://namenode:8020/g/metadata.json"])
def test_host_urls_refused_in_one_line(url, capsys):
    """A URL that names a host (ftp, http, hdfs) was read as bucket `host:port`: ftp failed on a missing `host`
    argument after a traceback from fsspec's `__del__`, http said an existing file was missing. Now one line, exit 2,
    before any request."""
    assert main(["inspect", url]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"graphshard inspect: error: {url}: {url.split(':')[0]}:// URLs name a host, "
                                        "not a bucket; graphshard reads and writes local paths and bucket stores "
                                        "(s3://, gs://, abfs://, ...): copy the data to one, or mount it as a local "
                                        "path"]


def test_storage_import_is_light():
    """Importing the storage layer loads neither fsspec's stores nor boto (the CLI's start stays fast)."""
    code = ("import sys, graphshard.storage; "
            "print(sorted(m for m in ('s3fs', 'botocore', 'aiobotocore', 'fsspec') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_delete_prefix_of_one_file(root):
    """`delete_prefix` of a single file's location deletes that file and nothing else (not a key below it)."""
    storage = Storage()
    base = location(root)
    for name in ("one.bin", "one.bin2", "other/keep.bin"):
        storage.write_bytes(base.join(name), name.encode())
    assert storage.delete_prefix(base.join("one.bin")) == 1
    assert not storage.exists(base.join("one.bin"))
    assert [e.rel for e in storage.listing(base)] == ["one.bin2", "other/keep.bin"]


def test_each_sends_store_requests_at_once_and_local_reads_in_turn():
    """`overlap.each`: for a store the items run at the same time (two calls that each wait for the other finish:
    one after another they would time out), results in item order; local items run one after another here."""
    from graphshard.storage.overlap import each

    both = threading.Barrier(2, timeout=10)
    assert each(lambda x: both.wait() * 0 + x, [5, 7], remote=True) == [5, 7]
    here = threading.current_thread()
    assert each(lambda x: (threading.current_thread() is here) * x, [1, 2, 3], remote=False) == [1, 2, 3]


def test_unpickled_storages_share_one_session_but_not_a_listing(s3_bucket, monkeypatch):
    """Every Storage a worker unpickles makes its own S3 filesystem; they share the process's aiobotocore session
    (service model, endpoint rules, credentials parsed once), each with its own client and listing cache. Another
    SDK environment gets another session."""
    storage = Storage()
    storage.write_bytes(f"{s3_bucket}/a/x.bin", b"x")
    copies = [pickle.loads(pickle.dumps(storage)) for _ in range(2)]
    fss = [copy.fs(location(s3_bucket)) for copy in copies]
    assert fss[0] is not fss[1] and fss[0].session is fss[1].session is not None
    assert all(copy.exists(f"{s3_bucket}/a/x.bin") for copy in copies)
    copies[0].prime(f"{s3_bucket}/a")
    assert fss[0]._s3 is not fss[1]._s3 and fss[0].dircache and not fss[1].dircache
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    assert Storage().fs(location(s3_bucket)).session is not fss[0].session


def test_s3_clients_of_a_process_share_one_tls_context(s3_bucket, monkeypatch):
    """Each S3 client's first request used to build a TLS context (the CA bundle loaded again, ~20 ms); the clients
    of the shared session build one per process and CA setting."""
    from aiobotocore.httpsession import AIOHTTPSession

    from graphshard.storage import tls

    built = []
    original = AIOHTTPSession._build_ssl_contexts
    monkeypatch.setattr(tls, "_CONTEXTS", {})
    monkeypatch.setattr(AIOHTTPSession, "_build_ssl_contexts",
                        lambda self, proxy: built.append(proxy) or original(self, proxy))
    storage = Storage()
    storage.write_bytes(f"{s3_bucket}/t/x.bin", b"x")
    copies = [pickle.loads(pickle.dumps(storage)) for _ in range(3)]
    assert all(copy.read_bytes(f"{s3_bucket}/t/x.bin") == b"x" for copy in copies)
    assert len({id(copy.fs(location(s3_bucket))._s3) for copy in copies}) == 3
    assert built == [None]
