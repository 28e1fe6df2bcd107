"""The part of `Memory` that many machines share (ADR 0065): the operations this store
learnt itself, to send, and the operations another machine sent, applied once.

A mixin, as treeapi.py is, so engine.py stays the one class callers know. What travels
(memory/remote_sync.py carries it, signed) is each operation as it happened:

    {"op": "remember", "ids": [...], "at": unix seconds, "args": remember's arguments,
     "branch": name | null, "base_commit": hex | null}
    {"op": "forget", "ids": [...], "at": ..., "reason": text}
    {"op": "purge", "ids": [...]}

`ids` names the memory on every machine it is known on: its id where it was written,
then the ids of the memories of other machines it holds (sync_origins). A remember is
written through consolidation at its own time (`remember(at=...)`): a duplicate is a
NOOP, and of two contradicting values the one learnt last wins wherever it arrives.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from helixfs.memory import records
from helixfs.memory.db import fetch_all, fetch_one, writing
from helixfs.memory.tree import TreeView
from helixfs.memory.types import Source, WriteResult

SENT = ("add", "update", "edit", "forget", "purge")  # history ops that travel
BATCH_OPS = 2000  # operations in one batch at most


@dataclass(frozen=True)
class Arrived:
    """The branch a memory from another machine was written in, as a TreeView: its
    file's blob is not read here (that machine's tree may not be here yet)."""

    branch: str | None
    head: str

    def blob(self, path: str) -> str | None:
        return None

    def changed_by(self, path: str) -> str | None:
        return None

    def moved(self, path: str) -> Any:
        raise NotImplementedError

    def owns(self, commit: str) -> bool:
        return False


class SharesMemory:
    _conn: apsw.Connection
    _lock: threading.RLock
    _clock: Callable[[], float]

    def remember(  # the engine's
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
        raise NotImplementedError

    def forget(self, id_or_query: str, *, reason: str = "") -> list[str]:
        raise NotImplementedError

    def purge(self, memory_id: str) -> None:
        raise NotImplementedError

    # -- what this store learnt itself -------------------------------------------------

    def own_operations(self, since: int) -> tuple[list[dict[str, Any]], int]:
        """The operations this store made after history row `since` (none that applying
        another machine's batch made), at most BATCH_OPS; and the row they reach."""
        with self._lock:
            rows = fetch_all(
                self._conn,
                "SELECT seq, memory_id, op, at, after, note FROM history h WHERE seq > ? "
                f"AND op IN ({','.join('?' * len(SENT))}) AND NOT EXISTS (SELECT 1 FROM "
                "sync_batches b WHERE h.seq BETWEEN b.first_seq AND b.last_seq) "
                "ORDER BY seq LIMIT ?",
                (since, *SENT, BATCH_OPS),
            )
            top = self._last_history()
            ops = [self._operation(*row) for row in rows]
        reached = int(rows[-1][0]) if len(rows) == BATCH_OPS else max(since, top)
        return [op for op in ops if op is not None], reached

    def _operation(
        self, seq: int, memory_id: str, op: str, at: float, after: str | None, note: str
    ) -> dict[str, Any] | None:
        ids = [memory_id, *self._origins(memory_id)]
        if op == "forget":
            return {"op": "forget", "ids": ids, "at": at, "reason": note}
        if op == "purge":
            return {"op": "purge", "ids": ids}
        row = json.loads(after) if after else None
        if row is None or row.get("status") != "active":
            return None
        return {
            "op": "remember",
            "ids": ids,
            "at": row["valid_from"] if op == "add" else at,
            "branch": row.get("branch"),
            "base_commit": row.get("base_commit"),
            "args": records.to_record(records.with_defaults(row)).portable(),
        }

    def _origins(self, memory_id: str) -> list[str]:
        rows = fetch_all(
            self._conn, "SELECT origin FROM sync_origins WHERE memory_id=?", (memory_id,)
        )
        return [str(r[0]) for r in rows if r[0] != memory_id]

    # -- what other machines learnt ----------------------------------------------------

    def batch_applied(self, signer: str, seq: int) -> bool:
        with self._lock:
            found = fetch_one(
                self._conn, "SELECT 1 FROM sync_batches WHERE signer=? AND seq=?", (signer, seq)
            )
        return found is not None

    def apply_batch(
        self, signer: str, seq: int, ops: Sequence[dict[str, Any]]
    ) -> dict[str, int] | None:
        """Apply another machine's checked operations, all or none, once: what each did
        (None: this batch was applied before). The history rows it writes are noted, so
        this store never sends them on."""
        counts: dict[str, int] = {}
        with self._lock, writing(self._conn):
            if self.batch_applied(signer, seq):
                return None
            first = self._issued() + 1
            for op in ops:
                action = self._apply(op)
                counts[action] = counts.get(action, 0) + 1
            self._conn.execute(  # last < first when it wrote nothing: an empty range
                "INSERT INTO sync_batches(signer, seq, applied, first_seq, last_seq) "
                "VALUES (?,?,?,?,?)",
                (signer, seq, self._clock(), first, self._issued()),
            )
        return counts

    def _issued(self) -> int:
        """The last history number SQLite gave (AUTOINCREMENT: never given again)."""
        row = fetch_one(self._conn, "SELECT seq FROM sqlite_sequence WHERE name='history'")
        return int(row[0]) if row else 0

    def _last_history(self) -> int:
        row = fetch_one(self._conn, "SELECT COALESCE(MAX(seq), 0) FROM history")
        return int(row[0]) if row else 0

    def _apply(self, op: dict[str, Any]) -> str:
        local = self._held(op["ids"])
        if op["op"] == "remember":
            return self._arrive(op, local)
        if local is None:
            return "unknown"  # never arrived here, or purged already
        if op["op"] == "purge":
            self.purge(local)
            self._conn.execute("DELETE FROM sync_origins WHERE memory_id=?", (local,))
            return "purge"
        if records.fetch(self._conn, local)["status"] == "forgotten":
            return "noop"
        self.forget(local, reason=f"forgotten on another machine: {op.get('reason', '')}")
        return "forget"

    def _arrive(self, op: dict[str, Any], local: str | None) -> str:
        args = op["args"]
        if local is not None and records.fetch(self._conn, local)["content"] == args["content"]:
            return "noop"  # known here, unchanged (it may be this store's own)
        branch = op.get("branch")
        view = Arrived(branch, op.get("base_commit") or "") if branch is not None else None
        result = self.remember(**args, view=view, at=float(op["at"]))
        self._conn.executemany(
            "INSERT OR REPLACE INTO sync_origins(origin, memory_id) VALUES (?, ?)",
            [(origin, result.id) for origin in op["ids"] if origin != result.id],
        )
        return result.action

    def _held(self, ids: Sequence[str]) -> str | None:
        """The memory here that any of `ids` names: one that arrived under it, or its own."""
        for name in ids:
            row = fetch_one(
                self._conn,
                "SELECT m.id FROM sync_origins o JOIN memories m ON m.id=o.memory_id "
                "WHERE o.origin=?",
                (name,),
            ) or fetch_one(self._conn, "SELECT id FROM memories WHERE id=?", (name,))
            if row is not None:
                return str(row[0])
        return None
