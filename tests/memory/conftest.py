"""Fixtures for the memory engine: real SQLite files in tmp dirs, the real embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helixfs.memory import Embedder, Memory
from helixfs.memory.embed import MODEL_INSTALL, load_embedder

DAY = 86400.0


class Clock:
    """A settable clock, so decay and recency are tested without sleeping."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * DAY


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    loaded = load_embedder()
    assert loaded is not None, f"the packaged model must be installed: {MODEL_INSTALL}"
    return loaded


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.db"


@pytest.fixture()
def mem(db_path: Path, clock: Clock) -> Iterator[Memory]:
    """Lexical-only memory (no embedder)."""
    with Memory.open(db_path, None, clock=clock) as memory:
        yield memory


@pytest.fixture()
def vmem(db_path: Path, clock: Clock, real_embedder: Embedder) -> Iterator[Memory]:
    """Memory with the real embedder (hybrid retrieval)."""
    with Memory.open(db_path, real_embedder, clock=clock) as memory:
        yield memory
