"""The packs of one S3 remote, as one process knows them (ADR 0064; format: store/pack.py).

- Indexes: `packs/NAME.idx` objects are listed, each fetched once and kept in a cache
  folder on disk (an index never changes: its pack's name is random and never reused),
  so the next process only fetches the indexes of packs new since. Only indexes the
  listing shows are used, so a cache never vouches for a pack the remote lacks. An
  index object that does not check is read again from its pack's own copy; when that
  fails too, the pack is taken as absent (a push sends its objects again) and named in
  `damaged`.
- Reads: records of a pack come by ranged GETs (neighbours within GAP bytes in one)
  until what the ranged reads of that pack have cost, a request counted as REQUEST_BYTES,
  reaches the pack's size: then it comes whole and is kept in memory (BODIES bytes at
  most), which is what a clone's walk down the history wants (ADR 0081: a lazy clone's
  reads of single files stay ranged). Blobs come back as the remote stores them: the
  caller decodes and verifies.
- Writes: `cut` turns a stream of records into packs of at most PACK_BYTES bytes or
  PACK_OBJECTS records, one pack open per group (`group`: metadata apart from file
  contents, ADR 0081); `S3Store.upload` sends each (pack, then index) while the next
  fills. A group of fewer than PACK_MIN records goes loose, as before packs: a mount's
  push of one save is three small objects, and a pack of them would be one more index
  for every reader to list.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId
from helixfs.store.pack import TRAILER_SIZE, PackBuilder, Slot, decode_index, index_length
from helixfs.store.s3client import S3Client

log = logging.getLogger(__name__)

PACKS = "packs/"
INDEX_SUFFIX = ".idx"
PACK_BYTES = 16 << 20  # a pack's bound: one PUT that a dropped connection costs little
PACK_OBJECTS = 100_000  # and its records' bound: an index of ~5 MB at most
PACK_MIN = 16  # fewer records than this go loose
IN_FLIGHT = 4  # packs being sent at once (each held in memory until sent)
# What one request costs, in bytes it could have brought instead (~7 ms of botocore CPU
# here, an RTT or two on a network): ranged reads of a pack that have cost its size
# make the next read of it whole (ADR 0081)
REQUEST_BYTES = 1 << 20
GAP = 64 << 10  # records this close in a pack come in one ranged GET
SPAN_BYTES = 8 << 20  # and one ranged GET is at most this long
BODIES = 64 << 20  # whole packs kept in memory
READERS = 8

Unsealer = Callable[[str, bytes], bytes]  # (pack name, stored index) -> plain index


def pack_key(name: str) -> str:
    return f"{PACKS}{name}"


def index_key(name: str) -> str:
    return f"{PACKS}{name}{INDEX_SUFFIX}"


class RemotePacks:
    def __init__(self, client: S3Client, unseal_index: Unsealer, cache: Path | None) -> None:
        self._client = client
        self._unseal = unseal_index
        self._cache = cache
        self._pool = ThreadPoolExecutor(READERS, thread_name_prefix="helix-s3-packs")
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()
        self._where: dict[ObjectId, list[Slot]] = {}
        self._known: set[str] = set()  # packs whose index is loaded
        self.damaged: set[str] = set()  # packs whose index did not check, either copy
        self._loaded = False
        self._listings = 0  # listings done: a refresh asked before the last one is done
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._body_bytes = 0
        self._sizes: dict[str, int] = {}  # pack -> its records' end (from its index)
        self._spent: dict[str, int] = {}  # pack -> what its ranged reads cost so far

    # ------------------------------------------------------------ indexes

    def ensure(self) -> None:
        """Load the indexes once per process (later only when asked: refresh)."""
        if not self._loaded:
            self.refresh()

    def refresh(self) -> None:
        """List the remote's indexes and load those not known yet. Threads that ask at
        once (a walk's misses, in parallel) share one listing."""
        asked_at = self._listings
        with self._refreshing:
            if self._listings != asked_at:
                return  # listed while this thread waited
            names = [
                key[len(PACKS) : -len(INDEX_SUFFIX)]
                for key, _ in self._client.listing(PACKS)
                if key.endswith(INDEX_SUFFIX)
            ]
            with self._lock:
                new = [n for n in names if n not in self._known and n not in self.damaged]
            for name, entries in zip(new, self._pool.map(self._load, new), strict=True):
                if entries is not None:
                    self._learn(name, entries)
            self._loaded = True
            self._listings += 1

    def _learn(self, name: str, entries: list[tuple[ObjectId, Slot]]) -> None:
        with self._lock:
            end = 0
            for oid, slot in entries:
                self._where.setdefault(oid, []).append(slot)
                end = max(end, slot.offset + slot.length)
            self._sizes[name] = end
            self._known.add(name)

    def added(self, name: str, stored_index: bytes) -> None:
        """A pack this process just stored (pack, then index): known without a fetch."""
        self._keep(name, stored_index)
        self._learn(name, list(decode_index(name, self._unseal(name, stored_index))))

    def slots(self, oid: ObjectId) -> list[Slot]:
        with self._lock:
            return list(self._where.get(oid, ()))

    def has(self, oid: ObjectId) -> bool:
        with self._lock:
            return oid in self._where

    def entries(self) -> dict[ObjectId, Slot]:
        with self._lock:
            return {oid: slots[0] for oid, slots in self._where.items()}

    def _load(self, name: str) -> list[tuple[ObjectId, Slot]] | None:
        """Pack `name`'s entries: from the cache, the index object, or the pack's end."""
        for source in (self._cached, self._index_object, self._pack_copy):
            try:
                stored = source(name)
                if stored is None:
                    continue
                entries = list(decode_index(name, self._unseal(name, stored)))
            except CorruptObject as err:
                log.info("remote %s: %s", self._client.location, err)
                continue
            if source is not self._cached:
                self._keep(name, stored)
            return entries
        with self._lock:
            self.damaged.add(name)
        log.info(  # at INFO: the daemon's log has it, a command's error names the pack
            "remote %s: pack %s has no readable index; its objects count as absent there",
            self._client.location,
            name,
        )
        return None

    def _index_object(self, name: str) -> bytes | None:
        return self._client.get(index_key(name))

    def _pack_copy(self, name: str) -> bytes | None:
        trailer = self._client.get_range(pack_key(name), -TRAILER_SIZE)
        if trailer is None:
            return None
        length = index_length(name, trailer)
        tail = self._client.get_range(pack_key(name), -(length + TRAILER_SIZE))
        return None if tail is None else tail[:length]

    def _cached(self, name: str) -> bytes | None:
        if self._cache is None:
            return None
        try:
            return (self._cache / name).read_bytes()
        except OSError:
            return None

    def _keep(self, name: str, stored: bytes) -> None:
        if self._cache is None:
            return
        try:
            self._cache.mkdir(parents=True, exist_ok=True)
            temp = self._cache / f".{name}.{os.getpid()}.{threading.get_ident()}"
            temp.write_bytes(stored)
            os.replace(temp, self._cache / name)
        except OSError as err:  # a cache that cannot be written costs a fetch, no more
            log.warning("remote index cache %s not written: %s", self._cache, err)

    # ------------------------------------------------------------ reads

    def read_one(self, slot: Slot) -> bytes | None:
        """One stored record (None: the pack is not there)."""
        with self._lock:
            body = self._bodies.get(slot.pack)
        if body is not None:
            return body[slot.offset : slot.offset + slot.length]
        self._ranged(slot.pack, REQUEST_BYTES + slot.length)
        last = slot.offset + slot.length - 1
        blob = self._client.get_range(pack_key(slot.pack), slot.offset, last)
        return blob if blob is None or len(blob) == slot.length else None

    def read(self, wanted: Iterable[tuple[ObjectId, Slot]]) -> dict[ObjectId, bytes]:
        """Stored records of many objects, by pack: whole packs or ranged spans, the
        requests in parallel. An object whose bytes could not be read is left out."""
        by_pack: dict[str, list[tuple[ObjectId, Slot]]] = {}
        for oid, slot in wanted:
            by_pack.setdefault(slot.pack, []).append((oid, slot))
        jobs: list[tuple[str, bool, list[tuple[ObjectId, Slot]]]] = []
        for name, items in by_pack.items():
            spans = _spans(items)
            cost = sum(REQUEST_BYTES + _span_bytes(span) for span in spans)
            if self._whole_now(name, cost):
                jobs.append((name, True, items))
            else:
                jobs.extend((name, False, span) for span in spans)
        found: dict[ObjectId, bytes] = {}
        held = [job for job in jobs if job[1] and self._held(job[0])]
        for name, _, items in held:  # in memory: no request, no thread
            found.update(self._read_job(name, True, items))
        asked = [job for job in jobs if job not in held]
        for part in self._pool.map(lambda job: self._read_job(*job), asked):
            found.update(part)
        return found

    def _held(self, name: str) -> bool:
        with self._lock:
            return name in self._bodies

    def _whole_now(self, name: str, cost: int) -> bool:
        """Whether pack `name` is read whole now: it is in memory, or its ranged reads,
        with this one's `cost`, would have cost its size (else the cost is counted)."""
        with self._lock:
            if name in self._bodies:
                return True
            spent = self._spent.get(name, 0) + cost
            if spent >= self._sizes.get(name, 0):
                return True
            self._spent[name] = spent
            return False

    def _ranged(self, name: str, cost: int) -> None:
        with self._lock:
            self._spent[name] = self._spent.get(name, 0) + cost

    def _read_job(
        self, name: str, whole: bool, items: list[tuple[ObjectId, Slot]]
    ) -> dict[ObjectId, bytes]:
        """The records of one pack read whole, or of one span by a ranged GET."""
        body = self._whole(name) if whole else None
        if body is not None:
            return {oid: body[s.offset : s.offset + s.length] for oid, s in items}
        first = min(s.offset for _, s in items)
        last = max(s.offset + s.length for _, s in items) - 1
        blob = self._client.get_range(pack_key(name), first, last)
        if blob is None or len(blob) != last - first + 1:
            return {}
        return {oid: blob[s.offset - first : s.offset - first + s.length] for oid, s in items}

    def _whole(self, name: str) -> bytes | None:
        with self._lock:
            body = self._bodies.get(name)
            if body is not None:
                self._bodies.move_to_end(name)
                return body
        body = self._client.get(pack_key(name))
        if body is None:
            return None
        with self._lock:
            if name not in self._bodies:
                self._bodies[name] = body
                self._body_bytes += len(body)
            while self._body_bytes > BODIES and len(self._bodies) > 1:
                _, dropped = self._bodies.popitem(last=False)
                self._body_bytes -= len(dropped)
        return body

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _span_bytes(span: list[tuple[ObjectId, Slot]]) -> int:
    return span[-1][1].offset + span[-1][1].length - span[0][1].offset


def _spans(items: list[tuple[ObjectId, Slot]]) -> list[list[tuple[ObjectId, Slot]]]:
    """Records of one pack in runs that one ranged GET each reads (neighbours only)."""
    ordered = sorted(items, key=lambda item: item[1].offset)
    runs: list[list[tuple[ObjectId, Slot]]] = [[ordered[0]]]
    for item in ordered[1:]:
        start, end = runs[-1][0][1].offset, runs[-1][-1][1].offset + runs[-1][-1][1].length
        near = item[1].offset - end <= GAP
        if near and item[1].offset + item[1].length - start <= SPAN_BYTES:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


Loose = list[tuple[ObjectId, bytes]]
Grouping = Callable[[bytes], bool]  # a record -> whether it is packed apart (metadata)


class _Filling:
    """One group's records on their way: held until PACK_MIN, then into packs."""

    def __init__(self) -> None:
        self.held: Loose = []
        self.pack: PackBuilder | None = None


def cut(
    items: Iterable[tuple[ObjectId, bytes]],
    new_pack: Callable[[], PackBuilder],
    stored: Callable[[ObjectId, bytes], bytes],
    apart: Grouping | None = None,
) -> Iterable[PackBuilder | Loose]:
    """`items` as full packs, yielded as each fills, then the last ones; the records
    `apart` is true of (metadata) in packs of their own. A group of fewer than PACK_MIN
    records comes last, as one list of records to send loose."""
    groups = (_Filling(), _Filling())
    for item in items:
        group = groups[1 if apart is not None and apart(item[1]) else 0]
        if group.pack is None and len(group.held) < PACK_MIN - 1:
            group.held.append(item)
            continue
        queue, group.held = [*group.held, item], []
        if group.pack is None:
            group.pack = new_pack()
        for oid, record in queue:
            blob = stored(oid, record)
            full = group.pack.nbytes + len(blob) > PACK_BYTES or len(group.pack) >= PACK_OBJECTS
            if full and len(group.pack):
                yield group.pack
                group.pack = new_pack()
            group.pack.add(oid, blob, len(record))
    for group in groups:
        if group.pack is not None:
            yield group.pack
    loose = [item for group in groups if group.pack is None for item in group.held]
    if loose:
        yield loose
