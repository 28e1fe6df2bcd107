"""A read-only view of memory.db for a hook: `get`, `memories`,
`about_files`, `mentioning`, and `recall` and `search` as the engine ranks them when it
has no model (the same SQL and ranking: lexical.py, ranking.py, retrieval.py),
without the engine's imports (numpy, sqlite-vec, the embedder: ~100 ms of CPU a start,
most of a hook's budget) or its open (schema check, WAL checkpointer, settings).

A hook with no daemon reads through it, and so does a mount's daemon until its own
engine is open (its first hooks: MemoryFiles.for_a_hook), with the branch's view then.
It never creates or upgrades the database: one the engine has not opened yet (no
schema) is refused, and the caller falls back to the engine (ADR 0052). Its only
writes are the engine's own: a rename followed while marking staleness in a view
(tree.check_rows), and Stop's checkpoint (`Checkpointing`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import apsw

from helixfs.errors import InvalidInput
from helixfs.memory import lexical, records, tree, validate
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

    @property
    def lexical_only(self) -> bool:
        """As the engine's: the reader ranks without a model."""
        return True

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
        now = self._clock()
        visible = visibility(self._conn, view)
        hits = ranking.top_memories(self._conn, scope, 200, now, visible, self._half_life())
        if view is not None:
            hits = tree.reweighed(self._conn, hits, view, now)
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
        ranks when it has no model; nothing is reinforced (the reader writes no use)."""
        if reinforce:
            raise InvalidInput("the reader does not reinforce: open the engine for that")
        # Imported here: PreToolUse, PreCompact and SubagentStart rank nothing (~30 ms)
        from helixfs.memory import ranking, retrieval, when

        lexical.check_query(query, k, mode, filters.scope)
        half_life_days = self._half_life()
        if view is not None:
            filters = dataclasses.replace(filters, visible=visibility(self._conn, view))
        keys = ranking.lexical(self._conn, query, k, filters, chunks, mode)
        now = self._clock()
        period = when.period_of(query, now)
        hits = ranking.rank(
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
        return tree.reweighed(self._conn, hits, view, now) if view is not None else hits

    def _marked(self, rows: list[dict[str, Any]], view: TreeView | None) -> list[MemoryRecord]:
        """Records of `rows`, marked with their staleness in `view` as the engine marks
        them (a rename found is followed: the one write besides Stop's). With no daemon
        there is no view (no mount: no branch folder); the daemon's first hooks have one."""
        found = [records.to_record(row) for row in rows]
        if view is None:
            return found
        return tree.with_staleness(found, tree.check_rows(self._conn, rows, view, self._clock()))


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
