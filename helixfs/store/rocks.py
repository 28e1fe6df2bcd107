"""RocksStore: the ObjectStore on disk, in one RocksDB directory (via rocksdict).

Column families, each with its own key space so no prefix can ever collide:

* ``objects`` - key: object id (32 bytes); value: an HXS frame (store/frame.py). A plain
  frame of 16 KiB and more (a file chunk) is stored in ``bodies`` and stands here as a
  BODY frame naming it (ADR 0018).
* ``bodies``  - key: a sequence number (8 bytes, big-endian) in write order; value: the
  frame. In RocksDB blob files, so a file's chunks lie in the file's order on disk.
* ``refs``    - key: ref name (utf-8); value: the ref's bytes.
* ``meta``    - key ``format``: the store layout version (b"2"; a b"1" store, from before
  ``bodies``, is upgraded on open). A newer layout is refused.

Next to RocksDB's own LOCK file we keep ``OWNER`` (the holder's pid), so a second opener
is told which process holds the store, not just that a lock failed.

Which objects are deltas on a given base is not stored: a 64-byte row per delta cost
~12% of a delta-heavy store on disk and a put per write. gc, the only reader, builds that
index once per process by scanning the frames' headers (it walks the whole store anyway),
and writes keep it current from then on.

Writes are one WriteBatch each. A ref compare-and-swap reads and writes under one
in-process lock; RocksDB's LOCK keeps other processes out entirely, so the lock is enough.
For the same reason refs are cached in memory once read or written (absent ones too):
no other writer can move them, and a commit's CAS then costs no RocksDB read.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

import rocksdict

from helixfs import config
from helixfs.errors import (
    CorruptObject,
    HelixError,
    InvalidInput,
    NotFound,
    ReadOnly,
    UnsupportedVersion,
)
from helixfs.ids import ObjectId, hex_id, object_id
from helixfs.lazy import logger
from helixfs.store import REPACK_BATCH, Compaction, Patch, RefUpdate, StoreStats
from helixfs.store.cache import ByteLRU
from helixfs.store.frame import (
    HEADER_SIZE,
    LZ4,
    MIN_DELTA_RECORD,
    Codec,
    Compression,
    Delta,
    apply_delta,
    body_key,
    codec_of,
    decode_plain,
    delta_depth,
    encode_body,
    encode_delta,
    encode_patch,
    encode_plain,
    encode_raw,
    is_body,
    logical_size,
    parse_body,
    parse_delta,
    verify,
)
from helixfs.store.rocksdb_open import (
    BLOB_FAMILIES,
    COLUMN_FAMILIES,
    MIN_BLOB_BYTES,
    RELOCATE_AT_GARBAGE,
    blob_file_count,
    blob_garbage_bytes,
    blob_garbage_ratio,
    check_cursor,
    checked_reads,
    claim_owner,
    disk_error,
    disk_usage,
    engine_figures,
    forget_owner,
    memtable_full_soon,
    open_db,
    read,
    relocating_blobs,
    scan,
    step_bounds,
    unchecked_reads,
)
from helixfs.store.space import SpaceGuard, room
from helixfs.store.validate import (
    check_bulk,
    check_delta_bases,
    check_objects,
    check_oid,
    check_patches,
    check_ref_name,
    check_ref_prefix,
    plan_refs,
)

_open_db = open_db  # tests elsewhere (tests/vcs) open the raw DB through this name
STORE_FORMAT = b"2"
OLDER_FORMATS = (b"1",)  # no `bodies` yet: nothing to convert, the marker is raised on open
FRAME_CACHE_BYTES = int(config.default("cache.frames"))  # the L1 of frames as stored
RECORD_CACHE_BYTES = int(config.default("cache.records"))  # decoded: the next delta bases
MAX_DELTA_DEPTH = 16  # reading the oldest link of a chain costs this many gets + inflates
SCAN_RECORD_BYTES = 32 << 20  # decoded records a maintenance scan shares between its reads
CHAIN_HARD_LIMIT = 255  # depth is one byte: a longer walk means a corrupt (cyclic) chain
REF_CACHE_LIMIT = 4096  # refs cached, present or absent
REF_WRITE_BYTES = 128  # a ref update's share of a write, for the space guard
CLEARLY_SMALL = 8  # a delta under 1/8 of the record beats LZ4: skip trying LZ4 at all
CACHED_WRITE_LIMIT = 64  # a write of more new records than this is a load: none cached
LAST_CHAIN_BYTES = 8 << 20  # a longer chain's links are not kept (see _last_chain)
ANCHOR_CACHE_BYTES = 4 << 20  # decoded skip-back targets: one per hot file's chain
STALL_WAIT_S = 10.0  # a bulk write waits this long at most for a memtable to flush
STALL_POLL_S = 0.001
PATCH_DEPTHS_KEPT = 4096  # depths of the patched records last written (see _patch_depth)
RUN_FROM = 8  # a shorter run reads one get each: a cursor's seek costs a few gets' worth


V = TypeVar("V")

log = logger(__name__)  # logging imported at the first line logged (ADR 0083)


class _BaseGone(CorruptObject):
    """A delta's base is missing: corruption, or a gc that re-encoded it as we read."""


class Known(NamedTuple):
    """A verified record and the delta depth it is stored at (0 = not a delta).

    `anchor`: the ancestor its chain skips back to once full (see _skip_back), when a
    write in this process learnt it; None means unknown, not absent.
    """

    record: bytes
    depth: int
    anchor: ObjectId | None = None


class Encoded(NamedTuple):
    frame: bytes
    base: ObjectId | None
    depth: int
    anchor: ObjectId | None = None


class _ScanDepth(threading.local):
    depth = 0  # scans running on this thread


class RocksStore:
    """The persistent ObjectStore. Open one per store directory; it is single-writer."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cache_bytes: int = FRAME_CACHE_BYTES,
        record_cache_bytes: int = RECORD_CACHE_BYTES,
        max_delta_depth: int = MAX_DELTA_DEPTH,
        verify_writes: bool = True,
        compression: Compression = LZ4,
        read_only: bool = False,
    ) -> None:
        """`read_only`: for a reader beside the store's writer (a hook with no daemon):
        no LOCK, no owner file, no format upgrade; every write is refused."""
        self.path = Path(path)
        self.read_only = read_only
        self.compression = compression  # of new plain frames; reads take any codec
        self.max_delta_depth = min(max_delta_depth, CHAIN_HARD_LIMIT - 1)
        self._verify_writes = verify_writes
        self._frames: ByteLRU[bytes] = ByteLRU(cache_bytes)  # L1: frames as stored
        # Verified plain records of objects just written or read: the likely delta bases
        # of the next write, kept decoded so the hot path never inflates a chain.
        self._bases: ByteLRU[Known] = ByteLRU(record_cache_bytes)
        # The records full chains skip back to: kept apart, as the hot files' versions
        # churn the record cache long before their chains fill up again.
        self._anchors: ByteLRU[Known] = ByteLRU(ANCHOR_CACHE_BYTES)
        # The links of the last delta chain walked, decoded (epoch, id -> record; see
        # _load): the next read of an older version of the file (blame, log -p walk
        # back) finds it there instead of walking the same chain again.
        self._last_chain: tuple[int, dict[ObjectId, bytes]] = (-1, {})
        self._lock = threading.RLock()
        # Verified records that keep=False reads decoded while a scan runs (see scanning):
        # a tree's chain shares its prefix with a dozen others, decoded once per scan.
        self._scan_records: ByteLRU[bytes] | None = None
        self._scans = 0  # scans running (gc and fsck may overlap)
        self._scanner = _ScanDepth()
        self._epoch = 0  # bumped twice by each gc (odd while it runs); see _remember
        self._hits = self._misses = 0  # gets served from memory (either cache) vs disk
        self._db = open_db(self.path, read_only=read_only)
        self._space = SpaceGuard(self.path)
        self._objects = self._db.get_column_family_handle("objects")
        self._refs = self._db.get_column_family_handle("refs")
        # RocksDB checks its checksums on the blocks of `objects` it reads from disk:
        # unchecked, one flipped bit in a table crashed the process in one case in 30.
        self._objects_cf = self._db.get_column_family("objects")
        self._refs_cf = self._db.get_column_family("refs")
        self._bodies = self._db.get_column_family_handle("bodies")
        self._bodies_cf = self._db.get_column_family("bodies")
        self._unchecked = unchecked_reads()
        self._bodies_cf.set_read_options(self._unchecked)
        self._checked = checked_reads()  # for bodies while fsck or gc scans: see _body
        self._next_body: int | None = None  # found by the first write that needs one
        self._dependents: dict[ObjectId, set[ObjectId]] | None = None  # base -> deltas on it
        self._edges_meanwhile: list[tuple[ObjectId, ObjectId]] | None = None  # see prepare_delete
        self._ref_values: dict[str, bytes | None] = {}  # single writer: always current
        self._patch_depths: dict[ObjectId, int] = {}  # see _patch_depth
        self._sync_write = rocksdict.WriteOptions()
        self._sync_write.sync = True
        self._bulk_write = rocksdict.WriteOptions()
        # a property at runtime; rocksdict's stub declares it as a method
        self._bulk_write.disable_wal = True  # type: ignore[method-assign,assignment]
        self._unlogged = False  # bulk objects in the memtable only: flush before a logged write
        # Logged writes whose WAL records may not be on disk yet: a sync() without any
        # costs nothing (an fsync of a database file, then of its folder, syncs once).
        # True at open: the format record written at creation went in without a sync.
        self._unsynced = True
        # What made the WAL durable (for tests and profiles): a write with sync=True, or a
        # sync() that found records to flush.
        self.synced_writes = self.wal_flushes = 0
        self._closed = False
        try:
            self._check_format()
        except BaseException:
            self.close()
            raise
        if not read_only:
            claim_owner(self.path)

    # ------------------------------------------------------------------ reads

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        check_oid(oid)
        self._check_open()
        epoch = self._epoch  # before reading: see _remember
        known = self._bases.get(oid)
        if known is not None:  # decoded a moment ago: skip the chain, not the check
            self._hits += 1
            return verify(oid, known.record)
        walked = self._walked(oid, epoch)
        if walked is not None:  # a link of the last chain: unverified until now
            self._hits += 1
            return verify(oid, walked)
        if oid in self._frames:
            self._hits += 1
        else:
            self._misses += 1
        try:
            known = self._load(oid, self._frame(oid, keep=keep), keep=keep)
        except _BaseGone:
            # A gc re-encoded this chain while we walked it: walk it again, settled.
            with self._lock:
                known = self._load(oid, self._frame(oid, keep=keep), keep=keep)
        if keep:
            self._remember(self._bases, oid, known, len(known.record), epoch)
        return known.record

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]:
        """Records of a file's next chunks, read with one cursor over `bodies`.

        A file's chunks are numbered in write order (ADR 0018), so the body after one
        chunk's is most likely the next chunk's: the cursor takes it for the next id
        when its record hashes to that id, which also verifies it. Any other object
        (a delta, a chunk stored by another file, a damaged body) is read by `get`, and
        the cursor moves past its body. Saves a point lookup in `objects` and a `get`
        per chunk (ADR 0035). Fewer than RUN_FROM objects (a random read's one or two
        chunks) are read by `get` alone: the cursor's seek would cost more.
        """
        for oid in oids:
            check_oid(oid)
        self._check_open()
        if len(oids) < RUN_FROM:
            return [self.get(oid, keep=False) for oid in oids]
        cursor = self._bodies_cf.iter(self._unchecked)
        last = len(oids) - 1
        return [self._run_record(oid, cursor, ahead=n < last) for n, oid in enumerate(oids)]

    def _run_record(self, oid: ObjectId, cursor: rocksdict.RdictIter, *, ahead: bool) -> bytes:
        """`oid`'s record, from the cursor's body if it is that; the cursor then moves
        to the next object's likely body if `ahead` (a move reads that body)."""
        if cursor.valid():
            record = _plain_record(oid, cursor.value())
            if ahead:
                cursor.next()
            if record is not None:
                self._misses += 1
                return record
        record = self.get(oid, keep=False)
        if ahead:
            self._follow(oid, cursor)
        return record

    def _follow(self, oid: ObjectId, cursor: rocksdict.RdictIter) -> None:
        """Put the cursor past `oid`'s body, where the next chunk's likely is. An object
        without one (a delta) leaves it: past the body of the chunk it replaced."""
        frame = read(self._objects_cf, oid)
        if frame is not None and is_body(frame):
            with contextlib.suppress(CorruptObject):  # get() could read it: cannot happen
                number = int.from_bytes(parse_body(oid, frame).key, "big")
                cursor.seek(body_key(number + 1))

    def contains(self, oid: ObjectId) -> bool:
        check_oid(oid)
        self._check_open()
        return self._exists(oid)

    def ref(self, name: str) -> bytes | None:
        self._check_open()
        try:
            return self._ref_values[name]
        except (KeyError, TypeError):  # not cached yet, or not even a name (checked next)
            pass
        value = read(self._refs_cf, check_ref_name(name).encode())
        if len(self._ref_values) >= REF_CACHE_LIMIT:
            self._ref_values.clear()  # misses of arbitrary revs must not grow it forever
        self._ref_values[name] = value
        return value

    def refs(self, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        self._check_open()
        start = check_ref_prefix(prefix).encode()
        found = [(key.decode(), value) for key, value in scan(self._refs_cf, start)]
        return iter(found)

    def ids(self, prefix: bytes = b"") -> Iterator[ObjectId]:
        self._check_open()
        return iter([ObjectId(key) for key, _ in scan(self._objects_cf, prefix)])

    # ------------------------------------------------------------------ writes

    def check_room(self, nbytes: int) -> None:
        self._check_open()
        with self._lock:
            self._space.check(nbytes + REF_WRITE_BYTES)

    def write(
        self,
        objects: Mapping[ObjectId, bytes],
        refs: Sequence[RefUpdate] = (),
        *,
        delta_bases: Mapping[ObjectId, ObjectId] | None = None,
        uncompressed: Collection[ObjectId] = (),
        patches: Mapping[ObjectId, Patch] | None = None,
        sync: bool = False,
        bulk: bool = False,
    ) -> None:
        self._check_writable()
        if bulk:
            check_bulk(refs, sync)
        check_objects(objects, rehash=self._verify_writes)
        check_delta_bases(objects, delta_bases)
        check_patches(objects, patches)
        hints = delta_bases or {}
        trims = patches or {}
        depths: dict[ObjectId, int] = {}  # of this write's RAW and patched records
        if bulk:
            self._wait_for_memtable_room(sum(map(len, objects.values())))
        with self._lock:
            planned = plan_refs(refs, self.ref)
            self._space.claim(sum(map(len, objects.values())) + REF_WRITE_BYTES * len(refs))
            batch = rocksdict.WriteBatch(raw_mode=True)
            fresh: dict[ObjectId, Known] = {}
            edges: list[tuple[ObjectId, ObjectId]] = []
            for oid, data in objects.items():
                patch = trims.get(oid) if trims else None
                if patch is not None:
                    if not self._exists(oid):  # as below: a stored frame is never re-encoded
                        self._put_patched(batch, oid, data, patch, depths, edges)
                    continue
                if oid in uncompressed:
                    # As it is (RocksDB's block compression still applies), unchecked: a
                    # RAW frame joins no delta chain, so rewriting a stored one is
                    # harmless. Kept out of the record cache: only a patch (which needs
                    # no record) is ever made on it, and that one wants its depth, 0.
                    batch.put(oid, encode_raw(bytes(data)), self._objects)
                    depths[oid] = 0
                    continue
                if self._exists(oid):
                    continue  # never re-encode a stored object: keeps delta chains acyclic
                record = bytes(data)
                encoded = self._encode(record, hints.get(oid), fresh)
                self._put(batch, oid, encoded)
                if encoded.base is not None:
                    edges.append((encoded.base, oid))
                fresh[oid] = Known(record, encoded.depth, encoded.anchor)
            for name, value in planned.items():
                if value is not None:
                    batch.put(name.encode(), value, self._refs)
                elif self.ref(name) is not None:  # no tombstone for a ref that is not there
                    batch.delete(name.encode(), self._refs)
            self._apply(batch, sync=sync, bulk=bulk)
            self._ref_values.update(planned)
            if depths and len(depths) <= CACHED_WRITE_LIMIT:  # not for a load (an import)
                if len(self._patch_depths) + len(depths) > PATCH_DEPTHS_KEPT:
                    self._patch_depths.clear()  # only a read of the next base's frame lost
                self._patch_depths.update(depths)
            # Only the decoded record is cached: it is the likely base of this object's
            # next version. Its frame sits in RocksDB's memtable, a cheap read away.
            # Not for loads (bulk chunks, imports): they would push out the bases of the
            # files being edited, and refill the cache with small records that every
            # later put must evict one by one.
            if not bulk and len(fresh) <= CACHED_WRITE_LIMIT:
                for oid, known in fresh.items():
                    self._bases.put(oid, known, len(known.record))
            if self._dependents is not None:
                for base, oid in edges:
                    self._dependents.setdefault(base, set()).add(oid)
            elif self._edges_meanwhile is not None:
                self._edges_meanwhile += edges

    def delete(self, oids: Iterable[ObjectId]) -> None:
        """Drop objects; every surviving delta on a dropped base is re-encoded first."""
        self._check_writable()
        with self._lock:
            # each frame read once: it tells if the object is there, its base and its body
            frames = {oid: read(self._objects_cf, oid) for oid in map(check_oid, oids)}
            doomed = {oid for oid, frame in frames.items() if frame is not None}
            if not doomed:
                return
            dependents = self._dependents_index()
            self._dependents = None  # until the batch lands, the index may be wrong
            batch = rocksdict.WriteBatch(raw_mode=True)
            rescued: dict[ObjectId, Known] = {}
            for oid in doomed:
                self._rescue_dependents(oid, doomed, dependents, batch, rescued, frames)
            for oid in doomed:
                self._drop(batch, oid, frames[oid])
            self._epoch += 1  # odd: caches may not learn anything until this settles
            try:
                self._apply(batch)
                self._dependents = dependents
            finally:
                self._forget(doomed | rescued.keys())
                self._epoch += 1

    @contextlib.contextmanager
    def scanning(self) -> Iterator[None]:
        """Share decoded delta bases between the keep=False reads of a maintenance scan
        (gc's mark, fsck): once trees are deltas (ADR 0027), reading each walks a chain
        of up to 16 links that a dozen other trees share. A cache of its own, dropped
        when the last scan ends: the caches a mount relies on stay as they were."""
        self._check_open()
        with self._lock:
            self._scans += 1
            if self._scan_records is None:
                self._scan_records = ByteLRU(SCAN_RECORD_BYTES)
        self._scanner.depth += 1
        try:
            yield
        finally:
            self._scanner.depth -= 1
            with self._lock:
                self._scans -= 1
                if not self._scans:
                    self._scan_records = None

    def delta_base(self, oid: ObjectId) -> ObjectId | None:
        """The object `oid` is stored as a delta on, if it is one."""
        self._check_open()
        return self._base_of(check_oid(oid))

    def repack(self, pairs: Iterable[tuple[ObjectId, ObjectId]]) -> int:
        """Store each `(oid, base)`'s object as a delta on `base` where that pays.

        For records written plain because a delta cost too much on the commit path:
        trees (ADR 0009). gc hands each new tree with the one it replaced, oldest
        first, and the delta takes a one-entry change to a 6 KB tree to ~100 bytes.
        An object something else is a delta on keeps its frame: re-encoding it would
        falsify its dependents' recorded depths, and is the only way a chain could
        loop back on itself (the index of deltas by base is complete: built by a scan,
        then kept by every write). Returns how many objects became deltas. A mount goes
        on meanwhile: each batch holds the lock, and an object reads the same either way.
        """
        self._check_writable()
        self.prepare_delete()  # the index of deltas by base, built outside the lock
        packed = 0
        pending = list(pairs)
        for at in range(0, len(pending), REPACK_BATCH):
            with self._lock:
                packed += self._repack_batch(pending[at : at + REPACK_BATCH])
            time.sleep(0.0002)  # hands the GIL to a mount's requests (Python: every 5 ms)
        return packed

    def _repack_batch(self, pairs: Sequence[tuple[ObjectId, ObjectId]]) -> int:
        dependents = self._dependents_index()
        batch = rocksdict.WriteBatch(raw_mode=True)
        fresh: dict[ObjectId, Known] = {}
        links: dict[ObjectId, ObjectId] = {}  # this batch's new deltas, not yet readable
        bases: set[ObjectId] = set()  # what this batch's new deltas are on
        for oid, base in pairs:
            # A base of a new delta is as good as one with dependents: made a delta in
            # turn, on a tree a history went back to, its chain would loop (b on a, c
            # on b, then a on c: a branch restored to an old commit's tree, then gc)
            if oid in fresh or oid in bases or dependents.get(oid):
                continue
            try:
                found = self._repacked(oid, base, fresh, links)
            except HelixError:
                continue  # unreadable: fsck's to report; it stays as it is
            if found is None:
                continue
            record, encoded, links[oid] = found
            bases.add(links[oid])
            batch.put(oid, encoded.frame, self._objects)
            fresh[oid] = Known(record, encoded.depth)
        if not fresh:
            return 0
        self._space.claim(sum(len(known.record) for known in fresh.values()) // 8)
        # Both caches forget the old plain frames, under a new epoch so that a read
        # racing this batch cannot put one back (see _remember). The record cache
        # matters most: its entry says depth 0, and a delta built on it later would
        # record depth 1 for a chain now as long as this one's plus one. Chains then
        # grew by 16 links at every gc, past any limit.
        self._epoch += 1
        try:
            self._apply(batch)
        finally:
            self._forget(fresh)
            self._epoch += 1
        for oid, base in links.items():
            dependents.setdefault(base, set()).add(oid)
        return len(fresh)

    def _repacked(
        self,
        oid: ObjectId,
        base: ObjectId,
        fresh: Mapping[ObjectId, Known],
        links: Mapping[ObjectId, ObjectId],
    ) -> tuple[bytes, Encoded, ObjectId] | None:
        """`oid`'s record, its delta frame on `base` and the base it took (an older one
        when `base`'s chain is full); None if it is a delta already (or a large chunk's
        body) or no delta pays."""
        frame = read(self._objects_cf, check_oid(oid))
        if frame is None or is_body(frame) or codec_of(oid, frame) is Codec.DELTA:
            return None
        record = self._load(oid, frame).record
        encoded = self._encode(record, check_oid(base), fresh, links, keep=False)
        return None if encoded.base is None else (record, encoded, encoded.base)

    def prepare_delete(self) -> None:
        """Build the index of deltas by base, if not yet built: one scan of every frame,
        without the lock, so that saves go on meanwhile. Deltas written from the start
        of the scan on are collected by `write` too, and added at the end (once more if
        the scan saw them as well: the index holds sets)."""
        self._check_open()
        with self._lock:
            if self._dependents is not None:
                return
            self._edges_meanwhile = []
        try:
            index = _delta_index(scan(self._objects_cf, b""))
        except BaseException:
            with self._lock:
                self._edges_meanwhile = None
            raise
        with self._lock:
            for base, oid in self._edges_meanwhile or ():
                index.setdefault(base, set()).add(oid)
            self._edges_meanwhile = None
            if self._dependents is None:
                self._dependents = index

    def _rescue_dependents(
        self,
        oid: ObjectId,
        doomed: set[ObjectId],
        dependents: dict[ObjectId, set[ObjectId]],
        batch: rocksdict.WriteBatch,
        rescued: dict[ObjectId, Known],
        frames: Mapping[ObjectId, bytes | None],
    ) -> None:
        """Re-encode the surviving deltas on `oid` and drop `oid` from the index.
        `frames` holds the doomed objects' frames, already read."""
        own_base = _base_in(oid, frames[oid])
        if own_base is not None:
            dependents.get(own_base, set()).discard(oid)
        for dependent in dependents.pop(oid, set()):
            if dependent in doomed:
                continue
            known = self._load(dependent, self._frame(dependent))
            ancestor = self._surviving_ancestor(own_base, doomed, frames)
            encoded = self._encode(known.record, ancestor, rescued)
            self._put(batch, dependent, encoded)
            if encoded.base is not None:
                dependents.setdefault(encoded.base, set()).add(dependent)
            rescued[dependent] = Known(known.record, encoded.depth)

    def _dependents_index(self) -> dict[ObjectId, set[ObjectId]]:
        """base -> the objects stored as deltas on it; built by one scan, then maintained."""
        if self._dependents is None:
            self._dependents = _delta_index(scan(self._objects_cf, b""))
        return self._dependents

    def _surviving_ancestor(
        self, base: ObjectId | None, doomed: set[ObjectId], frames: Mapping[ObjectId, bytes | None]
    ) -> ObjectId | None:
        """The nearest object from `base` up its chain that gc keeps: the best base for
        the orphans of a dropped delta on `base`."""
        while base is not None and base in doomed:
            base = _base_in(base, frames[base])
        return base

    def _apply(
        self, batch: rocksdict.WriteBatch, *, sync: bool = False, bulk: bool = False
    ) -> None:
        """Write a batch; a bulk one skips the write-ahead log (ADR 0014).

        Bulk objects live in the memtable only until RocksDB flushes it, and a crash
        of this process would lose them. So before any logged write (the one that may
        make them reachable) they are flushed to their files: a write that returns
        never points at objects a crash could take back.
        """
        try:
            if bulk:
                self._db.write(batch, self._bulk_write)
                self._unlogged = True
                return
            self._flush_bulk()
            self._db.write(batch, self._sync_write if sync else None)
        except Exception as err:
            raise disk_error(self.path, err) from err
        self.synced_writes += sync
        self._unsynced = not sync  # a synced write makes every earlier record durable

    def _wait_for_memtable_room(self, nbytes: int) -> None:
        """A bulk write waits here, the GIL free, while RocksDB would stall it: rocksdict
        keeps the GIL inside `write`, and a stalled write froze the FUSE loop with it
        (ADR 0089: 4 MiB bulk writes of 0.6 ms p50 took up to 44-81 ms in a 1 GiB write).
        Bounded: past STALL_WAIT_S the write goes on and RocksDB stalls it itself."""
        deadline = time.monotonic() + STALL_WAIT_S
        while memtable_full_soon(self._bodies_cf, nbytes) and time.monotonic() < deadline:
            time.sleep(STALL_POLL_S)

    def _flush_bulk(self) -> None:
        if self._unlogged:
            self._bodies_cf.flush(True)  # bodies first: never a BODY frame without its body
            self._objects_cf.flush(True)
            self._unlogged = False

    def sync(self) -> None:
        self._check_writable()
        with self._lock:
            if not (self._unsynced or self._unlogged):
                return  # everything written so far is durable already
            try:
                self._flush_bulk()
                self._db.flush_wal(True)
            except Exception as err:
                raise disk_error(self.path, err) from err
            self.wal_flushes += 1
            self._unsynced = False

    def compact(self) -> Compaction:
        """Flush memtables and rewrite everything (gc calls it after deleting).

        The last level is rewritten too, so deleted values are dropped and chunks stored
        inside SSTs (before blob files) move to blob files. Blob files whose chunks are
        all deleted go. When at least a quarter of the blob bytes are deleted chunks,
        the live chunks move out of the blob files they share with deleted ones, so
        those go too: that rewrites every live chunk, so it waits until it pays (ADR
        0014), and it goes in steps that fit the disk's free room (ADR 0028).
        """
        self._check_writable()
        everything = rocksdict.CompactOptions()
        everything.set_bottommost_level_compaction(
            rocksdict.BottommostLevelCompaction.force_optimized()
        )
        families = [self._db.get_column_family(name) for name in BLOB_FAMILIES]
        free_needed = 0
        try:
            with self._lock:
                self._db.flush(True)
                self._flush_bulk()
            # RocksDB compacts beside concurrent writes: a mount's saves go on meanwhile
            for name in COLUMN_FAMILIES:
                self._db.get_column_family(name).compact_range(None, None, everything)
            for family in families:
                if blob_garbage_ratio(family) >= RELOCATE_AT_GARBAGE:
                    free_needed += self._relocate(families, family, everything)
        except Exception as err:
            raise disk_error(self.path, err) from err
        return Compaction(sum(map(blob_garbage_bytes, families)), free_needed)

    def garbage_waiting(self) -> bool:
        self._check_open()
        families = (self._db.get_column_family(name) for name in BLOB_FAMILIES)
        return any(blob_garbage_ratio(family) >= RELOCATE_AT_GARBAGE for family in families)

    def _relocate(
        self,
        families: list[rocksdict.Rdict],
        family: rocksdict.Rdict,
        everything: rocksdict.CompactOptions,
    ) -> int:
        """Move the live chunks out of the blob files of `family`, oldest files first,
        as many per compaction as the disk has room to write again: the old files go
        at the end of each, so the room grows step by step. Filling the disk instead
        would leave RocksDB refusing every write until the store is opened again (ADR
        0023). How much more free space the next step needs when it stops short."""
        todo = blob_file_count(family)  # the files there now; the moved chunks go to new ones
        while todo > 0:
            bounds = step_bounds(self.path, families, family)[:todo]
            room_now = room(self.path)
            oldest = _steps_that_fit(bounds, room_now)
            if oldest == 0:
                return self._short_of_room(bounds[0] - room_now, todo)
            with relocating_blobs(family, oldest):
                family.compact_range(None, None, everything)
            todo -= oldest
            log().info("store %s: moved live chunks out of %d old blob files", self.path, oldest)
        return 0

    def _short_of_room(self, needed: int, files: int) -> int:
        log().warning(
            "store %s: deleted chunks stay on disk in %d blob files until %d MiB more are "
            "free (moving the live ones out needs that room)",
            self.path,
            files,
            -(-needed >> 20),
        )
        return needed

    # ------------------------------------------------------------------ stats, lifecycle

    def configure(
        self,
        *,
        cache_bytes: int | None = None,
        record_cache_bytes: int | None = None,
        compression: Compression | None = None,
    ) -> None:
        """New cache bounds or codec, applied at once (`helix config set` on a mount)."""
        if cache_bytes is not None:
            self._frames.resize(cache_bytes)
        if record_cache_bytes is not None:
            self._bases.resize(record_cache_bytes)
        if compression is not None:
            self.compression = compression

    def disk_bytes(self) -> int:
        self._check_open()
        return disk_usage(self.path)

    def stats(self) -> StoreStats:
        """A full scan of the objects: exact figures, meant for `helix stats`, not loops."""
        self._check_open()
        count = logical = stored = deltas = delta_bytes = unreadable = bodies = 0
        for key, frame in scan(self._objects_cf, b""):
            count += 1
            try:
                logical += logical_size(ObjectId(key), frame)
                if is_body(frame):
                    body = parse_body(ObjectId(key), frame)
                    bodies += 1
                    stored += len(body.key) + body.length
            except HelixError:
                unreadable += 1  # stats still answer; fsck names the culprits
            stored += len(key) + len(frame)
            if frame[4] == Codec.DELTA:
                deltas += 1
                delta_bytes += len(frame)
        return StoreStats(
            objects=count,
            logical_bytes=logical,
            stored_bytes=stored,
            disk_bytes=self.disk_bytes(),
            cache_hits=self._hits,
            cache_misses=self._misses,
            extra={
                "delta_objects": deltas,
                "unreadable_frames": unreadable,
                "delta_bytes": delta_bytes,
                "body_objects": bodies,
                **self.cache_counters(),
            },
        )

    def cache_counters(self) -> dict[str, int]:
        """Per cache: bytes held, its bound, hits, misses (counters: no scan)."""
        figures = {}
        for name, cache in (("frame", self._frames), ("record", self._bases)):
            figures[f"{name}_cache_bytes"] = cache.size_bytes
            figures[f"{name}_cache_limit_bytes"] = cache.max_bytes
            figures[f"{name}_cache_hits"] = cache.hits
            figures[f"{name}_cache_misses"] = cache.misses
        return figures

    def engine_figures(self) -> dict[str, int]:
        """RocksDB's own figures (pending compaction bytes, estimated keys...): no scan."""
        self._check_open()
        return engine_figures([self._objects_cf, self._bodies_cf, self._refs_cf])

    def close(self) -> None:
        """Close, even on a full disk: the store must open again once there is room.
        What a failed flush loses there is unlogged chunks of a save that never
        returned (a logged write flushes them first), which no ref points at."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with self._logged_failure("flush its unlogged chunks"):
                self._flush_bulk()
            # RocksDB's LOCK is released only when the last handle on the DB is gone,
            # column-family handles included: drop them all, then close.
            del self._objects, self._refs, self._objects_cf, self._refs_cf
            del self._bodies, self._bodies_cf
            with self._logged_failure("shut RocksDB down cleanly"):
                self._db.close()
            del self._db
            forget_owner(self.path)
            self._frames.clear()
            self._bases.clear()
            self._anchors.clear()
            self._ref_values.clear()

    @contextlib.contextmanager
    def _logged_failure(self, what: str) -> Iterator[None]:
        try:
            yield
        except Exception as err:  # rocksdict raises bare Exceptions
            log().error("store %s: could not %s at close: %s", self.path, what, err)

    def __enter__(self) -> RocksStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput(f"store {self.path} is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise ReadOnly(f"store {self.path} is open read-only")

    def _check_format(self) -> None:
        meta = self._db.get_column_family("meta")
        found = read(meta, b"format")
        if found is None or found in OLDER_FORMATS:
            if not self.read_only:  # the writer's next open records it
                meta[b"format"] = STORE_FORMAT
        elif found != STORE_FORMAT:
            raise UnsupportedVersion(
                f"store {self.path} has layout {found!r}, this HelixFS reads {STORE_FORMAT!r}: "
                "upgrade HelixFS to open it"
            )

    def _exists(self, oid: ObjectId) -> bool:
        if oid in self._bases or oid in self._frames:
            return True  # both caches hold stored objects only
        if not self._objects_cf.key_may_exist(oid):
            return False  # the bloom filter's "definitely not": no read needed
        return read(self._objects_cf, oid) is not None

    def _frame(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        epoch = self._epoch  # before reading: see _remember
        frame = self._frames.get(oid)
        if frame is None:
            frame = read(self._objects_cf, oid)
            if frame is None:
                raise NotFound(f"object {hex_id(oid)} is not in the store")
            if is_body(frame):
                frame = self._body(oid, frame)
            if keep:
                self._remember(self._frames, oid, frame, len(frame), epoch)
        return frame

    def _body(self, oid: ObjectId, frame: bytes) -> bytes:
        """The frame a BODY frame stands for (its bytes are checked by the record's hash)."""
        codec_of(oid, frame)  # a foreign or newer frame is refused, not followed
        # fsck is what a user runs on a damaged store: it must report, never crash. Only
        # the scan's own thread pays for the check: a mount's reads meanwhile do not.
        checks = self._checked if self._scanner.depth else None
        body = read(self._bodies_cf, parse_body(oid, frame).key, checks)
        if body is None:
            raise CorruptObject(
                f"object {hex_id(oid)} is corrupt: its stored frame is missing (run `helix fsck`)"
            )
        return body

    def _put(self, batch: rocksdict.WriteBatch, oid: ObjectId, encoded: Encoded) -> None:
        """Queue a frame; a large plain one goes to `bodies`, next in write order."""
        if encoded.base is not None or len(encoded.frame) < MIN_BLOB_BYTES:
            batch.put(oid, encoded.frame, self._objects)
            return
        if self._next_body is None:  # not at open: a damaged `bodies` still reads
            self._next_body = self._last_body() + 1
        key, self._next_body = self._next_body, self._next_body + 1
        size = logical_size(oid, encoded.frame)
        batch.put(body_key(key), encoded.frame, self._bodies)
        batch.put(oid, encode_body(key, encoded.frame, size), self._objects)

    def _put_patched(
        self,
        batch: rocksdict.WriteBatch,
        oid: ObjectId,
        data: bytes,
        patch: Patch,
        depths: dict[ObjectId, int],
        edges: list[tuple[ObjectId, ObjectId]],
    ) -> None:
        """Queue a record its writer described as a patch on a stored one (ADR 0095): a
        DELTA frame of its middle alone when the base is at hand and its chain has room,
        else RAW, as an uncompressed record (a tree) is stored without a patch."""
        depth = depths.get(patch.base)
        if depth is None:
            depth = self._patch_depth(patch.base)
        if depth is not None and depth < self.max_delta_depth:
            frame = encode_patch(bytes(data), patch.base, depth, patch.prefix, patch.suffix)
            if frame is not None:
                batch.put(oid, frame, self._objects)
                depths[oid] = depth + 1
                edges.append((patch.base, oid))
                return
        batch.put(oid, encode_raw(bytes(data)), self._objects)
        depths[oid] = 0

    def _patch_depth(self, base: ObjectId) -> int | None:
        """The chain depth of a patch's base; None when it is not stored (a hint, not a
        must). Patched records are remembered as they are written: the next version of
        a folder is a patch on the last, so its frame is rarely read."""
        depth = self._patch_depths.get(base)
        if depth is not None:
            return depth
        try:
            frame = self._frame(base)
        except HelixError:
            return None
        return delta_depth(frame)  # a body's frame is plain: 0

    def _drop(self, batch: rocksdict.WriteBatch, oid: ObjectId, frame: bytes | None) -> None:
        if frame is not None and is_body(frame):
            # a damaged BODY frame names no body: dropping the object is all we can do
            with contextlib.suppress(CorruptObject):
                batch.delete(parse_body(oid, frame).key, self._bodies)
        batch.delete(oid, self._objects)

    def _last_body(self) -> int:
        """The highest body number; an unreadable end of `bodies` is an error, not 0:
        numbering again from 1 would overwrite the bodies of stored chunks."""
        cursor = self._bodies_cf.iter()
        cursor.seek_to_last()
        if cursor.valid():
            return int.from_bytes(cursor.key(), "big")
        check_cursor(cursor)
        return 0

    def _forget(self, oids: Iterable[ObjectId]) -> None:
        """Drop dropped or re-encoded objects from every cache: a cached depth that is no
        longer true would let a chain grow past its limit, a dropped base corrupt one."""
        for oid in oids:
            self._frames.discard(oid)
            self._bases.discard(oid)
            self._anchors.discard(oid)
            self._patch_depths.pop(oid, None)

    def _remember(self, cache: ByteLRU[V], oid: ObjectId, value: V, size: int, epoch: int) -> None:
        """Cache what a read found, unless a delete ran since `epoch`, the epoch the
        caller saw before it read (what it read may be deleted by now).

        Reads take no lock. A read that raced a delete could otherwise put back a frame
        the delete just dropped, and `_exists` would then skip re-storing that object for
        good. Checking the epoch after the put closes the window: a delete that ended
        since the read began changed the epoch; one that ends after the check discards
        our entry itself. (The epoch must be the one from before the read: one taken
        here would miss a delete that ran whole between the read and this put.)
        """
        cache.put(oid, value, size)
        if epoch & 1 or self._epoch != epoch:
            cache.discard(oid)

    def _load(
        self, oid: ObjectId, frame: bytes, *, strict: bool = False, keep: bool = True
    ) -> Known:
        """Decode `oid`, walking its delta chain iteratively, and verify the result.

        Only the final record is hashed: a bad link anywhere in the chain changes it, so
        one hash proves them all (a chain read was 40% hashing). Only when that check
        fails do we walk again, hashing every link, to name the object that is damaged.
        `keep=False` (a maintenance scan): the links' frames are not cached either.
        """
        chain: list[tuple[ObjectId, Delta]] = []
        current, current_frame = oid, frame
        record: bytes | None = None
        shared = None if keep else self._scan_records  # (read once: a scan may end)
        epoch = self._epoch  # before reading: see _remember
        while codec_of(current, current_frame) is Codec.DELTA:
            delta = parse_delta(current, current_frame)
            chain.append((current, delta))
            if len(chain) > CHAIN_HARD_LIMIT:
                raise CorruptObject(f"object {hex_id(oid)} is corrupt: its delta chain loops")
            cached = self._bases.get(delta.base)
            record = cached.record if cached is not None else None
            if record is None and not strict:  # the final hash proves a walked link
                record = self._walked(delta.base, epoch)
            if record is None and shared is not None:
                record = shared.get(delta.base)
            if record is not None:
                break  # verified when it was cached
            current, current_frame = delta.base, self._frame_of_base(current, delta.base, keep)
        if record is None:
            record = decode_plain(current, current_frame, codec_of(current, current_frame))
            if strict or not chain:
                verify(current, record)
            elif shared is not None:
                _share(shared, current, record)
        walked = {current: record} if keep and len(chain) > 1 else None
        for link, delta in reversed(chain):
            record = apply_delta(link, delta, record)
            if strict:
                verify(link, record)
            elif shared is not None:
                _share(shared, link, record)
            if walked is not None and link != oid:
                walked[link] = record
        settled = not epoch & 1 and self._epoch == epoch  # as _remember's check
        if walked is not None and settled and sum(map(len, walked.values())) <= LAST_CHAIN_BYTES:
            self._last_chain = (epoch, walked)
        if chain and object_id(record) != oid:
            if not strict:
                return self._load(oid, frame, strict=True, keep=keep)  # raises, naming the culprit
            verify(oid, record)  # the chain changed under us: still, never return bad bytes
        return Known(record, chain[0][1].depth if chain else 0)

    def _walked(self, oid: ObjectId, epoch: int) -> bytes | None:
        """`oid`'s record if the last chain walked had it, in this epoch (a gc since
        may have deleted it)."""
        walked_in, records = self._last_chain
        return records.get(oid) if walked_in == epoch and not epoch & 1 else None

    def _frame_of_base(self, dependent: ObjectId, base: ObjectId, keep: bool) -> bytes:
        try:
            return self._frame(base, keep=keep)
        except NotFound:
            raise _BaseGone(
                f"object {hex_id(dependent)} is a delta on {hex_id(base)}, which is missing "
                "(run `helix fsck`)"
            ) from None

    def _encode(
        self,
        record: bytes,
        base_id: ObjectId | None,
        pending: Mapping[ObjectId, Known],
        links: Mapping[ObjectId, ObjectId] | None = None,
        *,
        keep: bool = True,
    ) -> Encoded:
        """A delta frame when the hinted base is at hand and it pays, else RAW/LZ4.
        `links`: the bases of `pending` deltas, which the store cannot read yet.
        `keep=False` (repack): bases read from the store are not cached."""
        if base_id is None or len(record) < MIN_DELTA_RECORD:
            return Encoded(encode_plain(record, self.compression), None, 0)
        base = self._delta_base(base_id, pending, keep)
        if base is not None and base.depth >= self.max_delta_depth:
            base_id, base = self._skip_back(base_id, base, pending, links or {}, keep)
        if base is None:
            return Encoded(encode_plain(record, self.compression), None, 0)
        frame = encode_delta(record, base_id, base.record, base.depth)
        if frame is not None and len(frame) * CLEARLY_SMALL > len(record):
            plain = encode_plain(record, self.compression)
            if len(plain) <= len(frame):
                return Encoded(plain, None, 0)
        if frame is None:
            return Encoded(encode_plain(record, self.compression), None, 0)
        anchor = self._anchor_after(base_id, base)
        if anchor == base_id and keep and base_id not in pending:
            self._anchors.put(base_id, base, len(base.record))  # stored: its chain's next skip
        return Encoded(frame, base_id, base.depth + 1, anchor)

    @property
    def _anchor_depth(self) -> int:
        """The depth of the ancestor a full chain (at max_delta_depth) skips back to:
        half the limit, plus one, links up."""
        return self.max_delta_depth - self.max_delta_depth // 2 - 1

    def _anchor_after(self, base_id: ObjectId, base: Known) -> ObjectId | None:
        """The anchor of a new delta on `base`: `base` itself at the anchor depth, below
        it the anchor `base` knew (a chain keeps its anchor until it skips back)."""
        if base.depth == self._anchor_depth:
            return base_id
        return base.anchor if base.depth > self._anchor_depth else None

    def _skip_back(
        self,
        base_id: ObjectId,
        base: Known,
        pending: Mapping[ObjectId, Known],
        links: Mapping[ObjectId, ObjectId],
        keep: bool,
    ) -> tuple[ObjectId, Known | None]:
        """An older base, half the depth limit up the chain, for a chain that is full.

        Starting a new full frame every `max_delta_depth` versions would store a whole
        copy of a hot file (a directory tree, say) every few saves. Skipping back instead
        (as Subversion's skip-deltas do) keeps depth bounded, and the delta against a
        version a few saves older is still small. That ancestor (the anchor) is the
        same for every skip of a chain until it grows apart: known from the writes that
        built the chain, and kept decoded since the write that built on it, the skip
        reads nothing (walking the chain and decoding the anchor read ~16 frames: 0.5 ms,
        one commit in twenty of the benchmark).
        """
        if base.anchor is not None:
            older = self._anchor(base.anchor, pending, keep)
            if older is not None and older.depth < self.max_delta_depth:
                return base.anchor, older
        ancestor = base_id
        for _ in range(self.max_delta_depth // 2 + 1):
            if ancestor in links:
                parent: ObjectId | None = links[ancestor]
            else:
                parent = self._base_of(ancestor) if ancestor not in pending else None
            if parent is None:
                return base_id, None
            ancestor = parent
        older = self._anchor(ancestor, pending, keep)
        if older is None or older.depth >= self.max_delta_depth:
            return base_id, None
        return ancestor, older

    def _anchor(
        self, anchor: ObjectId, pending: Mapping[ObjectId, Known], keep: bool
    ) -> Known | None:
        """The anchor's record, decoded once and kept. Only one read from the store is
        kept (a pending record may never land), and only under the lock that deletes
        hold too (every caller encodes under it): a dropped anchor is never put back."""
        older = self._anchors.get(anchor)
        if older is not None:
            return older
        older = self._delta_base(anchor, pending, keep)
        if older is not None and keep and anchor not in pending:
            self._anchors.put(anchor, older, len(older.record))
        return older

    def _delta_base(
        self, base_id: ObjectId, pending: Mapping[ObjectId, Known], keep: bool = True
    ) -> Known | None:
        """The hinted base, decoded; None if it is absent or unreadable (a hint, not a must)."""
        known = pending.get(base_id) or self._bases.get(base_id)
        if known is not None:
            return known
        epoch = self._epoch  # before reading: see _remember
        try:
            known = self._load(base_id, self._frame(base_id, keep=keep), keep=keep)
        except HelixError:
            return None
        if keep:
            self._remember(self._bases, base_id, known, len(known.record), epoch)
        return known

    def _base_of(self, oid: ObjectId) -> ObjectId | None:
        """The base `oid` is a delta on; None for plain, missing or unreadable frames.

        Tolerant on purpose: gc must be able to drop a corrupt object, and a write
        looking for an older base simply stores a full frame when it finds none.
        """
        try:
            frame = read(self._objects_cf, oid)
        except HelixError:
            return None
        return _base_in(oid, frame)


def _plain_record(oid: ObjectId, frame: bytes) -> bytes | None:
    """The record a body holds if it is `oid`'s (it hashes to it), else None."""
    try:
        record = decode_plain(oid, frame, codec_of(oid, frame))
    except HelixError:  # not a plain frame of ours: get() will say what is wrong
        return None
    return record if object_id(record) == oid else None


def _share(shared: ByteLRU[bytes], oid: ObjectId, record: bytes) -> None:
    """Cache a link a scan decoded, if it is right: later reads trust it, and only a
    chain's last record is checked (a wrong link the next one does not copy from
    leaves that one right). A wrong one is for the read that needs it to report."""
    if object_id(record) == oid:
        shared.put(oid, record, len(record))


def _delta_index(frames: Iterable[tuple[bytes, bytes]]) -> dict[ObjectId, set[ObjectId]]:
    """base -> the deltas on it, from (id, frame) pairs."""
    index: dict[ObjectId, set[ObjectId]] = {}
    for key, frame in frames:
        if len(frame) > HEADER_SIZE and frame[4] == Codec.DELTA:
            oid = ObjectId(key)
            try:
                base = parse_delta(oid, frame).base
            except CorruptObject:
                continue  # unreadable either way; fsck reports it
            index.setdefault(base, set()).add(oid)
    return index


def _base_in(oid: ObjectId, frame: bytes | None) -> ObjectId | None:
    """The base a frame is a delta on; None for plain, missing or unreadable frames."""
    try:
        if frame is None or codec_of(oid, frame) is not Codec.DELTA:
            return None
        return parse_delta(oid, frame).base
    except HelixError:
        return None


def _steps_that_fit(bounds: list[int], room: int) -> int:
    """How many of the oldest blob files one compaction can move within `room`."""
    used = taken = 0
    for bound in bounds:
        if used + bound > room:
            break
        used += bound
        taken += 1
    return taken
