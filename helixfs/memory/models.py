"""The embedding model pinned in a database, and vectors for rows that lack one.

The model (provider, name, dimension) is pinned in `meta` when first used. Opening the
database with another model drops and rebuilds the vector tables and re-embeds every
memory and chunk: recorded in history as a `reembed` operation, so the change is
tracked. Chunk vectors still come from the (text hash, model) cache when it has them.
"""

from __future__ import annotations

import threading

import apsw

from helixfs.memory import records, workspace
from helixfs.memory.db import (
    create_vector_tables,
    fetch_all,
    get_meta,
    set_meta,
    table_exists,
    writing,
)
from helixfs.memory.vectors import EmbedderRunner

BATCH = 256


def pin(conn: apsw.Connection, lock: threading.RLock, runner: EmbedderRunner, now: float) -> None:
    with lock, writing(conn):
        pinned = get_meta(conn, "embed_model")
        pinned_dim = get_meta(conn, "embed_dim")
        changed = bool(pinned) and (pinned != runner.model or pinned_dim != str(runner.dim))
        if not pinned or changed or not table_exists(conn, "memory_vec"):
            create_vector_tables(conn, runner.dim)
            set_meta(conn, "embed_provider", runner.name)
            set_meta(conn, "embed_model", runner.model)
            set_meta(conn, "embed_dim", str(runner.dim))
        if changed:
            note = f"model {pinned} (dim {pinned_dim}) -> {runner.model} (dim {runner.dim})"
            records.log_op(conn, None, "reembed", now, None, None, note)


def backfill(conn: apsw.Connection, lock: threading.RLock, runner: EmbedderRunner) -> None:
    """Embed memories and chunks that have no vector yet (lexical-era rows, re-embed)."""
    with lock:
        missing = fetch_all(
            conn,
            "SELECT rowid, content, status FROM memories "
            "WHERE rowid NOT IN (SELECT rowid FROM memory_vec)",
        )
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        vectors = runner.embed_memories([str(r[1]) for r in batch])
        with lock, writing(conn):
            for row, vector in zip(batch, vectors, strict=True):
                records.set_vector(conn, int(row[0]), vector, row[2] == "active")
    workspace.backfill_chunk_vectors(conn, runner, lock)
