"""A read-only view of memory.db for a hook with no daemon: `get`, `memories`,
`about_files`, `mentioning`, and `recall` and `search` as the engine ranks them when it
has no model (the same SQL and ranking: lexical.py, ranking.py, retrieval.py),
without the engine's imports (numpy, sqlite-vec, the embedder: ~100 ms of CPU a start,
most of a hook's budget) or its open (schema check, WAL checkpointer, settings).

It never creates or changes the database: one the engine has not opened yet (no schema)
is refused, and the caller falls back to the engine (ADR 0052)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import apsw

from helixfs.errors import InvalidInput
from helixfs.memory import lexical, records, validate
from helixfs.memory.db import (
    BUSY_TIMEOUT_MS,
    MMAP_BYTES,
    SCHEMA_VERSION,
    get_meta,
    load_vectors_extension,
    schema_complete,
    table_exists,
)
from helixfs.memory.tree import TreeView, visibility
from helixfs.memory.types import Checkpoint, ContextBlock, Hit, MemoryRecord, SearchMode


class Reader:
    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        flags = apsw.SQLITE_OPEN_READWRITE  # not CREATE; read-write to share the WAL's index
        self._conn = apsw.Connection(str(path), flags=flags)
        self._clock = clock
        self._store = path.parent
        try:
            self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            self._conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            version = get_meta(self._conn, "schema_version")
            if version != str(SCHEMA_VERSION) or not schema_complete(self._conn):
                raise InvalidInput(f"{path}: the engine must open (create, upgrade) it first")
            if table_exists(self._conn, "memory_vec"):  # MMR reads the stored vectors
                load_vectors_extension(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def __enter__(self) -> Reader:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def get(self, memory_id: str) -> MemoryRecord:
        return records.to_record(records.fetch(self._conn, lexical.resolve(self._conn, memory_id)))

    def memories(
        self,
        *,
        type: str | None = None,
        scope: str | None = None,
        status: str | None = "active",
        tag: str | None = None,
        limit: int = 100,
        branch: str | None = None,
        view: TreeView | None = None,
    ) -> list[MemoryRecord]:
        rows = lexical.listed(
            self._conn, type=type, scope=scope, status=status, tag=tag, limit=limit, branch=branch
        )
        return self._marked(rows, view)

    def about_files(
        self, paths: Sequence[str], *, limit: int = 20, view: TreeView | None = None
    ) -> list[MemoryRecord]:
        visible = visibility(self._conn, view)
        return self._marked(lexical.about_files(self._conn, paths, limit, visible), view)

    def mentioning(
        self, words: Sequence[str], *, limit: int = 16, view: TreeView | None = None
    ) -> list[MemoryRecord]:
        visible = visibility(self._conn, view)
        return self._marked(lexical.mentioning(self._conn, words, limit, visible), view)

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        types: Sequence[str] | None = None,
        scope: str | None = None,
        reinforce: bool = True,
        mode: SearchMode = "hybrid",
        view: TreeView | None = None,
    ) -> list[Hit]:
        """Memory.recall's lexical answer (active memories only)."""
        filters = lexical.Filters(("active",), scope, validate.check_types(types))
        return self._ranked(query, k, filters, False, reinforce, mode, view)

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        types: Sequence[str] | None = None,
        scope: str | None = None,
        reinforce: bool = True,
        mode: SearchMode = "hybrid",
        view: TreeView | None = None,
    ) -> list[Hit]:
        """Memory.search's lexical answer (memories and workspace passages)."""
        filters = lexical.Filters(("active",), scope, validate.check_types(types))
        return self._ranked(query, k, filters, True, reinforce, mode, view)

    def context(
        self, budget_tokens: int = 2000, *, scope: str | None = None, view: TreeView | None = None
    ) -> ContextBlock:
        """Memory.context without a query: the best active memories under the budget,
        ranked afresh (the engine keeps its ranking; a hook's process lives once)."""
        from helixfs.memory import ranking

        validate.check_budget(budget_tokens)
        if scope is not None:
            validate.check_name("scope", scope)
        self._marked([], view)
        hits = ranking.top_memories(
            self._conn, scope, 200, self._clock(), visibility(self._conn, None), self._half_life()
        )
        return ranking.pack(hits, budget_tokens)

    def last_checkpoint(self, scope: str | None = None) -> Checkpoint:
        from helixfs.memory import notes

        return notes.last_checkpoint(self._conn, scope)

    def _half_life(self) -> float:
        """The store's memory.half_life in days, as the engine reads it."""
        from helixfs import config

        return float(config.load(self._store)["memory.half_life"]) / 86400

    def _ranked(
        self,
        query: str,
        k: int,
        filters: lexical.Filters,
        chunks: bool,
        reinforce: bool,
        mode: SearchMode,
        view: TreeView | None,
    ) -> list[Hit]:
        """The engine's ranking (Memory._retrieve) with no query vector, as the engine
        ranks when it has no model; nothing is reinforced (the reader writes nothing)."""
        if reinforce or view is not None:
            raise InvalidInput("the reader neither reinforces nor marks staleness")
        # Imported here: PreToolUse, PreCompact and SubagentStart rank nothing (~30 ms)
        from helixfs.memory import ranking, retrieval, when

        lexical.check_query(query, k, mode, filters.scope)
        half_life_days = self._half_life()
        keys = ranking.lexical(self._conn, query, k, filters, chunks, mode)
        now = self._clock()
        period = when.period_of(query, now)
        return ranking.rank(
            self._conn,
            keys,
            None,
            k,
            filters,
            chunks,
            now,
            retrieval.NO_INDEXES,
            mode,
            period,
            half_life_days,
        )

    def _marked(self, rows: list[dict[str, Any]], view: TreeView | None) -> list[MemoryRecord]:
        """A hook with no daemon has no branch view (no mount: no branch folder)."""
        if view is not None:
            raise InvalidInput("the reader marks no staleness: open the engine for a view")
        return [records.to_record(row) for row in rows]


class Checkpointing(Reader):
    """The reader, and the one write a hook makes with no daemon: Stop's automatic
    checkpoint (Memory.checkpoint's own write, notes.checkpoint), made where it is
    asked, with the engine's durability (synchronous=NORMAL under WAL)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__(path, clock)
        self._conn.execute("PRAGMA synchronous=NORMAL")

    def checkpoint(
        self,
        task: str,
        *,
        done: Sequence[str] = (),
        next: Sequence[str] = (),
        hypotheses: Sequence[str] = (),
        blocked: Sequence[str] = (),
        files: Sequence[str] = (),
        scope: str = "global",
    ) -> Checkpoint:
        from helixfs.memory import notes

        lists = {"done": done, "next": next, "hypotheses": hypotheses, "blocked": blocked}
        return notes.checkpoint(self._conn, self._clock, task, scope, {**lists, "files": files})
