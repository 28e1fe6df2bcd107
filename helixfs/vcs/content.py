"""File contents: one blob for small files, FastCDC chunks plus an index for large ones.

Chunk boundaries depend on the content around them, not on offsets, so inserting or
editing bytes in the middle of a 100 MB file re-stores only the chunks near the edit;
the index record lists (chunk id, length), so a range read fetches only the chunks that
overlap it. Large sources are streamed: a 1 GB spool file never sits in memory whole.
"""

from __future__ import annotations

import bisect
import io
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

import pyfastcdc

from helixfs.errors import CorruptObject, FileTooBig, InvalidInput
from helixfs.ids import ObjectId, hex_id, object_id
from helixfs.store.cache import ByteLRU
from helixfs.vcs.objects import (
    HEADER_SIZE,
    KIND_BLOB,
    KIND_CHUNKED,
    count_chunk,
    decode_blob,
    decode_chunked,
    encode_blob,
    encode_chunked,
    kind_of,
)

CHUNK_THRESHOLD = 1 << 20
"""Files larger than this are chunked; below it one blob is cheaper than an index."""
AVG_CHUNK = 64 << 10
FLUSH_BYTES = 16 << 20
"""A streamed file hands its chunks to the sink every this many bytes (bounded memory)."""
RECORD_CACHE = 8 << 20
"""Blob records kept for readers (~128 average chunks): several requests' worth."""
RUN_CHUNKS = 32
"""Chunks read in one `get_run` at most (~2 MiB): a whole-file read holds no more
than this in flight beyond what it returns."""
HOLES_KEPT = 1 << 14
"""Contents whose hole bytes a reader remembers (an int each): a getattr per big file
reads its index once, not once per request."""

_CDC = pyfastcdc.FastCDC(avg_size=AVG_CHUNK)

Objects = dict[ObjectId, bytes]
Sink = Callable[[Mapping[ObjectId, bytes]], None]
Holes = Sequence[tuple[int, int]]
"""Byte ranges of a source known to read as zeros (sorted, disjoint): a sparse file's holes."""


class Readable(Protocol):
    """What cutting reads a source with: a file object, or store_edited's _ReadOnce."""

    def seek(self, offset: int, whence: int = ..., /) -> int: ...

    def read(self, size: int = ..., /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Stored:
    """The result of storing a content: its id, its size, and records not yet written.

    `bases` hints, for records in `objects`, the stored record each one replaces: a
    re-cut chunk is stored as a delta on the old chunk at its offset (ADR 0017).
    """

    oid: ObjectId
    size: int
    objects: Objects
    bases: dict[ObjectId, ObjectId] = field(default_factory=dict)


def pack_bytes(data: bytes | bytearray | memoryview) -> Stored:
    """Records for an in-memory content (blob or chunks + index), nothing written yet."""
    data = bytes(data)
    if len(data) <= CHUNK_THRESHOLD:
        record = encode_blob(data)
        oid = object_id(record)
        return Stored(oid, len(data), {oid: record})
    objects: Objects = {}
    refs = [_add_chunk(objects, chunk.data) for chunk in _CDC.cut_buf(data)]
    return _finish_index(objects, refs)


def store_stream(
    source: BinaryIO,
    sink: Sink,
    holes: Holes = (),
    head: tuple[int, list[tuple[ObjectId, int]]] | None = None,
) -> Stored:
    """Store a seekable file's content from its start, chunk batches going to `sink`.

    Returns the index (or blob) record in `objects`, for the caller to write with its
    tree update; the chunks themselves have been handed to `sink` already. `holes` are
    ranges known to be zeros: they are neither read nor hashed (see _chunks). `head` =
    (a cut, the chunks before it), already stored (vcs/prestore.py): cutting resumes
    at that cut.
    """
    size = source.seek(0, io.SEEK_END)
    check_file_size(size)  # a file the mount could never open: refused before any read
    source.seek(0)
    if size <= CHUNK_THRESHOLD:
        return pack_bytes(source.read(CHUNK_THRESHOLD + 1))
    pending: Objects = {}
    pending_bytes = 0
    start, refs = (head[0], list(head[1])) if head is not None and head[0] <= size else (0, [])
    for length, data in _chunks(source, start, size, holes):
        refs.append(_add_chunk(pending, data) if data is not None else _zero_chunk(pending))
        pending_bytes += length if data is not None else 0
        if pending_bytes >= FLUSH_BYTES:
            sink(pending)
            pending, pending_bytes = {}, 0
    if pending:
        sink(pending)
    return _finish_index({}, refs)


MAX_CHUNK = _CDC.max_size
_ZERO_RECORD = encode_blob(bytes(MAX_CHUNK))
ZERO_CHUNK = (object_id(_ZERO_RECORD), MAX_CHUNK)
"""The chunk FastCDC cuts from MAX_CHUNK zeros: a long hole is a run of it."""


MAX_FILE_SIZE = 1 << 40
"""The largest file: 1 TiB. A file's index lists every MAX_CHUNK of it, holes too, so a
size costs memory and time in proportion (1 TiB: 4 Mi entries, ~1 GB and 3 s to build);
the 8 EiB the kernel lets a FUSE file reach would take the host's memory."""


def check_file_size(size: int) -> None:
    if size > MAX_FILE_SIZE:
        raise FileTooBig(f"{size} bytes is past the largest file size, {MAX_FILE_SIZE} bytes")


def _zero_chunk(objects: Objects) -> tuple[ObjectId, int]:
    objects[ZERO_CHUNK[0]] = _ZERO_RECORD
    return ZERO_CHUNK


def _chunks(
    source: Readable, pos: int, size: int, holes: Holes
) -> Iterator[tuple[int, memoryview | None]]:
    """FastCDC's chunks of `source` from `pos` (a cut) to `size`, exactly as cutting it
    all would give them, but a hole's zeros mostly come out as ZERO_CHUNK (data None),
    never read nor hashed: a 16 GiB sparse file costs its data, not 50 s of hashing.

    Why this is exact: FastCDC cuts a chunk from the bytes since the last cut alone
    (its hash starts at 0 on every chunk) and looks at most MAX_CHUNK of them; MAX_CHUNK
    zeros never match its masks (test_content checks it), so a cut with MAX_CHUNK zeros
    ahead is followed by a ZERO_CHUNK. Data is cut as usual, up to the first cut with
    that many zeros ahead; that cut comes at most MAX_CHUNK into a hole, so each hole
    costs at most 2 * MAX_CHUNK of zeros cut.
    """
    while pos < size:
        zeros = _zeros_ahead(holes, pos)
        if zeros >= MAX_CHUNK:
            for _ in range(zeros // MAX_CHUNK):
                yield MAX_CHUNK, None
            pos += zeros // MAX_CHUNK * MAX_CHUNK
            continue
        stop = _cut_until(holes, pos, size)
        source.seek(pos)
        # A window ending at `stop` is as good as the whole file: every chunk taken from
        # it starts over MAX_CHUNK before `stop`, so FastCDC saw all it looks at.
        window = source if stop == size else _Window(source, stop - pos)
        for chunk in _CDC.cut_stream(window):
            yield chunk.length, chunk.data
            pos += chunk.length
            if _zeros_ahead(holes, pos) >= MAX_CHUNK:
                break
        else:
            if pos != size:
                raise AssertionError(f"cut stopped at {pos}, short of the hole past it")


def _zeros_ahead(holes: Holes, pos: int) -> int:
    """How many zero bytes the holes promise from `pos` on."""
    at = bisect.bisect_right(holes, (pos, _END)) - 1
    return holes[at][1] - pos if at >= 0 and holes[at][1] > pos else 0


def _cut_until(holes: Holes, pos: int, size: int) -> int:
    """Where cutting from `pos` may stop reading: 2 * MAX_CHUNK into the first hole long
    enough to hold a cut with MAX_CHUNK zeros after it (or the end of the file)."""
    at = max(0, bisect.bisect_right(holes, (pos, _END)) - 1)
    for low, high in holes[at:]:
        low = max(low, pos)
        if high - low >= 2 * MAX_CHUNK:
            return min(size, low + 2 * MAX_CHUNK)
    return size


_END = 1 << 63  # sorts after any range starting at the same offset


class _Window:
    """The next `left` bytes of a source, then end of file (what FastCDC reads)."""

    def __init__(self, source: Readable, left: int) -> None:
        self._source, self._left = source, left

    def readinto(self, buffer: memoryview) -> int:
        data = self._source.read(min(len(buffer), self._left))
        buffer[: len(data)] = data
        self._left -= len(data)
        return len(data)


def store_edited(
    source: BinaryIO,
    size: int,
    old: tuple[list[int], list[ObjectId]],
    edits: list[tuple[int, int]],
    sink: Sink,
    holes: Holes = (),
) -> Stored:
    """Store a file that differs from a chunked content (`old`: its index) only within
    `edits`, byte ranges sorted and disjoint, a change of size included as one.

    Cutting from the chunk an edit starts in goes on until a cut meets a cut of the old
    file past the edit; from there both agree, so the old chunks are kept. Cuts before
    an edit's first byte are kept too, since FastCDC decides a cut from the bytes since
    the last one and the byte at the cut.
    The result is exactly what store_stream gives, for the cost of the edits: a database
    commit in a 100 MB file re-reads ~200 KB instead of 100 MB. New chunks come back in
    `objects` (written with the save) unless they pass FLUSH_BYTES (then to `sink`);
    each comes with the old chunk at its offset as a delta base hint. `holes` as for
    store_stream.

    Scattered edits (40,000 page writes in a 1 GiB file) cost each byte of the source
    once: cutting goes on through an old cut when the next edit starts in the chunk
    after it (starting again there would give the same cuts), and a new start reads
    nothing twice (_ReadOnce).
    """
    starts, ids = old
    lengths = [b - a for a, b in itertools.pairwise(starts)]
    resync = {cut: n for n, cut in enumerate(starts[1:-1], 1)}  # the old end is no CDC cut
    reader = _ReadOnce(source)
    pending: Objects = {}
    bases: dict[ObjectId, ObjectId] = {}
    pending_bytes = 0
    refs: list[tuple[ObjectId, int]] = []
    pos, kept = 0, 0  # refs describe [0, pos); old chunks from `kept` on may follow
    at = 0  # the first edit not yet cut past
    while at < len(edits) and pos < size:
        low, high = edits[at]
        if high <= pos:
            at += 1  # inside what the previous edit re-cut
            continue
        first = _first_to_cut(starts, low, pos)
        refs.extend(zip(ids[kept:first], lengths[kept:first], strict=True))
        pos = starts[first]
        for length, data in _chunks(reader, pos, size, holes):
            if data is None:
                refs.append(_zero_chunk(pending))
            else:
                refs.append(_add_chunk(pending, data))
                if pos < starts[-1]:
                    bases[refs[-1][0]] = ids[bisect.bisect_right(starts, pos) - 1]
                pending_bytes += length
            pos += length
            if pending_bytes >= FLUSH_BYTES:
                sink(pending)
                pending, pending_bytes = {}, 0
            if pos >= size or pos not in resync:
                continue
            while at < len(edits) and edits[at][1] <= pos:
                at += 1
            if at == len(edits) or _first_to_cut(starts, edits[at][0], pos) != resync[pos]:
                kept = resync[pos]
                break
        else:
            kept = len(ids)  # cut to the end of the file
    refs.extend(zip(ids[kept:], lengths[kept:], strict=True))
    if sum(length for _, length in refs) != size:
        raise InvalidInput(f"edits do not describe a file of {size} bytes")
    stored = _finish_index(pending, refs)
    # hints only for records still to be written, never a chunk onto itself
    stored.bases.update((new, old) for new, old in bases.items() if new in pending and new != old)
    return stored


def _first_to_cut(starts: list[int], low: int, pos: int) -> int:
    """The old chunk to cut again for an edit from `low`, the cuts up to `pos` being
    right: the one holding byte low - 1 (an edit starting at an old cut may remove it),
    and past the old end the last chunk, whose end was no cut."""
    return min(bisect.bisect_right(starts, max(low - 1, pos)) - 1, len(starts) - 2)


class _ReadOnce:
    """A source read forward, keeping the last KEEP_READ bytes: store_edited starts
    cutting again at an old cut, at most a FastCDC buffer (2 * MAX_CHUNK) behind what
    was read, and reads it from here. Reading it again cost most of a close after
    scattered edits: a spool's view pieces the stored content together for each read."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self._kept = bytearray()
        self._kept_at = 0  # offset of _kept[0]
        self._pos = 0

    def seek(self, offset: int, whence: int = io.SEEK_SET, /) -> int:
        if whence != io.SEEK_SET:
            raise ValueError("_ReadOnce seeks from the start only")
        self._pos = offset
        return offset

    def read(self, size: int = -1, /) -> bytes:
        if size < 0:
            raise ValueError("_ReadOnce reads a given size only")
        buffer = bytearray(size)
        return bytes(buffer[: self.readinto(memoryview(buffer))])

    def readinto(self, buffer: memoryview) -> int:
        end = self._kept_at + len(self._kept)
        if not self._kept_at <= self._pos < end and not self._read_more(len(buffer)):
            return 0
        at = self._pos - self._kept_at
        n = min(len(buffer), len(self._kept) - at)
        with memoryview(self._kept) as kept, kept[at : at + n] as piece:
            buffer[:n] = piece
        self._pos += n
        return n

    def _read_more(self, size: int) -> bool:
        """Read from _pos on: appended to what is kept when it follows it, else instead."""
        if self._pos != self._kept_at + len(self._kept):
            self._kept, self._kept_at = bytearray(), self._pos
        self._source.seek(self._pos)
        data = self._source.read(max(size, READ_BLOCK))
        if not data:
            return False
        self._kept += data
        drop = max(0, self._pos - self._kept_at - KEEP_READ)
        if drop:
            del self._kept[:drop]
            self._kept_at += drop
        return True


KEEP_READ = 4 * MAX_CHUNK
READ_BLOCK = 1 << 20


def _add_chunk(objects: Objects, data: bytes | memoryview) -> tuple[ObjectId, int]:
    record = encode_blob(data)
    oid = object_id(record)
    objects[oid] = record
    return oid, len(data)


def _finish_index(objects: Objects, refs: list[tuple[ObjectId, int]]) -> Stored:
    record = encode_chunked(refs)
    oid = object_id(record)
    objects[oid] = record
    return Stored(oid, sum(length for _, length in refs), objects)


EMPTY = pack_bytes(b"")


class RecordSource(Protocol):
    """What a ContentReader reads: an ObjectStore, or a lazy clone's reads through to
    its remote (vcs/ondemand.py)."""

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes: ...

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]: ...


class ContentReader:
    """Reads contents from a store, keeping decoded chunk indexes (they are immutable)
    and the blob records read last (small files and chunks, verified by `get`).

    A reader's requests rarely line up with chunk edges: the kernel asks for 128 KiB or
    1 MiB at a time, chunks are ~64 KiB of any length. Kept records let every request
    that touches a chunk slice it from memory, so each is fetched, decoded and hashed
    once per pass instead of once per request.
    """

    def __init__(
        self,
        store: RecordSource,
        index_cache: int = 256,
        pending: Mapping[ObjectId, bytes] | None = None,
        records: ByteLRU[bytes] | None = None,
    ) -> None:
        """`pending`: records not written yet (a worktree's next batch), read first.
        `records`: the kept blob records, to share one bound among a store's readers
        (they are immutable by id); a reader of its own gets RECORD_CACHE bytes."""
        self._store = store
        self._pending = pending if pending is not None else {}
        self._indexes: dict[ObjectId, tuple[list[int], list[ObjectId]]] = {}
        self._limit = index_cache
        self._holes: dict[ObjectId, int] = {}
        self.records: ByteLRU[bytes] = records if records is not None else ByteLRU(RECORD_CACHE)

    def _get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        record = self._pending.get(oid)
        return record if record is not None else self._store.get(oid, keep=keep)

    def _file_record(self, oid: ObjectId, *, chunk: bool = False) -> bytes:
        """A blob (a small file or a chunk), or a chunk index; blobs read lately are kept
        here (an index is kept decoded instead). Chunks are kept here only: in the
        store's caches they would push out the trees a metadata workload reuses."""
        record = self.records.get(oid)
        if record is None:
            record = self._get(oid, keep=not chunk)
            if kind_of(record) == KIND_BLOB:
                self.records.put(oid, record, len(record))
        return record

    def _index(self, oid: ObjectId, record: bytes) -> tuple[list[int], list[ObjectId]]:
        cached = self._indexes.get(oid)
        if cached is not None:
            return cached
        chunked = decode_chunked(record)
        starts, ids, pos = [], [], 0
        for chunk_id, length in chunked.chunks:
            starts.append(pos)
            ids.append(chunk_id)
            pos += length
        starts.append(pos)
        if len(self._indexes) >= self._limit:
            self._indexes.clear()
        self._indexes[oid] = (starts, ids)
        return starts, ids

    def chunks(self, oid: ObjectId) -> tuple[list[int], list[ObjectId]] | None:
        """(chunk start offsets + total size, chunk ids) of a chunked file; None for a blob."""
        cached = self._indexes.get(oid)
        if cached is not None:
            return cached
        record = self._get(oid)
        if kind_of(record) == KIND_BLOB:
            return None
        return self._index(oid, record)

    def hole_bytes(self, oid: ObjectId) -> int:
        """Bytes of a content stored as ZERO_CHUNK: the holes of a sparse file, which
        take no room in the store (st_blocks leaves them out, as a disk does). Counted
        in the index record without decoding it, once per content."""
        known = self._holes.get(oid)
        if known is None:
            record = self._get(oid)
            known = (
                count_chunk(record, ZERO_CHUNK) * MAX_CHUNK
                if kind_of(record) == KIND_CHUNKED
                else 0
            )
            if len(self._holes) >= HOLES_KEPT:
                self._holes.clear()
            self._holes[oid] = known
        return known

    def zero_ranges(self, oid: ObjectId) -> list[tuple[int, int]]:
        """The byte ranges of a content stored as runs of ZERO_CHUNK, sorted and merged:
        a sparse file's holes. Decodes the index only when it has any."""
        if not self.hole_bytes(oid):
            return []
        index = self.chunks(oid)
        assert index is not None  # a content with holes is chunked
        starts, ids = index
        ranges: list[tuple[int, int]] = []
        for i, chunk_id in enumerate(ids):
            if chunk_id != ZERO_CHUNK[0]:
                continue
            if ranges and ranges[-1][1] == starts[i]:
                ranges[-1] = (ranges[-1][0], starts[i + 1])
            else:
                ranges.append((starts[i], starts[i + 1]))
        return ranges

    def read(self, oid: ObjectId, offset: int = 0, size: int = -1) -> bytes:
        """Bytes [offset, offset+size) of a content; size < 0 reads to the end."""
        if offset < 0:
            raise InvalidInput(f"negative read offset {offset}")
        cached = self._indexes.get(oid)
        if cached is None:
            record = self._file_record(oid)
            kind = kind_of(record)
            if kind == KIND_BLOB:  # slice past the header: no copy of the whole blob
                start = HEADER_SIZE + offset
                return record[start:] if size < 0 else record[start : start + size]
            if kind != KIND_CHUNKED:
                raise CorruptObject(f"object {hex_id(oid)} is not a file content")
            cached = self._index(oid, record)
        return self.read_chunks(*cached, offset, size)

    def read_chunks(self, starts: list[int], ids: list[ObjectId], offset: int, size: int) -> bytes:
        """Bytes [offset, offset+size) of chunks: a file's index, or chunks no stored
        index names yet (a file's prestored head, vcs/prestore.py). `starts` holds each
        chunk's offset, then the end of the last one."""
        pieces = list(self._pieces((starts, ids), offset, size))
        return bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces)

    def _pieces(
        self, index: tuple[list[int], list[ObjectId]], offset: int, size: int
    ) -> Iterator[memoryview]:
        """Views of the chunk records overlapping the range: the join is the one copy."""
        starts, ids = index
        end = starts[-1] if size < 0 else min(starts[-1], offset + size)
        first = max(0, bisect.bisect_right(starts, offset) - 1)
        stop = max(first, bisect.bisect_left(starts, end, first, len(ids)))
        for at in range(first, stop, RUN_CHUNKS):
            batch = range(at, min(stop, at + RUN_CHUNKS))
            records = self._chunk_records([ids[i] for i in batch])
            for i, record in zip(batch, records, strict=True):
                length = starts[i + 1] - starts[i]
                if kind_of(record) != KIND_BLOB or len(record) - HEADER_SIZE != length:
                    raise CorruptObject(f"chunk {hex_id(ids[i])} does not match its file's index")
                lo = HEADER_SIZE + max(0, offset - starts[i])
                hi = HEADER_SIZE + min(end, starts[i + 1]) - starts[i]
                yield memoryview(record)[lo:hi]

    def _chunk_records(self, ids: list[ObjectId]) -> list[bytes]:
        """The records of a request's chunks: kept or pending ones as they are, the
        others read in one `get_run` (a file's chunks are mostly stored in its order)."""
        kept = [self.records.get(oid) or self._pending.get(oid) for oid in ids]
        missing = [oid for oid, record in zip(ids, kept, strict=True) if record is None]
        fetched = iter(self._store.get_run(missing) if missing else ())
        records = []
        for oid, record in zip(ids, kept, strict=True):
            if record is None:
                record = next(fetched)
                if kind_of(record) == KIND_BLOB:
                    self.records.put(oid, record, len(record))
            records.append(record)
        return records

    def open(self, oid: ObjectId) -> BinaryIO:
        """A whole content as a file object (small contents; large ones stream by range)."""
        return io.BytesIO(self.read(oid))

    def resize(self, oid: ObjectId, old_size: int, new_size: int) -> Stored:
        """The content cut to `new_size` or extended with zeros, reusing whole chunks.

        Costs O(chunks) plus one partial chunk, never a rewrite of the file.
        """
        if new_size < 0:
            raise InvalidInput(f"negative file size {new_size}")
        check_file_size(new_size)
        if new_size == old_size:
            return Stored(oid, old_size, {})
        index = self.chunks(oid)
        if index is None or new_size <= CHUNK_THRESHOLD:
            keep = self.read(oid, 0, min(old_size, new_size))
            if new_size <= CHUNK_THRESHOLD:
                return pack_bytes(keep + bytes(new_size - len(keep)))
            return self._extend(pack_bytes(keep), new_size)
        starts, ids = index
        if new_size > old_size:
            return self._extend(Stored(oid, old_size, {}), new_size)
        objects: Objects = {}
        refs = []
        for i, chunk_id in enumerate(ids):
            if starts[i + 1] <= new_size:
                refs.append((chunk_id, starts[i + 1] - starts[i]))
                continue
            if starts[i] < new_size:
                data = decode_blob(self._get(chunk_id))[: new_size - starts[i]]
                refs.append(_add_chunk(objects, data))
            break
        return _finish_index(objects, refs)

    def _extend(self, base: Stored, new_size: int) -> Stored:
        """`base` followed by zeros up to `new_size`, cut as FastCDC cuts those bytes
        (the id of storing them whole): only base's last chunk is cut again, since its
        end was the end of the file, not a cut; the zeros cost no hashing (_chunks)."""
        objects = dict(base.objects)
        record = objects.pop(base.oid, None) or self._get(base.oid)
        if kind_of(record) == KIND_BLOB:
            refs, tail = [], decode_blob(record)
        else:
            refs = list(decode_chunked(record).chunks)
            last_id, _ = refs.pop()
            tail = decode_blob(objects.get(last_id) or self._get(last_id))
        size = len(tail) + new_size - base.size
        source = io.BufferedReader(_ZeroPadded(tail, size))
        for _, data in _chunks(source, 0, size, [(len(tail), size)]):
            refs.append(_add_chunk(objects, data) if data is not None else _zero_chunk(objects))
        return _finish_index(objects, refs)


class _ZeroPadded(io.RawIOBase):
    """A short content followed by zeros up to `size`, as a file."""

    def __init__(self, head: bytes, size: int) -> None:
        self._head, self._size, self._pos = head, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos += offset
        return self._pos

    def readinto(self, buffer: Any) -> int:
        n = max(0, min(len(buffer), self._size - self._pos))
        data = self._head[self._pos : self._pos + n]
        buffer[: len(data)] = data
        buffer[len(data) : n] = bytes(n - len(data))
        self._pos += n
        return n
