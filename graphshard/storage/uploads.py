"""One S3 object written atomically as a multipart upload whose parts go up while the writer goes on (s3fs's own
buffered file sends its parts one after another, each only when the writer stops to wait for it).

The bytes are cut into parts of `PART` bytes (or the store's configured block size, if smaller) as they are written;
each full part is handed to s3fs's event loop and uploaded there, and the writer returns to its work. At most `SLOTS`
parts per process are on their way at once: a writer with a full part waits for a free slot instead of holding more,
so a worker holds at most SLOTS x PART bytes of parts in flight, plus the part each open file is filling. An object
smaller than one part is one PUT at `commit`. Nothing is visible before `commit` completes the upload (it waits for
every part first); `discard` waits for the parts in flight and aborts the upload, which leaves nothing.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from s3fs import S3FileSystem

PART = 32 << 20  # bytes per part (S3's minimum is 5 MiB, its limit 10,000 parts: 320 GB at this size)
SLOTS = 3  # parts in flight per process
MIN_PART = 5 << 20
_SLOTS = threading.BoundedSemaphore(SLOTS)


def part_size(fs: S3FileSystem) -> int:
    """`PART`, or the filesystem's block size (`default_block_size` in storage_options) when that is smaller."""
    configured = int(getattr(fs, "default_block_size", 0) or PART)
    return max(MIN_PART, min(PART, configured))


class ConcurrentUpload:
    """The autocommit=False file interface (`write`, `tell`, `flush`, `close`, `commit`, `discard`) over one S3
    object; parts are uploaded concurrently with the writing (see the module's docstring)."""

    def __init__(self, fs: S3FileSystem, path: str):
        self.fs, self.path = fs, path
        self.bucket, self.key, _ = fs.split_path(path)
        self.part = part_size(fs)
        self.buf = bytearray()
        self.sent = 0
        self.upload_id: str | None = None
        self.parts: list[Future] = []

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        n = view.nbytes
        while view.nbytes:
            room = self.part - len(self.buf)
            self.buf += view[:room]
            view = view[room:]
            if len(self.buf) >= self.part:
                self._send()
        return n

    def tell(self) -> int:
        return self.sent + len(self.buf)

    def flush(self) -> None:
        """Nothing to do: a part goes up as soon as it is full (a shorter one only as the last, at `commit`)."""

    def close(self) -> None:
        """Nothing to do: `commit` sends what is left."""

    def _send(self) -> None:
        """Hand the full buffer to the event loop as the next part (after a slot is free); a part that failed
        before is raised here, so the writer stops early."""
        self._raise_failed()
        if self.upload_id is None:
            self.upload_id = self.fs.call_s3("create_multipart_upload", Bucket=self.bucket, Key=self.key)["UploadId"]
        body, self.buf = self.buf, bytearray()
        _SLOTS.acquire()
        try:
            future = asyncio.run_coroutine_threadsafe(self._upload(len(self.parts) + 1, body), self.fs.loop)
        except BaseException:
            _SLOTS.release()
            raise
        self.parts.append(future)
        self.sent += len(body)

    async def _upload(self, number: int, body: bytearray) -> dict:
        try:
            out = await self.fs._call_s3("upload_part", Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                         PartNumber=number, Body=body)
            return {"PartNumber": number, "ETag": out["ETag"]}
        finally:
            _SLOTS.release()

    def _raise_failed(self) -> None:
        for future in self.parts:
            if future.done() and future.exception() is not None:
                raise future.exception()

    def commit(self) -> None:
        """The object appears whole: one PUT if no part went up, else the last part, then (every part done) the
        upload completed."""
        if self.upload_id is None:
            self.fs.pipe_file(self.path, bytes(self.buf))
        else:
            if self.buf:
                self._send()
            parts = [future.result() for future in self.parts]
            self.fs.call_s3("complete_multipart_upload", Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                            MultipartUpload={"Parts": parts})
        self.buf = bytearray()
        self.fs.invalidate_cache(self.path)

    def discard(self) -> None:
        """Drop what is held, wait for the parts in flight, abort the upload (best effort: an upload never completed
        is invisible either way, and the caller's own exception is the one to raise)."""
        self.buf = bytearray()
        wait(self.parts)
        if self.upload_id is not None:
            try:
                self.fs.call_s3("abort_multipart_upload", Bucket=self.bucket, Key=self.key, UploadId=self.upload_id)
            except Exception:  # noqa: BLE001 - see the docstring
                pass
            self.upload_id = None
