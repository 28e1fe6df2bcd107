"""Fixtures: a Repository over a real MemoryStore (fast) or a real RocksStore (disk)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helixfs.ids import ObjectId
from helixfs.store.memory import MemoryStore
from helixfs.vcs import Repository


class CountingStore(MemoryStore):
    """A MemoryStore that counts gets, to prove reads touch only the objects they need."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: list[ObjectId] = []

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        self.gets.append(oid)
        return super().get(oid, keep=keep)


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
