"""Row-level operations on memories, each one recorded in `history`.

Every function here runs inside the caller's transaction. The rule they keep: whatever
changes a memory row also updates its FTS entry, its vector's `active` flag and writes
one history operation with the row before and after, so rollback has what it needs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from helixfs.errors import InvalidInput, NotFound
from helixfs.memory.db import fetch_all, fetch_one, pack_vector, table_exists
from helixfs.memory.tokens import fts_text
from helixfs.memory.types import MemoryRecord, Source

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

COLUMNS = (
    "id, type, content, scope, tags, source_agent, source_file, source_line, source_time, "
    "confidence, salience, valid_from, valid_to, created, updated, last_seen, status, "
    "subject, value, norm, branch, base_commit, source_blob, moved_from"
)
NAMES = tuple(c.strip() for c in COLUMNS.split(","))
_NAMES = list(NAMES)
MUTABLE = frozenset(_NAMES) - {"id"}


def row_dict(row: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(_NAMES, row, strict=True))


def with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """A row as history kept it: one from before the later columns has none of them
    (a rollback to it leaves them as they are)."""
    return {name: data.get(name) for name in _NAMES}


def to_record(data: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=data["id"],
        type=data["type"],
        content=data["content"],
        scope=data["scope"],
        tags=tuple(json.loads(data["tags"])),
        source=Source(
            agent=data["source_agent"],
            file=data["source_file"],
            line=data["source_line"],
            when=data["source_time"],
            blob=data.get("source_blob"),
            moved_from=data.get("moved_from"),
        ),
        confidence=data["confidence"],
        salience=data["salience"],
        valid_from=data["valid_from"],
        valid_to=data["valid_to"],
        created=data["created"],
        updated=data["updated"],
        last_seen=data["last_seen"],
        status=data["status"],
        branch=data.get("branch"),
    )


def fetch(conn: apsw.Connection, memory_id: str) -> dict[str, Any]:
    row = fetch_one(conn, f"SELECT {COLUMNS} FROM memories WHERE id=?", (memory_id,))
    if row is None:
        raise NotFound(f"no memory with id {memory_id}")
    return row_dict(row)


def rowid_of(conn: apsw.Connection, memory_id: str) -> int:
    row = fetch_one(conn, "SELECT rowid FROM memories WHERE id=?", (memory_id,))
    if row is None:
        raise NotFound(f"no memory with id {memory_id}")
    return int(row[0])


def resolve_id(conn: apsw.Connection, text: str) -> str | None:
    """An exact id, or a unique id prefix of at least 6 characters; None if no match."""
    token = text.strip().upper()
    if not token or not token.isalnum():
        return None
    row = fetch_one(conn, "SELECT id FROM memories WHERE id=?", (token,))
    if row:
        return str(row[0])
    if len(token) < 6:
        return None
    found = fetch_all(
        conn, "SELECT id FROM memories WHERE id >= ? AND id < ? LIMIT 2", (token, token + "~")
    )
    if len(found) > 1:
        raise InvalidInput(f"id prefix {text!r} is ambiguous; give more characters")
    return str(found[0][0]) if found else None


_HISTORY_INSERT = "INSERT INTO history(memory_id, op, at, before, after, note) VALUES (?,?,?,?,?,?)"
_EDGE_INSERT = "INSERT OR IGNORE INTO edges(src, dst, rel, created) VALUES (?,?,?,?)"


def log_op(
    conn: apsw.Connection,
    memory_id: str | None,
    op: str,
    at: float,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    note: str = "",
) -> None:
    conn.execute(_HISTORY_INSERT, _history_row(memory_id, op, at, before, after, note))


def _history_row(
    memory_id: str | None,
    op: str,
    at: float,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    note: str,
) -> tuple[Any, ...]:
    return (
        memory_id,
        op,
        at,
        json.dumps(before) if before is not None else None,
        json.dumps(after) if after is not None else None,
        note,
    )


def insert(conn: apsw.Connection, data: dict[str, Any], at: float, note: str = "") -> int:
    conn.execute(
        f"INSERT INTO memories({COLUMNS}) VALUES ({','.join('?' * len(_NAMES))})",
        [data[n] for n in _NAMES],
    )
    rowid = int(conn.last_insert_rowid())
    conn.execute(
        "INSERT INTO memories_fts(rowid, body) VALUES (?, ?)", (rowid, fts_text(data["content"]))
    )
    log_op(conn, data["id"], "add", at, None, data, note)
    return rowid


def update(
    conn: apsw.Connection,
    memory_id: str,
    changes: dict[str, Any],
    op: str,
    at: float,
    note: str = "",
) -> dict[str, Any]:
    """Apply `changes` to one memory and log `op`; returns the row after."""
    return update_many(conn, [memory_id], changes, op, at, note)[0]


def update_many(
    conn: apsw.Connection,
    memory_ids: Sequence[str],
    changes: dict[str, Any],
    op: str,
    at: float,
    note: str = "",
) -> list[dict[str, Any]]:
    """`update` of several memories with the same changes, one statement per table
    (a supersede may retire dozens of rivals); the rows after, in the order given."""
    unknown = set(changes) - MUTABLE
    if unknown:
        raise InvalidInput(f"cannot change memory fields {sorted(unknown)}")
    memory_ids = list(dict.fromkeys(memory_ids))
    found = _fetch_with_rowids(conn, memory_ids)
    rows: list[dict[str, Any]] = []
    changed: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for memory_id in memory_ids:
        if memory_id not in found:
            raise NotFound(f"no memory with id {memory_id}")
        rowid, before = found[memory_id]
        after = {**before, **changes}
        rows.append(after)
        if after != before:
            changed.append((rowid, before, after))
    if not changed:
        return rows
    assignments = ", ".join(f"{name}=?" for name in changes)
    conn.executemany(
        f"UPDATE memories SET {assignments} WHERE rowid=?",
        [[*changes.values(), rowid] for rowid, _, _ in changed],
    )
    for rowid, before, after in changed:
        if before["content"] != after["content"]:
            conn.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            conn.execute(
                "INSERT INTO memories_fts(rowid, body) VALUES (?, ?)",
                (rowid, fts_text(after["content"])),
            )
    flips = [
        (rowid, a["status"] == "active") for rowid, b, a in changed if b["status"] != a["status"]
    ]
    if flips and table_exists(conn, "memory_vec"):
        conn.executemany(
            "UPDATE memory_vec SET active=? WHERE rowid=?", [(int(on), r) for r, on in flips]
        )
    conn.executemany(
        _HISTORY_INSERT, [_history_row(a["id"], op, at, b, a, note) for _, b, a in changed]
    )
    return rows


def _fetch_with_rowids(
    conn: apsw.Connection, memory_ids: Sequence[str]
) -> dict[str, tuple[int, dict[str, Any]]]:
    placeholders = ",".join("?" * len(memory_ids))
    sql = f"SELECT rowid, {COLUMNS} FROM memories WHERE id IN ({placeholders})"
    return {r[1]: (int(r[0]), row_dict(r[1:])) for r in conn.execute(sql, list(memory_ids))}


def set_vector(
    conn: apsw.Connection,
    rowid: int,
    vector: Sequence[float] | npt.NDArray[np.float32],
    active: bool,
) -> None:
    """Replace a row's vector (vec0 has no upsert)."""
    conn.execute("DELETE FROM memory_vec WHERE rowid=?", (rowid,))
    insert_vector(conn, rowid, vector, active)


def insert_vector(
    conn: apsw.Connection,
    rowid: int,
    vector: Sequence[float] | npt.NDArray[np.float32],
    active: bool,
) -> None:
    """The vector of a row that has none yet (a memory just inserted)."""
    conn.execute(
        "INSERT INTO memory_vec(rowid, embedding, active) VALUES (?, ?, ?)",
        (rowid, pack_vector(vector), int(active)),
    )


def add_edge(conn: apsw.Connection, src: str, dst: str, rel: str, at: float) -> bool:
    """Insert an edge; False if it already existed."""
    conn.execute(_EDGE_INSERT, (src, dst, rel, at))
    return int(conn.changes()) > 0


def add_edges(
    conn: apsw.Connection, src: str, targets: Sequence[tuple[str, str]], at: float
) -> None:
    """Edges from `src` to each (dst, rel), in one statement; existing ones are kept."""
    conn.executemany(_EDGE_INSERT, [(src, dst, rel, at) for dst, rel in targets])


def add_provenance(
    conn: apsw.Connection, memory_id: str, action: str, source: Source, at: float, excerpt: str
) -> None:
    conn.execute(
        "INSERT INTO provenance(memory_id, action, agent, file, line, at, excerpt) "
        "VALUES (?,?,?,?,?,?,?)",
        (memory_id, action, source.agent, source.file, source.line, at, excerpt[:2000]),
    )


def purge(conn: apsw.Connection, memory_id: str, at: float) -> None:
    """Hard-delete a memory and every trace of its content (history keeps a tombstone)."""
    rowid = rowid_of(conn, memory_id)
    conn.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
    if table_exists(conn, "memory_vec"):
        conn.execute("DELETE FROM memory_vec WHERE rowid=?", (rowid,))
    conn.execute("DELETE FROM memories WHERE rowid=?", (rowid,))
    conn.execute("DELETE FROM edges WHERE src=? OR dst=?", (memory_id, memory_id))
    conn.execute("DELETE FROM provenance WHERE memory_id=?", (memory_id,))
    conn.execute("DELETE FROM history WHERE memory_id=?", (memory_id,))
    log_op(conn, memory_id, "purge", at, None, None, "content erased")


def about_file(
    conn: apsw.Connection,
    name: str,
    limit: int,
    visible: tuple[str, Sequence[Any]] = ("1", ()),
) -> list[dict[str, Any]]:
    """Active memory rows whose source file is named `name` (any folder), newest first:
    the caller matches folders (the file's path is known only relative to some root).
    `visible`: an SQL condition and its parameters (tree.visible_sql: whose branch)."""
    escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    where, params = visible
    sql = (
        f"SELECT {COLUMNS} FROM memories WHERE status='active' AND "
        "(source_file = ? OR source_file LIKE ? ESCAPE '\\') "
        f"AND {where} ORDER BY updated DESC LIMIT ?"
    )
    found = fetch_all(conn, sql, (name, "%/" + escaped, *params, limit))
    return [row_dict(r) for r in found]
