"""`Memory`: the memory engine's one public object (re-exported by helixfs.memory).

Writes go redact -> gate -> extract -> embed -> consolidate -> store; embedding happens
before the transaction opens so the write lock is held for milliseconds, not for a model
call. Reads are hybrid (see retrieval.py). One lock serialises callers in this process;
SQLite's WAL serialises other processes (the CLI next to the daemon).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from helixfs import config
from helixfs.errors import InvalidInput, NotFound
from helixfs.memory import (
    consolidate,
    corrections,
    lexical,
    models,
    notes,
    ranking,
    records,
    retrieval,
    tree,
    validate,
    when,
    workspace,
    writer,
)
from helixfs.memory.annindex import IndexCache, Indexes
from helixfs.memory.checkpoint import Checkpointer
from helixfs.memory.db import (
    BUSY_TIMEOUT_MS,
    connect,
    fetch_all,
    fetch_one,
    get_meta,
    writing,
)
from helixfs.memory.embed import MODEL_INSTALL
from helixfs.memory.extract import INJECTION_TAG, Candidate, candidate, extract
from helixfs.memory.redact import redact
from helixfs.memory.shared import ARCHIVED_ON_REQUEST, SharesMemory
from helixfs.memory.tree import TreeView
from helixfs.memory.treeapi import FollowsTree
from helixfs.memory.types import (
    MEMORY_TYPES,
    ArchiveCandidate,
    Checkpoint,
    ContextBlock,
    Edge,
    Embedder,
    HistoryEntry,
    Hit,
    IndexReport,
    MemoryImport,
    MemoryRecord,
    SearchMode,
    Source,
    WriteResult,
)
from helixfs.memory.vectors import EmbedderRunner

log = logging.getLogger("helixfs.memory")
_warned_lexical = threading.Event()

MAX_K = lexical.MAX_K
REINFORCE_WAIT_MS = 200
ARCHIVE_IDLE_DAYS = 60.0
ARCHIVE_SALIENCE = 0.1


class Memory(FollowsTree, SharesMemory):
    """Long-term memory of one store: facts, decisions, checkpoints, workspace passages."""

    def __init__(
        self, conn: apsw.Connection, embedder: Embedder | None, clock: Callable[[], float]
    ) -> None:
        self._conn = conn
        self._clock = clock
        self.half_life_days = retrieval.RECENCY_HALF_LIFE_DAYS  # memory.half_life, at open
        self._lock = threading.RLock()
        self._checkpointer = Checkpointer(conn)
        self._vectors = EmbedderRunner(embedder) if embedder is not None else None
        # Embeds while the calling thread reads the database (a recall, a write).
        self._embedding = ThreadPoolExecutor(2, thread_name_prefix="helix-memory-embed")
        # In-RAM vector indexes for long-lived processes (annindex.IndexCache).
        self._index_cache = IndexCache(conn, self._vectors.dim if self._vectors else 0)
        self._tops = ranking.KeptTop()  # the best memories, until the database changes

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        embedder: Embedder | None = None,
        *,
        clock: Callable[[], float] = time.time,
        warn_lexical: bool = True,
    ) -> Memory:
        """Open (or create) the memory database at `path` (a file, e.g. STORE/memory.db).

        Without an embedder, search is lexical only (a warning is logged once, unless
        `warn_lexical` is False: lexical on purpose). With one, its model is pinned in
        the database; a different model than the pinned one re-embeds every memory and
        chunk (recorded in history as `reembed`).
        """
        memory = cls(connect(path), embedder, clock)
        try:
            # memory.db sits in its store folder: that store's config says the half-life
            memory.half_life_days = config.load(Path(path).parent)["memory.half_life"] / 86400
            memory._attach_embedder(warn_lexical)
        except BaseException:
            memory.close()
            raise
        return memory

    def close(self) -> None:
        self._embedding.shutdown()
        with self._lock:
            self._checkpointer.close()
            self._conn.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def unless_busy(self, wait: float) -> Iterator[bool]:
        """Whether this memory could be had within `wait` seconds; if so, it is the
        caller's for its calls until the block ends. For a caller that must not wait
        for another thread's long use of it (an import, a model load, a write waiting
        for another process's): the FUSE loop."""
        if not self._lock.acquire(timeout=wait):
            yield False
            return
        try:
            yield True
        finally:
            self._lock.release()

    def warm(self) -> None:
        """Build the in-RAM vector indexes now, not at the second search."""
        if self._vectors is not None:
            with self._lock:
                self._index_cache.warm()

    def _current_indexes(self) -> Indexes:
        if self._vectors is None:
            return retrieval.NO_INDEXES
        return self._index_cache.current()

    @property
    def lexical_only(self) -> bool:
        return self._vectors is None

    @property
    def embed_count(self) -> int:
        """Texts sent to the embedder by this instance (tests prove the cache with it)."""
        return self._vectors.texts_embedded if self._vectors else 0

    def _attach_embedder(self, warn_lexical: bool = True) -> None:
        if self._vectors is None:
            if warn_lexical and not _warned_lexical.is_set():
                _warned_lexical.set()
                log.warning(
                    "helixfs memory: no embedding model available; search is lexical "
                    "(BM25) only. Install the model: " + MODEL_INSTALL
                )
            return
        models.pin(self._conn, self._lock, self._vectors, self._clock())
        models.backfill(self._conn, self._lock, self._vectors)
        self._index_cache.drop()

    # -- writes ------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        type: str | None = None,
        tags: Sequence[str] = (),
        scope: str = "global",
        source: Source | None = None,
        confidence: float = 1.0,
        salience: float = 0.5,
        view: TreeView | None = None,
        at: float | None = None,
    ) -> WriteResult:
        """An explicit write: always passes the gate; still redacted and consolidated.
        `view`: the branch it is written in (its memory, ADR 0063) and the tree its
        source file's blob is read from. `at`: when it was learnt, if not now (a fact
        from another machine, ADR 0065): it supersedes only what is older."""
        validate.check_text("memory content", content)
        if type is not None and type not in MEMORY_TYPES:
            raise InvalidInput(
                f"unknown memory type {type!r}; use one of {', '.join(MEMORY_TYPES)}"
            )
        validate.check_name("scope", scope)
        tag_tuple = validate.check_tags(tags)
        validate.check_unit("confidence", confidence)
        validate.check_unit("salience", salience)
        scrubbed = redact(content)
        cand = candidate(scrubbed.text, type_hint=type, explicit=True)
        return self._write(
            cand,
            tag_tuple,
            scope,
            _placed(source or Source(agent="unknown"), view),
            min(confidence, cand.confidence),
            salience,
            scrubbed.count,
            None,
            view,
            at,
        )

    def ingest(
        self,
        text: str,
        *,
        scope: str = "global",
        source: Source | None = None,
        tags: Sequence[str] = (),
        view: TreeView | None = None,
    ) -> list[WriteResult]:
        """Non-explicit text (transcript, notes): only slices that pass the gate are kept."""
        validate.check_text("text", text, limit=10 * validate.MAX_CONTENT)
        validate.check_name("scope", scope)
        tag_tuple = validate.check_tags(tags)
        scrubbed = redact(text)
        cands = extract(scrubbed.text)
        # One embedder call for every candidate of the text, not one each.
        vectors = self._embed([c.content for c in cands])
        return [
            self._write(
                cand,
                tag_tuple,
                scope,
                _placed(source or Source(agent="ingest"), view),
                cand.confidence,
                0.4,
                scrubbed.count,
                vector,
                view,
            )
            for cand, vector in zip(cands, vectors, strict=True)
        ]

    def _embed(self, texts: Sequence[str]) -> Sequence[list[float] | None]:
        if self._vectors is None or not texts:
            return [None] * len(texts)
        return self._vectors.embed_memories(texts)

    def import_memories(
        self,
        items: Sequence[MemoryImport],
        vectors: Sequence[Sequence[float]] | npt.NDArray[np.float32] | None = None,
    ) -> list[str]:
        """Store many memories at once, in one transaction (all or none); their new ids.

        For memories consolidated elsewhere (a restore, a migration, a benchmark's bulk):
        each is checked and redacted like `remember`, but not gated or consolidated, so
        an import never rewrites or retires what is stored. `vectors` (one per item,
        from this database's model) spare the embedder; without them the contents are
        embedded in batches before the transaction opens. Without an embedder, vectors
        are ignored: they are backfilled when a model is attached.
        """
        facts = [self._import_fact(item) for item in items]
        embedded: Sequence[writer.Vector | None] = [None] * len(facts)
        if self._vectors is not None and vectors is not None:
            embedded = list(self._vectors.normalised(vectors, len(facts)))
        elif self._vectors is not None:
            embedded = self._vectors.embed_memories([fact.cand.content for fact, _ in facts])
        with self._lock:
            with writing(self._conn):
                ids = [
                    writer.add(self._conn, dataclasses.replace(fact, vector=vector), at)
                    for (fact, at), vector in zip(facts, embedded, strict=True)
                ]
            # A big import leaves a WAL of its own size, read without mmap until a
            # checkpoint: fold it into the database file now, as part of the import.
            # The import is committed: a reader of an older snapshot, or the background
            # checkpointer at work, only leaves the folding to the next checkpoint.
            try:
                self._conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
            except apsw.BusyError:
                log.info("import: the WAL is folded by a later checkpoint (database busy)")
            # Reloaded from the tables (faster than refreshing each row), by the import:
            # a kept memory's next search may come from the mount's FUSE loop.
            self._index_cache.rebuild()
        return ids

    def _import_fact(self, item: MemoryImport) -> tuple[writer.NewFact, float]:
        validate.check_text("memory content", item.content)
        if item.type is not None and item.type not in MEMORY_TYPES:
            raise InvalidInput(f"unknown memory type {item.type!r}")
        validate.check_name("scope", item.scope)
        cand = candidate(redact(item.content).text, type_hint=item.type, explicit=True)
        tags = tuple(dict.fromkeys((*validate.check_tags(item.tags), *cand.tags)))
        fact = writer.NewFact(
            cand,
            tags,
            item.scope,
            item.source or Source(agent="import"),
            min(validate.check_unit("confidence", item.confidence), cand.confidence),
            validate.check_unit("salience", item.salience),
            None,
        )
        return fact, self._clock() if item.at is None else float(item.at)

    def _write(
        self,
        cand: Candidate,
        tags: tuple[str, ...],
        scope: str,
        source: Source,
        confidence: float,
        salience: float,
        redactions: int,
        vector: list[float] | None,
        view: TreeView | None = None,
        at: float | None = None,
    ) -> WriteResult:
        """`vector` None: embedded here, before the transaction, unless the fact is already
        stored word for word (a NOOP needs no vector: re-asserting a fact costs no model
        call)."""
        flagged = INJECTION_TAG in cand.tags
        all_tags = tuple(dict.fromkeys((*tags, *cand.tags)))
        branch = view.branch if view is not None else None
        early = None
        if vector is None and self._vectors is not None and not self._stored(cand, scope, branch):
            vector, early = self._embed_and_predecide(cand, scope, flagged, branch)
        now = self._clock() if at is None else at
        with self._lock, writing(self._conn):
            decision = self._decide(cand, vector, scope, branch, flagged, early)
            if vector is None and self._vectors is not None and decision.action != "noop":
                # The identical memory went away meanwhile (another process): embed now.
                vector = self._vectors.embed_memories([cand.content])[0]
                decision = self._decide(cand, vector, scope, branch, flagged)
            if branch is not None and decision.action == "add":
                decision = self._shadowing(decision, cand, vector, scope, flagged)
            if at is not None:
                decision = consolidate.older_loses(self._conn, decision, at)
            fact = writer.NewFact(
                cand,
                all_tags,
                scope,
                source,
                confidence,
                salience,
                vector,
                branch,
                view.head if view is not None and branch is not None else None,
            )
            memory_id = writer.apply(self._conn, decision, fact, now)
            if vector is not None and decision.action != "noop":
                rowid = records.rowid_of(self._conn, memory_id)
                self._index_cache.vector_written(rowid, vector)
            record = records.to_record(records.fetch(self._conn, memory_id))
        return WriteResult(
            action=decision.action,  # type: ignore[arg-type]
            id=memory_id,
            memory=record,
            superseded=decision.retire,
            redactions=redactions,
            flagged=flagged,
            reason=decision.reason,
        )

    def _shadowing(
        self,
        decision: consolidate.Decision,
        cand: Candidate,
        vector: list[float] | None,
        scope: str,
        flagged: bool,
    ) -> consolidate.Decision:
        """A branch's new value for what the trunk states hides the trunk's memory in
        that branch (a `shadows` edge), leaving it as it is for everyone else: the
        branch's merge supersedes it (ADR 0063)."""
        trunk = self._decide(cand, vector, scope, None, flagged)
        if trunk.action != "supersede":
            return decision
        return dataclasses.replace(decision, shadows=trunk.retire)

    def _stored(self, cand: Candidate, scope: str, branch: str | None) -> bool:
        with self._lock:
            return consolidate.identical(self._conn, cand, scope, branch) is not None

    def _embed_and_predecide(
        self, cand: Candidate, scope: str, flagged: bool, branch: str | None
    ) -> tuple[list[float], _Early]:
        """The fact is embedded on a worker thread (ONNX runs off the GIL) while this one
        takes what the stored rows alone decide (slot checks cost up to a few ms at
        100,000 memories): that work leaves the write's critical path."""
        assert self._vectors is not None
        embedding = self._embedding.submit(self._vectors.embed_memories, [cand.content])
        with self._lock:
            early = _Early(
                self._db_state(),
                consolidate.decide_without_vector(self._conn, cand, scope, flagged, branch),
            )
        return embedding.result()[0], early

    def _db_state(self) -> tuple[int, int]:
        """Changes when anything may have changed the rows: another connection's commit
        (data_version) or a row changed through ours (total_changes)."""
        row = fetch_one(self._conn, "PRAGMA data_version")
        return (int(row[0]) if row else 0), self._conn.total_changes()

    def _decide(
        self,
        cand: Candidate,
        vector: list[float] | None,
        scope: str,
        branch: str | None,
        flagged: bool,
        early: _Early | None = None,
    ) -> consolidate.Decision:
        """`early`: taken before the vector came; kept while the database is unchanged."""
        if early is not None and early.state == self._db_state():
            decision = early.decision
        else:
            decision = consolidate.decide_without_vector(self._conn, cand, scope, flagged, branch)
        if decision is not None:
            return decision
        index = self._current_indexes().memories if vector is not None else None
        return consolidate.by_neighbours(self._conn, cand, vector, scope, index, branch)

    # -- reads -------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryRecord:
        with self._lock:
            return records.to_record(records.fetch(self._conn, self._resolve(memory_id)))

    def _resolve(self, text: str) -> str:
        return lexical.resolve(self._conn, text)

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
        """Newest first, filtered; status None lists every status. Every branch's unless
        `branch` names one; `view`: marked stale where their file moved on in it."""
        with self._lock:
            rows = lexical.listed(
                self._conn,
                type=type,
                scope=scope,
                status=status,
                tag=tag,
                limit=limit,
                branch=branch,
            )
            return self._marked(rows, view)

    def about_files(
        self, paths: Sequence[str], *, limit: int = 20, view: TreeView | None = None
    ) -> list[MemoryRecord]:
        """Active memories whose source is one of `paths` (relative to any folder: a
        source `auth/login.py` is about `src/auth/login.py`), newest first; those
        visible in `view` (default: the trunk's), marked stale in it."""
        with self._lock:
            visible = tree.visibility(self._conn, view)
            return self._marked(lexical.about_files(self._conn, paths, limit, visible), view)

    def mentioning(
        self, words: Sequence[str], *, limit: int = 16, view: TreeView | None = None
    ) -> list[MemoryRecord]:
        """Active memories whose text holds any of `words`, best BM25 first: no vector,
        graph or diversity pass (a hook's ambient lookup on every tool call)."""
        with self._lock:
            visible = tree.visibility(self._conn, view)
            return self._marked(lexical.mentioning(self._conn, words, limit, visible), view)

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        types: Sequence[str] | None = None,
        scope: str | None = None,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        reinforce: bool = True,
        mode: SearchMode = "hybrid",
        view: TreeView | None = None,
    ) -> list[Hit]:
        """Memories only, best first. Returned memories are reinforced (salience up).
        `view`: the branch read from (its memories are seen, ADR 0063), where memories
        about a file that changed since are marked stale and weigh less."""
        statuses = ["active"]
        if include_superseded:
            statuses += ["superseded", "archived"]
        if include_forgotten:
            statuses.append("forgotten")
        filters = lexical.Filters(tuple(statuses), scope, validate.check_types(types))
        return self._retrieve(
            query, k, filters, chunks=False, reinforce=reinforce, mode=mode, view=view
        )

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
        """Memories and workspace passages together, best first.

        `mode` is hybrid (default), or lexical / vector alone (for evaluation)."""
        filters = lexical.Filters(("active",), scope, validate.check_types(types))
        return self._retrieve(
            query, k, filters, chunks=True, reinforce=reinforce, mode=mode, view=view
        )

    def _retrieve(
        self,
        query: str,
        k: int,
        filters: lexical.Filters,
        *,
        chunks: bool,
        reinforce: bool,
        mode: SearchMode = "hybrid",
        view: TreeView | None = None,
    ) -> list[Hit]:
        lexical.check_query(query, k, mode, filters.scope)
        # The query is embedded on a worker thread (ONNX runs off the GIL) while this one
        # reads the BM25 lists: a recall waits for the longer of the two, not their sum.
        embedding = (
            self._embedding.submit(self._vectors.embed_query, query)
            if self._vectors is not None and mode != "lexical"
            else None
        )
        with self._lock:
            if view is not None:
                visible = tree.visibility(self._conn, view)
                filters = dataclasses.replace(filters, visible=visible)
            bm25 = ranking.lexical(self._conn, query, k, filters, chunks, mode)
        qvec = embedding.result() if embedding is not None else None
        with self._lock:
            indexes = self._current_indexes() if qvec is not None else retrieval.NO_INDEXES
            now = self._clock()
            period = when.period_of(query, now)
            hits = ranking.rank(
                self._conn,
                bm25,
                qvec,
                k,
                filters,
                chunks,
                now,
                indexes,
                mode,
                period,
                self.half_life_days,
            )
            if view is not None:
                hits = tree.reweighed(self._conn, hits, view, now)
            if reinforce:
                with self._index_cache.untracked():
                    self._reinforce([h.id for h in hits if h.kind == "memory"])
        return hits

    def _reinforce(self, ids: list[str]) -> None:
        """Recall is use: the memories returned are marked seen now (last_seen), which
        keeps them out of archive_candidates. Not their salience: ranking reads no field
        a recall writes, so asking one thing never reorders what another query finds
        (issue 30: MRR 0.449 without reinforcement, 0.431 with it). Not a history op."""
        if not ids:
            return
        now = self._clock()
        # A recall does not wait out another process's long write (an import of a
        # strand, a workspace index pass) for a side effect: it skips the mark.
        self._conn.set_busy_timeout(REINFORCE_WAIT_MS)
        try:
            with writing(self._conn):
                self._conn.executemany(
                    "UPDATE memories SET last_seen=? WHERE id=?", [(now, i) for i in ids]
                )
        except apsw.BusyError:
            log.info("recall not reinforced: another process is writing memory.db")
        finally:
            self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)

    def context(
        self,
        budget_tokens: int = 2000,
        *,
        query: str | None = None,
        scope: str | None = None,
        view: TreeView | None = None,
    ) -> ContextBlock:
        """The best memories (and passages, with a query) packed greedily under the budget."""
        validate.check_budget(budget_tokens)
        if query is not None:
            hits = self.search(query, k=50, scope=scope, view=view)
        else:
            if scope is not None:
                validate.check_name("scope", scope)
            hits = self._top(scope, view)
        return ranking.pack(hits, budget_tokens)

    def _top(self, scope: str | None, view: TreeView | None) -> list[Hit]:
        with self._lock:
            now = self._clock()
            visible = tree.visibility(self._conn, view)
            hits = self._tops.get(self._conn, scope, 200, now, visible, self.half_life_days)
            return tree.reweighed(self._conn, hits, view, now) if view is not None else hits

    # -- lifecycle of memories -----------------------------------------------------------

    def forget(self, id_or_query: str, *, reason: str = "") -> list[str]:
        """Soft delete (status forgotten, in history). A query must match exactly one."""
        validate.check_text("memory id or query", id_or_query, limit=4000)
        with self._lock, writing(self._conn):
            memory_id = records.resolve_id(self._conn, id_or_query) or notes.single_match(
                self._conn, id_or_query
            )
            now = self._clock()
            records.update(
                self._conn,
                memory_id,
                {"status": "forgotten", "updated": now},
                "forget",
                now,
                reason,
            )
        return [memory_id]

    def purge(self, memory_id: str) -> None:
        """Hard delete: content, vector, edges, provenance and history are erased."""
        with self._lock, writing(self._conn):
            records.purge(self._conn, self._resolve(memory_id), self._clock())

    def archive(self, ids: Sequence[str]) -> int:
        """Explicitly archive memories (e.g. accepted archive_candidates)."""
        now = self._clock()
        with self._lock, writing(self._conn):
            resolved = [self._resolve(i) for i in ids]
            for memory_id in resolved:
                records.update(
                    self._conn,
                    memory_id,
                    {"status": "archived", "updated": now},
                    "archive",
                    now,
                    ARCHIVED_ON_REQUEST,
                )
        return len(resolved)

    def archive_candidates(
        self,
        *,
        idle_days: float = ARCHIVE_IDLE_DAYS,
        max_salience: float = ARCHIVE_SALIENCE,
        limit: int = 50,
    ) -> list[ArchiveCandidate]:
        """Active memories that decayed unused: proposals only, nothing is changed."""
        validate.check_limit(limit)
        now = self._clock()
        cutoff = now - idle_days * 86400.0
        with self._lock:
            rows = fetch_all(
                self._conn,
                f"SELECT {records.COLUMNS} FROM memories WHERE status='active' "
                "AND last_seen <= ? ORDER BY last_seen",
                (cutoff,),
            )
        found = []
        for row in rows:
            data = records.row_dict(row)
            eff = retrieval.effective_salience(data["salience"], data["last_seen"], now)
            if eff <= max_salience:
                found.append(
                    ArchiveCandidate(
                        records.to_record(data), eff, (now - data["last_seen"]) / 86400.0
                    )
                )
        return found[:limit]

    def history(self, memory_id: str) -> list[HistoryEntry]:
        with self._lock:
            token = memory_id.strip().upper() if isinstance(memory_id, str) else ""
            resolved = records.resolve_id(self._conn, memory_id) or token
            rows = fetch_all(
                self._conn,
                "SELECT seq, memory_id, op, at, before, after, note FROM history "
                "WHERE memory_id=? ORDER BY seq",
                (resolved,),
            )
        if not rows:
            raise NotFound(f"no history for memory {memory_id!r}")
        return [
            HistoryEntry(
                int(r[0]),
                r[1],
                r[2],
                r[3],
                json.loads(r[4]) if r[4] else None,
                json.loads(r[5]) if r[5] else None,
                r[6],
            )
            for r in rows
        ]

    def rollback(self, memory_id: str, to_seq: int | None = None) -> MemoryRecord:
        """Undo the last change to a memory, or restore it as it was after op `to_seq`."""
        with self._lock:
            resolved = self._resolve(memory_id)
            entries = self.history(resolved)
            state = notes.rollback_target(entries, to_seq)
            now = self._clock()
            changes: dict[str, Any] = {k: v for k, v in state.items() if k != "id"}
            changes["updated"] = now
            with writing(self._conn):
                before = records.fetch(self._conn, resolved)
                records.update(
                    self._conn,
                    resolved,
                    changes,
                    "rollback",
                    now,
                    f"to seq {to_seq}" if to_seq else "undo last change",
                )
            if before["content"] != state["content"]:
                self._reembed(resolved, state["content"], state["status"] == "active")
            return self.get(resolved)

    def _reembed(self, memory_id: str, content: str, active: bool) -> None:
        """The vector of a memory whose text was set back or from elsewhere (no-op
        without a model)."""
        if not self._vectors:
            return
        vector = self._vectors.embed_memories([content])[0]
        with writing(self._conn):
            rowid = records.rowid_of(self._conn, memory_id)
            records.set_vector(self._conn, rowid, vector, active)
            self._index_cache.vector_written(rowid, vector)

    def edit(
        self,
        memory_id: str,
        content: str | None = None,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        note: str = "",
        view: TreeView | None = None,
    ) -> MemoryRecord:
        """A person's correction (op `edit`; rollback undoes it). New text is redacted
        and re-embedded, but not consolidated: the person chose which memory it is.
        New text with `view`: it is about its file as the view holds it now (fresh)."""
        if content is not None:
            content = redact(validate.check_text("memory content", content)).text
        resolved = self._resolve(memory_id)
        vector = self._vectors.embed_memories([content])[0] if self._vectors and content else None
        now = self._clock()
        with self._lock, writing(self._conn):
            row = records.fetch(self._conn, resolved)
            changes = corrections.edit_changes(row, content, type, tags, now)
            if "content" in changes and row["source_blob"]:
                changes.update(tree.fresh_changes(view, row["source_file"]))
            after = corrections.edit(self._conn, resolved, changes, now, note)
            if vector is not None and "content" in changes:
                rowid = records.rowid_of(self._conn, resolved)
                records.set_vector(self._conn, rowid, vector, after["status"] == "active")
                self._index_cache.vector_written(rowid, vector)
        return self.get(resolved)

    def confirm(
        self, memory_id: str, *, note: str = "", view: TreeView | None = None
    ) -> MemoryRecord:
        """A person says the memory is right: full confidence, salience up (op `confirm`);
        with `view`, right for its file's content there now (no longer stale)."""
        with self._lock, writing(self._conn):
            resolved = self._resolve(memory_id)
            row = records.fetch(self._conn, resolved)
            fresh = tree.fresh_changes(view, row["source_file"]) if row["source_blob"] else {}
            corrections.confirm(self._conn, resolved, self._clock(), note, fresh)
        return self.get(resolved)

    def counts(self) -> dict[str, dict[str, int]]:
        """type -> status -> number of memories."""
        with self._lock:
            return corrections.counts(self._conn)

    def relate(self, a: str, b: str, rel: str) -> Edge:
        validate.check_relation(rel)
        now = self._clock()
        with self._lock, writing(self._conn):
            src, dst = self._resolve(a), self._resolve(b)
            if src == dst:
                raise InvalidInput("a memory cannot be related to itself")
            if records.add_edge(self._conn, src, dst, rel, now):
                records.log_op(self._conn, src, "relate", now, None, None, f"{rel} -> {dst}")
        return Edge(src, dst, rel, now)

    def edges(self, memory_id: str) -> list[Edge]:
        with self._lock:
            resolved = self._resolve(memory_id)
            rows = fetch_all(
                self._conn,
                "SELECT src, dst, rel, created FROM edges WHERE src=? OR dst=? ORDER BY created",
                (resolved, resolved),
            )
        return [Edge(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]

    # -- checkpoints and briefings -------------------------------------------------------

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
        lists = {"done": done, "next": next, "hypotheses": hypotheses, "blocked": blocked}
        with self._lock:
            return notes.checkpoint(self._conn, self._clock, task, scope, {**lists, "files": files})

    def last_checkpoint(self, scope: str | None = None) -> Checkpoint:
        with self._lock:
            return notes.last_checkpoint(self._conn, scope)

    def resume(self, scope: str | None = None) -> str:
        """The latest checkpoint as markdown, with the freshest decisions and gotchas."""
        with self._lock:
            cp = notes.last_checkpoint(self._conn, scope)
            return notes.resume_markdown(self._conn, cp, self._clock(), self.half_life_days)

    def brief(
        self,
        topic: str | None = None,
        *,
        budget_tokens: int = 800,
        scope: str | None = None,
        view: TreeView | None = None,
    ) -> str:
        """A compressed markdown summary of a topic (or of the whole memory)."""
        if topic is not None:
            hits = self.recall(topic, k=40, scope=scope, reinforce=False, view=view)
        else:
            hits = self._top(scope, view)
        return notes.brief_markdown(topic, hits, budget_tokens)

    # -- workspace -----------------------------------------------------------------------

    def index_workspace(
        self,
        files: Mapping[str, bytes],
        commit_id: str,
        *,
        removed: Sequence[str] | None = None,
        first: Sequence[str] = (),
    ) -> IndexReport:
        """Make the chunk index hold exactly `files` (the text files of a head commit);
        with `removed` given, `files` are only those changed or added since the last
        index and `removed` those gone (a diff of two commits: no re-read of the rest).

        Unchanged files are skipped by hash; chunk vectors come from the BLAKE3-keyed
        cache, so switching branches back and forth never embeds a text twice. `first`:
        paths indexed (and searchable) before the rest, e.g. the files last edited.
        """
        if not isinstance(commit_id, str) or not commit_id:
            raise InvalidInput("commit id is empty")
        return workspace.index(
            self._conn, self._lock, files, commit_id, self._vectors, removed, first
        )

    def workspace_progress(self) -> tuple[int, int] | None:
        """(passages indexed, passages in all) of the last workspace index pass, the one
        under way included; None before the first."""
        with self._lock:
            return workspace.progress(self._conn)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            counts = dict(
                (str(r[0]), int(r[1]))
                for r in self._conn.execute("SELECT status, count(*) FROM memories GROUP BY 1")
            )
            chunk_count = _count(self._conn, "chunks")
            cached = _count(self._conn, "embed_cache")
            model = get_meta(self._conn, "embed_model")
            done, total = workspace.progress(self._conn) or (chunk_count, chunk_count)
        return {
            "memories": counts,
            "chunks": chunk_count,
            "workspace_index": {"passages_indexed": done, "passages_total": total},
            "embed_cache": cached,
            "embed_model": model or None,
            "lexical_only": self.lexical_only,
        }


def _placed(source: Source, view: TreeView | None) -> Source:
    """A source file as a path of the view's tree, with the blob it holds there now."""
    if view is None or not source.file:
        return source
    path = tree.tree_path(source.file)
    try:
        blob = view.blob(path) if path else None
    except tree.TreeUnavailable:
        return source  # written unchecked, as without a view
    return dataclasses.replace(source, file=path, blob=blob) if blob is not None else source


@dataclasses.dataclass(frozen=True)
class _Early:
    """A decision taken from the stored rows while the fact was being embedded."""

    state: tuple[int, int]  # Memory._db_state() when it was taken
    decision: consolidate.Decision | None  # None: the nearest neighbours decide


def _count(conn: apsw.Connection, table: str) -> int:
    row = fetch_one(conn, f"SELECT count(*) FROM {table}")
    return int(row[0]) if row else 0
