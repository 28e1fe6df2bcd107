"""Bulk import: many memories in one transaction, with given or computed vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import Clock

from helixfs.errors import HelixError, InvalidInput
from helixfs.memory import Embedder, Memory, MemoryImport, Source

FACTS = [
    MemoryImport("The staging database runs PostgreSQL 15.", type="fact", tags=("db",)),
    MemoryImport("Deploys go out on Tuesdays after the standup.", scope="ops", at=1000.0),
    MemoryImport("Use ruff for linting, never flake8.", source=Source(agent="lead")),
]


def test_import_stores_searchable_memories_with_history(vmem: Memory, clock: Clock) -> None:
    ids = vmem.import_memories(FACTS)
    assert len(ids) == 3
    first = vmem.get(ids[0])
    assert first.content == FACTS[0].content
    assert first.type == "fact" and "db" in first.tags
    assert first.created == clock.now
    assert vmem.get(ids[1]).created == 1000.0 and vmem.get(ids[1]).scope == "ops"
    assert vmem.get(ids[2]).source.agent == "lead"
    assert [h.op for h in vmem.history(ids[0])] == ["add"]
    hits = vmem.recall("which postgres version does staging use", k=3, mode="vector")
    assert hits and hits[0].id == ids[0]
    assert vmem.recall("flake8", k=3, mode="lexical")[0].id == ids[2]


def test_import_with_given_vectors_skips_the_embedder(
    vmem: Memory, real_embedder: Embedder
) -> None:
    vectors = np.asarray(real_embedder.embed([f.content for f in FACTS]), dtype=np.float32)
    before = vmem.embed_count
    ids = vmem.import_memories(FACTS, 3.0 * vectors)  # normalised on the way in
    assert vmem.embed_count == before
    hits = vmem.recall("linting tool", k=1, mode="vector")
    assert hits[0].id == ids[2]


def test_import_is_not_consolidated(vmem: Memory) -> None:
    """An import restores memories as they were: an equal text is not folded into it."""
    kept = vmem.remember(FACTS[0].content)
    (imported,) = vmem.import_memories(FACTS[:1])
    assert imported != kept.id
    assert vmem.get(kept.id).status == "active" and vmem.get(imported).status == "active"


def test_import_redacts_secrets(vmem: Memory, db_path: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (memory_id,) = vmem.import_memories([MemoryImport(f"CI token is {secret}")])
    assert secret not in vmem.get(memory_id).content
    vmem.close()
    assert secret.encode() not in db_path.read_bytes()


def test_a_bad_item_imports_nothing(vmem: Memory) -> None:
    with pytest.raises(InvalidInput):
        vmem.import_memories([FACTS[0], MemoryImport("fine", scope="bad scope!")])
    with pytest.raises(HelixError):
        vmem.import_memories(FACTS, np.zeros((2, 384), dtype=np.float32))
    assert vmem.memories(status=None) == []


def test_import_without_an_embedder_is_lexical_then_backfilled(
    db_path: Path, clock: Clock, real_embedder: Embedder
) -> None:
    with Memory.open(db_path, None, clock=clock) as memory:
        ids = memory.import_memories(FACTS, np.ones((3, 384), dtype=np.float32))
    with Memory.open(db_path, real_embedder, clock=clock) as memory:
        hits = memory.recall("which postgres version does staging use", k=1, mode="vector")
        assert hits[0].id == ids[0]


def test_import_updates_a_warm_vector_index(vmem: Memory) -> None:
    vmem.warm()
    vmem.recall("anything", k=1)
    ids = vmem.import_memories(FACTS)
    assert vmem.recall("linting tool", k=1, mode="vector")[0].id == ids[2]


def test_an_import_rebuilds_a_warm_index_itself(vmem: Memory) -> None:
    """The next search after an import rebuilt the vector indexes (1.5-2.4 s at
    100,000 memories), and in a mount that search can come from the FUSE loop."""
    vmem.warm()
    vmem.import_memories(FACTS)
    assert vmem._index_cache._memories is not None  # built again, by the import
    assert vmem._index_cache._memories is vmem._current_indexes().memories


def test_an_import_in_a_one_shot_process_builds_no_index(vmem: Memory) -> None:
    vmem.import_memories(FACTS)
    assert vmem._index_cache._memories is None


def test_import_leaves_no_wal_behind(vmem: Memory, db_path: Path) -> None:
    """Reads go through mmap only for the database file: a big import is checkpointed."""
    vmem.import_memories([MemoryImport(f"Service {n} listens on port {n}.") for n in range(500)])
    assert Path(str(db_path) + "-wal").stat().st_size == 0


def test_an_import_is_not_reported_failed_when_the_wal_cannot_be_folded_yet(
    mem: Memory, db_path: Path
) -> None:
    """The import committed, then its closing checkpoint met a reader of an older
    snapshot (or the background checkpointer, ADR 0008) and raised BusyError: the
    caller saw a failed import that had stored everything, and a retry stored it twice."""
    import apsw

    reader = apsw.Connection(str(db_path))
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchall()  # holds its snapshot
    mem._conn.set_busy_timeout(50)  # the 10 s wait would only slow the test down
    try:
        ids = mem.import_memories(FACTS)
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert len(ids) == 3 and [mem.get(i).content for i in ids] == [f.content for f in FACTS]
