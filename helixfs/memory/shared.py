"""The part of `Memory` that many machines share (ADR 0065): the operations this store
learnt itself, to send, and the operations another machine sent, applied once.

A mixin, as treeapi.py is, so engine.py stays the one class callers know. What travels
(memory/remote_sync.py carries it, signed) is each operation as it happened:

    {"op": "remember", "ids": [...], "at": unix seconds, "args": remember's arguments,
     "branch": name | null, "base_commit": hex | null}
    {"op": "forget", "ids": [...], "at": ..., "reason": text}
    {"op": "purge", "ids": [...]}
    {"op": "archive", "ids": [...], "at": ...}                 (made on request only)
    {"op": "edit" | "rollback", "ids": [...], "at": ..., "state": {column: value}}
    {"op": "relate", "ids": [...], "at": ..., "to": [...], "rel": name}

`ids` names the memory on every machine it is known on: its id where it was written,
then the ids of the memories of other machines it holds (sync_origins). A remember is
written through consolidation at its own time (`remember(at=...)`): a duplicate is a
NOOP, and of two contradicting values the one learnt last wins wherever it arrives.

A forget, archive, edit or rollback sets columns of the memory it names, not a new
fact (ADR 0078): each of its two parts, the status and the rest of the state, is set
only if no such operation here set that part at a later time, so two machines that
changed one memory while apart end alike, with the later change. An applied one is
recorded in history at the time it was made where it was made.
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
from helixfs.memory.redact import redact
from helixfs.memory.tokens import normalize
from helixfs.memory.tree import TreeView
from helixfs.memory.types import Source, WriteResult

# history ops that travel (an archive only when made on request: a branch's deletion
# archives its memories on each machine that deletes it)
SENT = ("add", "update", "edit", "forget", "purge", "archive", "rollback", "relate")
BATCH_OPS = 2000  # operations in one batch at most
ARCHIVED_ON_REQUEST = "archived on request"  # the note of `Memory.archive`'s history row
# the columns an edit and a rollback carry (tags as a list); norm is made again here
EDIT_FIELDS = ("content", "type", "tags")
_REST = ("scope", "confidence", "salience", "status", "valid_to", "subject", "value")
ROLLBACK_FIELDS = (*EDIT_FIELDS, *_REST)
# which operations set a memory's status, and which the rest of its state: the later
# of the arriving one and the last of those here wins (ADR 0078)
STATUS_OPS = ("forget", "archive", "rollback")
STATE_OPS = ("edit", "rollback")
_SETS_STATUS = {"forget": "forgotten", "archive": "archived"}
_APPLIED_NOTE = {
    "forget": "forgotten on another machine: ",
    "archive": "archived on another machine",
    "edit": "edited on another machine",
    "rollback": "rolled back on another machine",
}


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

    def _reembed(self, memory_id: str, content: str, active: bool) -> None:
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
        if op == "archive":
            return {"op": op, "ids": ids, "at": at} if note == ARCHIVED_ON_REQUEST else None
        if op == "relate":
            return self._relation(ids, at, note)
        row = json.loads(after) if after else None
        if row is not None and op in STATE_OPS:
            return {"op": op, "ids": ids, "at": at, "state": _state(op, row)}
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

    def _relation(self, ids: list[str], at: float, note: str) -> dict[str, Any] | None:
        rel, arrow, dst = note.partition(" -> ")  # relate's note (check_relation: no spaces)
        if not arrow:
            return None
        to = [dst, *self._origins(dst)]
        return {"op": "relate", "ids": ids, "at": at, "to": to, "rel": rel}

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
        if op["op"] == "relate":
            return self._relate_arrived(op)
        local = self._held(op["ids"])
        if op["op"] == "remember":
            return self._arrive(op, local)
        if local is None:
            return "unknown"  # never arrived here, or purged already
        if op["op"] == "purge":
            self.purge(local)
            self._conn.execute("DELETE FROM sync_origins WHERE memory_id=?", (local,))
            return "purge"
        return self._set_arrived(local, op)

    def _set_arrived(self, local: str, op: dict[str, Any]) -> str:
        """A forget, archive, edit or rollback made elsewhere: the columns it sets that
        no later such operation here set, and that differ ("older": all were)."""
        wanted = _changes(op)
        changes = self._not_set_later(local, wanted, float(op["at"]))
        row = records.fetch(self._conn, local)
        changes = {name: value for name, value in changes.items() if row[name] != value}
        if not changes:
            return "noop" if all(row[n] == v for n, v in wanted.items()) else "older"
        note = _APPLIED_NOTE[op["op"]] + str(op.get("reason", ""))
        changes["updated"] = self._clock()
        after = records.update(self._conn, local, changes, op["op"], float(op["at"]), note)
        if "content" in changes:
            self._reembed(local, after["content"], after["status"] == "active")
        return str(op["op"])

    def _not_set_later(self, local: str, changes: dict[str, Any], at: float) -> dict[str, Any]:
        """`changes` less the part (status, or the rest) an operation here set after `at`."""
        kept = dict(changes)
        if "status" in kept and self._last_set(local, STATUS_OPS) > at:
            del kept["status"]
        if set(kept) - {"status"} and self._last_set(local, STATE_OPS) > at:
            kept = {"status": kept["status"]} if "status" in kept else {}
        return kept

    def _last_set(self, local: str, ops: Sequence[str]) -> float:
        row = fetch_one(
            self._conn,
            f"SELECT MAX(at) FROM history WHERE memory_id=? AND op IN ({','.join('?' * len(ops))})",
            (local, *ops),
        )
        return float(row[0]) if row and row[0] is not None else 0.0

    def _relate_arrived(self, op: dict[str, Any]) -> str:
        src, dst = self._held(op["ids"]), self._held(op["to"])
        if src is None or dst is None:
            return "unknown"  # one of them never arrived here, or was purged
        if src == dst or not records.add_edge(self._conn, src, dst, op["rel"], op["at"]):
            return "noop"
        records.log_op(self._conn, src, "relate", op["at"], None, None, f"{op['rel']} -> {dst}")
        return "relate"

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


def _state(op: str, row: dict[str, Any]) -> dict[str, Any]:
    """The columns an edit or rollback carries, from its history row (tags a list)."""
    fields = EDIT_FIELDS if op == "edit" else ROLLBACK_FIELDS
    state = {name: row.get(name) for name in fields if name in row}
    tags = state.get("tags")
    if isinstance(tags, str):
        state["tags"] = json.loads(tags)
    return {name: value for name, value in state.items() if value is not None or name == "valid_to"}


def _changes(op: dict[str, Any]) -> dict[str, Any]:
    """The columns a checked forget, archive, edit or rollback sets, as stored."""
    if op["op"] in _SETS_STATUS:
        return {"status": _SETS_STATUS[op["op"]]}
    changes = dict(op["state"])
    if "tags" in changes:
        changes["tags"] = json.dumps(list(changes["tags"]))
    if "content" in changes:
        changes["content"] = redact(changes["content"]).text
        changes["norm"] = normalize(changes["content"])
    return changes
