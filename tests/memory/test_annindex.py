"""The in-RAM vector index of long-lived processes: same answers as sqlite-vec, kept fresh."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest
from conftest import Clock

from helixfs.memory import Embedder, KeptOpen, Memory
from helixfs.memory.annindex import VectorIndex

FACTS = [
    "Our continuous integration is GitHub Actions, on every push.",
    "The frontend is written in TypeScript with React.",
    "Database migrations are managed by Alembic.",
    "Logs are shipped to Loki through promtail.",
    "Feature flags are served by Unleash.",
    "The mobile app uses Kotlin Multiplatform.",
]


def test_index_matches_exact_cosine_ranking(real_embedder: Embedder) -> None:
    texts = FACTS + [
        f"Service s{i} handles {w} requests"
        for i, w in enumerate(["billing", "search", "auth", "upload", "export"] * 40)
    ]
    matrix = np.asarray(real_embedder.embed(texts), dtype=np.float32)
    index = VectorIndex(matrix.shape[1])
    for rowid, vector in enumerate(matrix, 1):
        index.upsert(rowid, vector, True)
    query = np.asarray(real_embedder.embed(["which CI runs our builds"])[0], dtype=np.float32)
    exact = list(np.argsort(-(matrix @ query))[:5] + 1)
    assert [r for r, _ in index.search(query, 5, active_only=True)] == exact


def test_hamming_prefilter_keeps_the_true_neighbours(real_embedder: Embedder) -> None:
    rng = np.random.default_rng(7)
    words = ["cache", "queue", "token", "deploy", "schema", "index", "retry", "socket"]
    texts = [" ".join(rng.choice(words, 6)) + f" module_{i}" for i in range(1000)]
    matrix = np.asarray(real_embedder.embed(texts), dtype=np.float32)
    index = VectorIndex(matrix.shape[1])
    index.fill(np.arange(1, len(texts) + 1), matrix, np.ones(len(texts), dtype=bool))
    overlap = []
    for probe in range(20):
        query = matrix[probe * 50] + 0.02 * rng.standard_normal(matrix.shape[1]).astype("f4")
        exact = set(np.argsort(-(matrix @ query))[:10] + 1)
        found = {r for r, _ in index.search(query, 10, active_only=True, rescore=100)}
        overlap.append(len(exact & found) / 10)
    assert np.mean(overlap) >= 0.9


def test_engine_index_follows_writes_status_changes_and_purge(
    db_path: Path, clock: Clock, real_embedder: Embedder
) -> None:
    with Memory.open(db_path, real_embedder, clock=clock) as mem:
        ids = [mem.remember(fact).id for fact in FACTS]
        mem.warm()
        assert mem.recall("what runs our continuous integration builds")[0].id == ids[0]
        newer = mem.remember("Release candidates get a separate continuous integration job.")
        assert newer.action == "add"
        mem.forget(ids[0] or "")
        assert mem.recall("what runs our continuous integration builds")[0].id == newer.id
        mem.purge(newer.id or "")
        assert all(
            h.id != newer.id for h in mem.recall("what runs our continuous integration builds")
        )
        mem.rollback(ids[0] or "")  # un-forget: back in the index as active
        assert mem.recall("what runs our continuous integration builds")[0].id == ids[0]


def test_engine_index_sees_other_processes_writes(db_path: Path, real_embedder: Embedder) -> None:
    with Memory.open(db_path, real_embedder) as daemon:
        daemon.remember(FACTS[1])
        daemon.warm()
        with Memory.open(db_path, real_embedder) as cli:
            written = cli.remember(FACTS[0])
        assert daemon.recall("what runs our continuous integration builds")[0].id == written.id


def test_engine_index_follows_workspace_reindex(vmem: Memory) -> None:
    vmem.index_workspace({"auth.py": b"def refresh_token(session):\n    return renew()\n"}, "c1")
    vmem.warm()
    assert vmem.search("renew an expired login credential")[0].path == "auth.py"
    vmem.index_workspace({"login.py": b"def refresh_token(session):\n    return renew()\n"}, "c2")
    assert vmem.search("renew an expired login credential")[0].path == "login.py"


def _snapshot(index: VectorIndex, rowids: list[int]) -> dict[int, tuple[bool, list[float]]]:
    vectors = index.vectors(rowids)
    return {r: (bool(index._active[index._pos[r]]), vectors[r]) for r in rowids if r in index}


def _assert_kept_index_is_fresh(memory: Memory) -> None:
    kept = memory._current_indexes().memories
    assert kept is not None
    rowids = [int(r[0]) for r in memory._conn.execute("SELECT rowid FROM memories")]
    fresh = VectorIndex.load(memory._conn, "memory_vec", kept.dim)
    assert len(kept) == len(fresh) == len(rowids)
    assert _snapshot(kept, rowids) == _snapshot(fresh, rowids)


def test_kept_index_equals_a_fresh_load_after_every_kind_of_write(vmem: Memory) -> None:
    """Vectors handed over by the writes (add, update, supersede, rollback) and status-only
    refreshes leave the kept index exactly as a reload from sqlite-vec would build it."""
    vmem.warm()
    first = vmem.remember("The dev server port is 3000.")
    alembic = vmem.remember("Database migrations are managed by Alembic.")
    refined = vmem.remember("Database migrations are managed by Alembic, from the deploy job.")
    assert refined.action == "update" and refined.id == alembic.id
    vmem.remember("The dev server port is 4000.")  # supersedes the first
    _assert_kept_index_is_fresh(vmem)
    vmem.forget(alembic.id)
    vmem.rollback(alembic.id, to_seq=vmem.history(alembic.id)[0].seq)  # old text, re-embedded
    vmem.rollback(first.id)
    for fact in FACTS[:3]:
        vmem.remember(fact)
    _assert_kept_index_is_fresh(vmem)


def test_a_removed_rows_slot_goes_to_the_next_new_row() -> None:
    """A workspace's chunks come and go with every save: slots were never reused, so a
    mount searching for days grew its index (and each search's scan) without end."""
    rng = np.random.default_rng(7)
    rows = {r: rng.standard_normal(64).astype(np.float32) for r in range(1, 6)}
    index = VectorIndex(64)
    for rowid, vector in rows.items():
        index.upsert(rowid, vector, True)
    index.remove(2)
    index.remove(4)
    fresh = rng.standard_normal(64).astype(np.float32)
    index.upsert(9, fresh, True)
    assert len(index) == 4 and index._size == 5  # 9 took a freed slot
    assert [r for r, _ in index.search(fresh, 5, active_only=False)][0] == 9
    assert {r for r, _ in index.search(fresh, 10, active_only=False)} == {1, 3, 5, 9}


def _chunk_rowids(memory: Memory) -> list[int]:
    return [int(r[0]) for r in memory._conn.execute("SELECT rowid FROM chunks")]


def test_the_kept_chunk_index_follows_each_workspace_pass_without_a_reload(vmem: Memory) -> None:
    """The daemon re-indexes the workspace after saves; the first search after each
    pass reloaded every chunk vector (404 ms at 50,000 chunks, on the FUSE loop).
    Now it applies the pass's added and deleted chunks, and ends as a reload would."""
    files = {f"mod{n}.py": f"def handler_{n}(request):\n    return {n}\n" for n in range(6)}
    vmem.index_workspace({path: text.encode() for path, text in files.items()}, "c1")
    vmem.warm()
    kept = vmem._current_indexes().chunks
    vmem.index_workspace(
        {"mod1.py": b"def refresh_token(session):\n    return renew()\n"}, "c2", removed=["mod2.py"]
    )
    vmem.index_workspace(
        {"auth.py": b"def login(user, password):\n    return check()\n"}, "c3", removed=[]
    )
    hits = vmem.search("renew an expired login credential")
    assert vmem._current_indexes().chunks is kept  # updated in place
    assert hits[0].path == "mod1.py"
    fresh = VectorIndex.load(vmem._conn, "chunk_vec", kept.dim)
    rowids = _chunk_rowids(vmem)
    assert len(kept) == len(fresh) == len(rowids) == 6
    assert _snapshot(kept, rowids) == _snapshot(fresh, rowids)


def test_a_kept_open_memory_is_one_connection_whose_indexes_are_built_at_once(
    db_path: Path, real_embedder: Embedder
) -> None:
    """A long-lived process's memory (KeptOpen): opened on first use, the same one
    after, its vector indexes built by that first use rather than by the second search
    (1.5-2.4 s at 100,000 memories, in the middle of an agent's session)."""
    with Memory.open(db_path, real_embedder) as setup:
        setup.remember(FACTS[0])
    kept = KeptOpen(db_path, lambda: real_embedder)
    try:
        memory = kept()
        assert memory._index_cache._memories is not None  # no search asked for them
        assert kept() is memory
        assert memory.recall("what runs our continuous integration builds")[0].content == FACTS[0]
    finally:
        kept.close()
    with pytest.raises(apsw.ConnectionClosedError):
        memory.memories()
