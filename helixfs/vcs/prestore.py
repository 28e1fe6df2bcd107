"""A file's chunks stored while it is still being written (ADR 0048).

A big file written from its start (a build artifact, a download, `cp`) used to be cut,
hashed and stored only at close, on the FUSE loop's one core, after every byte had
already crossed FUSE on that same core. A `Prestore` does the cutting and storing of
the bytes written so far on another thread, while the loop keeps taking writes, so the
two cores share the work and the close stores only the tail.

Why the result is exactly what storing the whole file at close gives: FastCDC cuts a
chunk from the bytes since the last cut alone and looks at no more than MAX_CHUNK of
them, so a chunk that starts at least MAX_CHUNK before the end of the bytes written so
far cannot change when more bytes come; only such chunks are kept, and storing resumes
at the cut after them (content.store_stream's `head`). Bytes written anywhere but at
the end (or a truncate) make the prestore void: the close then stores the file whole,
as before. Durability is unchanged: the chunks go to the store unlogged (bulk), and the
close's logged write of the file's index flushes them first, as it did.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable

from helixfs.errors import HelixError
from helixfs.ids import ObjectId
from helixfs.vcs.content import _CDC, MAX_CHUNK, Objects, Sink, _add_chunk

log = logging.getLogger(__name__)

FEED_BYTES = 8 << 20
"""Bytes written past the last stored cut before the worker is given them: a batch
large enough that its RocksDB write and thread switch cost little per byte."""
READ_LIMIT = 4 << 20
"""Bytes read per step at most: the feeder holds about three times this (the bytes,
their records, RocksDB's batch) while it stores them. 4 MiB rather than 16: the
feeder's CPU for 1 GiB went 1.64 -> 1.38 s (fewer fresh pages for its copies to fault
in), for a re-read of up to MAX_CHUNK per step (ADR 0089)."""

ReadSpool = Callable[[int, int], bytes]
Chunks = list[tuple[ObjectId, int]]
ReadChunks = Callable[[list[int], list[ObjectId], int, int], bytes]
"""(chunk starts and the end after them, chunk ids, offset, size) -> those bytes."""


class Prestore:
    """The stored head of one file being written at its end: `pos` is a cut, every
    byte before it is stored as the chunks `refs`."""

    def __init__(self, sink: Sink, read_chunks: ReadChunks | None = None) -> None:
        """`read_chunks` reads stored chunks back (`read`): the spool may then let go of
        the bytes before `pos`."""
        self._sink = sink
        self._read_chunks = read_chunks
        self._lock = threading.Lock()  # held by a feed; a finish waits for it
        self._refs_lock = threading.Lock()  # `_refs`, `_starts`, `_pos` change together
        self._pos = 0
        self._refs: Chunks = []
        self._starts = [0]  # where each chunk of `_refs` starts, then `_pos`
        self.valid = True

    @property
    def pos(self) -> int:
        return self._pos

    def ids(self) -> list[ObjectId]:
        """The chunks stored so far (gc keeps them: no ref reaches them yet)."""
        return [oid for oid, _ in list(self._refs)]

    @property
    def readable(self) -> bool:
        return self._read_chunks is not None

    def read(self, offset: int, size: int) -> bytes:
        """Bytes of [offset, offset + size) below `pos`, from the stored chunks (on the
        loop's thread; valid or not, the chunks stored so far stay readable)."""
        assert self._read_chunks is not None
        with self._refs_lock:
            end = min(offset + size, self._pos)
            if offset >= end:
                return b""
            first = bisect.bisect_right(self._starts, offset) - 1
            stop = bisect.bisect_left(self._starts, end)
            starts = self._starts[first : stop + 1]
            ids = [oid for oid, _ in self._refs[first:stop]]
        return self._read_chunks(starts, ids, offset, end - offset)

    def void(self) -> None:
        """A write elsewhere than at the end: what was stored no longer is the file's
        start. Takes effect at once; a feed under way drops its batch."""
        self.valid = False

    def feed(self, read: ReadSpool, end: Callable[[], int]) -> None:
        """Cut what is written, [pos, end()), and store the chunks no later write can
        change (on a worker thread)."""
        with self._lock:
            try:
                while self.valid and end() - self._pos >= FEED_BYTES:
                    if not self._step(read, min(end(), self._pos + READ_LIMIT)):
                        return
            except (HelixError, OSError) as err:
                # the close stores the file whole and reports what still fails then
                log.warning("storing a file ahead of its close failed: %s", err)
                self.valid = False
            except Exception:  # a bug here must cost the speed-up, never the file
                log.exception("storing a file ahead of its close failed")
                self.valid = False

    def _step(self, read: ReadSpool, end: int) -> bool:
        data = read(self._pos, end - self._pos)
        objects: Objects = {}
        refs: Chunks = []
        taken = 0
        for chunk in _CDC.cut_buf(data):
            if chunk.offset + MAX_CHUNK > len(data):
                break  # a later byte may still move this cut
            refs.append(_add_chunk(objects, chunk.data))
            taken += chunk.length
        if not refs or not self.valid:
            return False
        self._sink(objects)
        if not self.valid:
            return False
        with self._refs_lock:
            for _, length in refs:
                self._starts.append(self._starts[-1] + length)
            self._refs.extend(refs)
            self._pos += taken
        return True

    def finish(self) -> tuple[int, Chunks] | None:
        """Waits for a feed under way; (pos, refs) to store the rest from, or None when
        void. Nothing is fed after it."""
        with self._lock:
            done, self.valid = self.valid, False
            return (self._pos, list(self._refs)) if done and self._refs else None
