"""A dict-backed ObjectStore: the contract without a database, for fast unit tests.

It keeps the same promises as RocksStore (verified gets, CAS refs, all-or-nothing
writes), so code tested against it behaves the same on disk.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from helixfs.errors import CorruptObject, NotFound
from helixfs.ids import ObjectId, hex_id, object_id
from helixfs.store import Patch, RefUpdate, StoreStats
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
from helixfs.store.whole import WholeRecords


class MemoryStore(WholeRecords):
    """Objects and refs in two dicts, guarded by one lock so a write is atomic."""

    def __init__(self) -> None:
        self._objects: dict[ObjectId, bytes] = {}
        self._refs: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._closed = False

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        record = self._objects.get(check_oid(oid))
        if record is None:
            raise NotFound(f"object {hex_id(oid)} is not in the store")
        if object_id(record) != oid:
            raise CorruptObject(f"object {hex_id(oid)} is corrupt: its bytes hash elsewhere")
        return record

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]:
        return [self.get(oid, keep=False) for oid in oids]

    def contains(self, oid: ObjectId) -> bool:
        return check_oid(oid) in self._objects

    def check_room(self, nbytes: int) -> None:
        """Memory has no disk to fill."""

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
        if bulk:
            check_bulk(refs, sync)
        check_objects(objects)
        check_delta_bases(objects, delta_bases)
        check_patches(objects, patches)  # a hint: records are kept whole here
        with self._lock:
            planned = plan_refs(refs, self._refs.get)
            for oid, record in objects.items():
                self._objects[oid] = bytes(record)
            for name, value in planned.items():
                if value is None:
                    self._refs.pop(name, None)
                else:
                    self._refs[name] = value

    def ref(self, name: str) -> bytes | None:
        return self._refs.get(check_ref_name(name))

    def refs(self, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        check_ref_prefix(prefix)
        with self._lock:
            items = sorted((n, v) for n, v in self._refs.items() if n.startswith(prefix))
        return iter(items)

    def ids(self, prefix: bytes = b"") -> Iterator[ObjectId]:
        with self._lock:
            return iter([oid for oid in self._objects if oid.startswith(prefix)])

    def delete(self, oids: Iterable[ObjectId]) -> None:
        with self._lock:
            for oid in oids:
                self._objects.pop(check_oid(oid), None)

    def stats(self) -> StoreStats:
        with self._lock:
            logical = sum(len(r) for r in self._objects.values())
            count = len(self._objects)
        return StoreStats(
            objects=count,
            logical_bytes=logical,
            stored_bytes=logical + 32 * count,
            disk_bytes=0,
            cache_hits=0,
            cache_misses=0,
        )

    def close(self) -> None:
        self._closed = True
