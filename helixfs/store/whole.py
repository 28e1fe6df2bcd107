"""What a store that keeps each record whole (no deltas, no disk of its own to compact)
answers to the maintenance half of ObjectStore: nothing to do. MemoryStore and S3Store
share it; RocksStore has real answers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Self

from helixfs.ids import ObjectId
from helixfs.store import Compaction


class WholeRecords:
    """No deltas, nothing to repack, compact or sync: a record is stored as it is given,
    and durable (or, in memory, never durable) once `write` returns."""

    def delta_base(self, oid: ObjectId) -> ObjectId | None:
        return None

    def scanning(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def repack(self, pairs: Iterable[tuple[ObjectId, ObjectId]]) -> int:
        return 0

    def prepare_delete(self) -> None:
        """No deltas to look through before a delete."""

    def sync(self) -> None:
        """A write that returned is as durable as this store gets."""

    def compact(self) -> Compaction:
        return Compaction(dead_bytes_kept=0, free_needed=0)

    def garbage_waiting(self) -> bool:
        return False

    def disk_bytes(self) -> int:
        return 0

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
