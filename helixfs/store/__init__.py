"""Content-addressed object storage: the only layer that knows which database holds bytes.

Everything above sees the `ObjectStore` protocol: objects are opaque records keyed by the
BLAKE3 of their bytes, refs are small named values updated by compare-and-swap, and one
`write` lands objects and ref updates atomically. A second backend (an S3-compatible
store, say) is one new module that passes tests/store/test_contract.py.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from helixfs.ids import ObjectId

REPACK_BATCH = 128  # pairs a repack re-encodes per write (and hold of a store's lock)


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()
"""`RefUpdate.expected` value that skips the compare in compare-and-swap."""


@dataclass(frozen=True)
class RefUpdate:
    """Set `name` to `new` (None deletes it) if it currently holds `expected`.

    `expected=None` means "must not exist yet"; `expected=ANY` skips the check.
    """

    name: str
    new: bytes | None
    expected: bytes | None | _Any = ANY


class Patch(NamedTuple):
    """What a new record shares with a stored one, as its writer knows it (ADR 0095):
    `base[:prefix]` starts it and `base[len(base) - suffix:]` ends it. Path copying
    changes one entry of a folder and knows its offset, so no search is needed."""

    base: ObjectId
    prefix: int
    suffix: int


@dataclass(frozen=True)
class StoreStats:
    objects: int
    logical_bytes: int  # sum of record sizes before compression and deltas
    stored_bytes: int  # bytes the backend holds for them (keys and framing included)
    disk_bytes: int  # bytes the backend's files take on disk (0 for memory)
    cache_hits: int  # gets answered from memory (any in-process cache)
    cache_misses: int  # gets that had to read the backend
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def cache_hit_ratio(self) -> float:
        total = self.cache_hits + self.cache_misses
        return self.cache_hits / total if total else 0.0


@dataclass(frozen=True)
class Compaction:
    """What `compact` could not give back: deleted chunks whose blob files it kept."""

    dead_bytes_kept: int  # on disk still, in blob files shared with live chunks
    free_needed: int  # more free disk space its next step needs; 0: nothing waits for room


class ObjectStore(Protocol):
    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        """The record stored under `oid`, verified against it.

        Raises NotFound if absent, CorruptObject if the bytes do not hash to `oid`.
        `keep=False`: a streamed read (a large file's chunks, read once in order), which
        must not fill or churn the store's own caches.
        """
        ...

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]:
        """The records of `oids`, in order, each verified as by `get(oid, keep=False)`.

        For a file's next chunks, most likely stored one after another: a store may read
        them in one pass over its storage (RocksStore follows its `bodies` in order).
        """
        ...

    def contains(self, oid: ObjectId) -> bool: ...

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
        """Store `objects` and apply `refs` atomically: all of it or none.

        Raises RefConflict (and writes nothing) if any ref's `expected` does not hold.
        `delta_bases` hints, per new object, an existing object it probably resembles (the
        previous version of the same file); the store may encode a delta against it.
        `uncompressed` hints objects not worth compressing on the write path (a set:
        tested per object); the store keeps them as they are.
        `patches` tells, per new object, a stored one it shares a prefix and a suffix
        with (a folder's previous version, one entry changed): the store may keep the
        middle alone, on that base, without looking for it (ADR 0095).
        `sync=True` returns only once the write survives power loss.
        `bulk=True` (objects only: a large file's chunks, which nothing reaches yet) may
        skip the store's log: such objects survive a crash only once a later write
        without `bulk` has returned, which the store ensures before that write lands.
        """
        ...

    def check_room(self, nbytes: int) -> None:
        """StoreFull if a write of about `nbytes` and a ref update would be refused now
        for want of disk space; writes and counts nothing."""
        ...

    def ref(self, name: str) -> bytes | None: ...

    def refs(self, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        """All refs whose name starts with `prefix`, sorted by name."""
        ...

    def ids(self, prefix: bytes = b"") -> Iterator[ObjectId]:
        """Stored ids starting with `prefix` (all by default)."""
        ...

    def delete(self, oids: Iterable[ObjectId]) -> None:
        """Drop objects (gc only). Objects other objects are delta-encoded against are
        kept or re-encoded by the store, never left dangling."""
        ...

    def prepare_delete(self) -> None:
        """Do now what the first `delete` would have to do first (a scan of the store),
        so that gc does it before taking its lock."""
        ...

    def delta_base(self, oid: ObjectId) -> ObjectId | None:
        """The object `oid` is stored as a delta on, if it is one (None if absent)."""
        ...

    def scanning(self) -> AbstractContextManager[None]:
        """A maintenance scan (gc's mark, fsck) runs inside: its reads (keep=False) may
        share decoded delta bases with each other, never with the caches a mount uses."""
        ...

    def repack(self, pairs: Iterable[tuple[ObjectId, ObjectId]]) -> int:
        """Store objects as deltas on the given bases where that pays (gc, for records
        written plain on a hot path); how many were re-encoded. What they read as never
        changes. A call of at most REPACK_BATCH pairs lands whole or not at all."""
        ...

    def sync(self) -> None:
        """Make every write so far durable against power loss."""
        ...

    def compact(self) -> Compaction:
        """Give back the disk space of deleted objects (gc calls it after deleting), and
        say what stayed on disk for want of room."""
        ...

    def garbage_waiting(self) -> bool:
        """Whether `compact` has deleted objects' space to give back that an earlier
        one left (for want of free room): a gc that deletes nothing compacts then."""
        ...

    def disk_bytes(self) -> int:
        """What the store's files take on disk now (0 in memory); a cheap stat, no scan."""
        ...

    def stats(self) -> StoreStats: ...

    def close(self) -> None: ...
