"""Schema, model pinning, forget / purge / history / rollback, relations."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from conftest import Clock

from helixfs.errors import InvalidInput, NotFound, UnsupportedVersion
from helixfs.memory import Embedder, Memory
from helixfs.memory.db import SCHEMA_VERSION, connect, new_id


def test_schema_is_created_with_fts_vectors_and_wal(db_path: Path, real_embedder: Embedder) -> None:
    Memory.open(db_path, real_embedder).close()
    conn = apsw.Connection(str(db_path))
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {
        "memories",
        "edges",
        "provenance",
        "history",
        "meta",
        "memories_fts",
        "chunks",
        "chunks_fts",
        "embed_cache",
        "memory_vec",
        "chunk_vec",
        "checkpoints",
    } <= names
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["embed_provider"] == real_embedder.name
    assert meta["embed_model"] == real_embedder.model
    assert meta["embed_dim"] == str(real_embedder.dim)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused_with_advice(db_path: Path) -> None:
    Memory.open(db_path, None).close()
    conn = apsw.Connection(str(db_path))
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.close()
    with pytest.raises(UnsupportedVersion, match="upgrade HelixFS"):
        Memory.open(db_path, None)


def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        connect(tmp_path)


def test_ids_are_time_sortable() -> None:
    assert new_id(1000.0) < new_id(2000.0)
    same = [new_id(5000.0) for _ in range(100)]
    assert same == sorted(same) and len(set(same)) == 100


def test_memories_written_lexically_get_vectors_when_a_model_arrives(
    db_path: Path, real_embedder: Embedder
) -> None:
    with Memory.open(db_path, None) as mem:
        target = mem.remember("Our continuous integration is GitHub Actions.")
        mem.remember("The frontend is written in TypeScript.")
    with Memory.open(db_path, real_embedder) as mem:
        assert mem.recall("which CI provider builds the code")[0].id == target.id


def test_a_model_change_triggers_a_tracked_reembed(db_path: Path, real_embedder: Embedder) -> None:
    with Memory.open(db_path, real_embedder) as mem:
        target = mem.remember("Our continuous integration is GitHub Actions.")
        mem.index_workspace({"README.md": b"# Project\n\nBuild with make.\n"}, "c1")
    conn = apsw.Connection(str(db_path))  # as if another model had written the vectors
    conn.execute("UPDATE meta SET value='old/model' WHERE key='embed_model'")
    conn.close()
    with Memory.open(db_path, real_embedder) as mem:
        # the memory is re-embedded; the chunk's vector for this model is in the cache
        assert mem.embed_count == 1
        assert mem.recall("which CI provider builds the code")[0].id == target.id
        assert mem.search("how to compile the project")[0].path == "README.md"
        assert mem.stats()["embed_model"] == real_embedder.model
    conn = apsw.Connection(str(db_path))
    notes = [r[0] for r in conn.execute("SELECT note FROM history WHERE op='reembed'")]
    assert notes == [f"model old/model (dim 384) -> {real_embedder.model} (dim 384)"]


def test_forget_is_a_soft_delete_and_rollback_restores(mem: Memory) -> None:
    kept = mem.remember("Feature flags live in flags.yaml")
    mem.forget(kept.id or "", reason="moved")
    assert mem.recall("feature flags") == []
    assert mem.get(kept.id or "").status == "forgotten"
    history = mem.history(kept.id or "")
    assert [(e.op, e.note) for e in history] == [("add", ""), ("forget", "moved")]
    restored = mem.rollback(kept.id or "")
    assert restored.status == "active"
    assert [h.id for h in mem.recall("feature flags")] == [kept.id]
    assert mem.history(kept.id or "")[-1].op == "rollback"


def test_forget_by_query_needs_exactly_one_match(mem: Memory) -> None:
    a = mem.remember("The queue is RabbitMQ")
    mem.remember("The queue consumer is written in Go")
    with pytest.raises(InvalidInput, match="several"):
        mem.forget("queue")
    assert mem.forget("queue RabbitMQ") == [a.id]
    with pytest.raises(NotFound):
        mem.forget("nothing like this exists")


def test_forget_by_id_prefix(mem: Memory) -> None:
    a = mem.remember("The linter is ruff")
    assert mem.forget((a.id or "")[:20].lower()) == [a.id]


def test_rollback_undoes_an_update_and_to_seq_restores_any_state(mem: Memory) -> None:
    first = mem.remember("The database is PostgreSQL.")
    mem.remember("The database is PostgreSQL 15 with pgvector.")
    memory_id = first.id or ""
    assert mem.rollback(memory_id).content == "The database is PostgreSQL."
    assert [h.id for h in mem.recall("PostgreSQL")] == [memory_id]
    update_seq = [e.seq for e in mem.history(memory_id) if e.op == "update"][0]
    assert mem.rollback(memory_id, update_seq).content.endswith("15 with pgvector.")
    with pytest.raises(NotFound):
        mem.rollback(memory_id, 999_999)


def test_rollback_of_a_supersede_reactivates_the_old_value(mem: Memory) -> None:
    old = mem.remember("The default branch is master")
    mem.remember("The default branch is main")
    assert mem.rollback(old.id or "").status == "active"


def test_rollback_of_a_creation_is_refused(mem: Memory) -> None:
    created = mem.remember("Nothing happened to this one")
    with pytest.raises(InvalidInput, match="forget"):
        mem.rollback(created.id or "")


def test_purge_erases_content_everywhere(db_path: Path, mem: Memory) -> None:
    doomed = mem.remember("The intern's phone number is 555 0199 zebra-quartz")
    mem.remember("The office is in Lyon")
    mem.purge(doomed.id or "")
    with pytest.raises(NotFound):
        mem.get(doomed.id or "")
    assert [e.op for e in mem.history(doomed.id or "")] == ["purge"]
    assert mem.recall("intern phone zebra") == []
    mem.close()
    raw = b"".join(
        p.read_bytes() for p in db_path.parent.iterdir() if p.name.startswith("memory.db")
    )
    assert b"zebra-quartz" not in raw


def test_relate_links_memories_and_refuses_bad_input(mem: Memory) -> None:
    a = mem.remember("The auth service issues JWTs")
    b = mem.remember("The gateway validates JWTs")
    edge = mem.relate(a.id or "", b.id or "", "depends_on")
    assert (edge.src, edge.dst, edge.rel) == (a.id, b.id, "depends_on")
    assert [e.rel for e in mem.edges(b.id or "")] == ["depends_on"]
    with pytest.raises(InvalidInput):
        mem.relate(a.id or "", b.id or "", "Bad Rel!")
    with pytest.raises(InvalidInput):
        mem.relate(a.id or "", b.id or "", "supersedes")
    with pytest.raises(InvalidInput):
        mem.relate(a.id or "", a.id or "", "depends_on")
    with pytest.raises(NotFound):
        mem.relate(a.id or "", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "depends_on")


def test_memories_lists_and_filters(mem: Memory, clock: Clock) -> None:
    a = mem.remember("We decided to vendor the parser", tags=["parser"], scope="helix")
    clock.advance(1)
    b = mem.remember("Beware: the parser leaks on cyclic input", tags=["parser", "bug"])
    assert [m.id for m in mem.memories()] == [b.id, a.id]
    assert [m.id for m in mem.memories(type="decision")] == [a.id]
    assert [m.id for m in mem.memories(tag="bug")] == [b.id]
    assert [m.id for m in mem.memories(scope="helix")] == [a.id]
    with pytest.raises(InvalidInput):
        mem.memories(status="zombie")


def test_history_of_an_unknown_id_is_not_found(mem: Memory) -> None:
    with pytest.raises(NotFound):
        mem.history("01ZZZZZZZZZZZZZZZZZZZZZZZZ")


def test_two_connections_share_the_database(db_path: Path, clock: Clock) -> None:
    with Memory.open(db_path, None, clock=clock) as daemon, Memory.open(db_path, None) as cli:
        written = cli.remember("The CLI and the daemon share memory.db in WAL mode")
        assert daemon.get(written.id or "").content.startswith("The CLI")
