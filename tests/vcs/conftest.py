"""Fixtures: a Repository over a real MemoryStore (fast) or a real RocksStore (disk)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from helixfs.ids import ObjectId
from helixfs.store import RefUpdate
from helixfs.store.memory import MemoryStore
from helixfs.store.rocks import REF_WRITE_BYTES
from helixfs.vcs import Repository


class CountingStore(MemoryStore):
    """A MemoryStore that counts gets, to prove reads touch only the objects they need."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: list[ObjectId] = []
        self.written: list[int] = []

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        self.gets.append(oid)
        return super().get(oid, keep=keep)

    def write(
        self, objects: Mapping[ObjectId, bytes], refs: Sequence[RefUpdate] = (), **kw: Any
    ) -> None:
        """Counts the bytes of each write as RocksStore's space guard claims them."""
        self.written.append(sum(map(len, objects.values())) + REF_WRITE_BYTES * len(refs))
        super().write(objects, refs, **kw)


@pytest.fixture
def store() -> CountingStore:
    return CountingStore()


@pytest.fixture
def repo(store: CountingStore) -> Repository:
    return Repository.create(store)


@pytest.fixture
def disk_repo(tmp_path: Path) -> Iterator[Repository]:
    repo = Repository.init(tmp_path / "store")
    yield repo
    repo.close()
