"""The memory's lexical reads (BM25 over memories_fts, the source column, plain lists)
in a module that imports neither numpy, sqlite-vec nor the embedder: the engine reads
through it, and so does a hook with no daemon (reader.py), which must answer in a few
tens of milliseconds and so cannot load the engine (ADR 0052)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from helixfs.errors import InvalidInput, NotFound
from helixfs.memory import records, tree, validate
from helixfs.memory.db import fetch_all
from helixfs.memory.tokens import fts_names, fts_query
from helixfs.memory.tree import TRUNK, Visibility, visible_sql
from helixfs.memory.types import MEMORY_TYPES, SEARCH_MODES, STATUSES

MAX_K = 1000
Scored = list[tuple[int, float]]  # (rowid, score: lower is better) best first


@dataclass(frozen=True)
class Filters:
    statuses: tuple[str, ...] = ("active",)
    scope: str | None = None
    types: tuple[str, ...] | None = None
    visible: Visibility = TRUNK  # which branches' memories (tree.visibility)


ACTIVE = Filters()


def memory_filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    """Filter clauses for queries that are driven by rowids or FTS matches. The unary `+`
    keeps SQLite from answering them through the status/scope/type indexes instead, which
    would visit every active row (measured: ~25 ms a query at 100,000 memories)."""
    clauses = [f"+m.status IN ({','.join('?' * len(filters.statuses))})"]
    params: list[Any] = list(filters.statuses)
    if filters.scope is not None:
        clauses.append("+m.scope IN ('global', ?)")
        params.append(filters.scope)
    if filters.types:
        clauses.append(f"+m.type IN ({','.join('?' * len(filters.types))})")
        params.extend(filters.types)
    branch_clause, branch_params = visible_sql(filters.visible)
    clauses.append(branch_clause)
    params.extend(branch_params)
    return " AND ".join(clauses), params


def lexical_memories(conn: apsw.Connection, query: str, filters: Filters, limit: int) -> Scored:
    return matching(conn, fts_query(query), filters, limit)


def matching(conn: apsw.Connection, match: str, filters: Filters, limit: int) -> Scored:
    """Rows of an FTS5 MATCH expression that pass the filters, best BM25 first."""
    if not match:
        return []
    where, params = memory_filter_sql(filters)
    sql = (
        "SELECT m.rowid, f.rank FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
        f"WHERE memories_fts MATCH ? AND {where} ORDER BY f.rank LIMIT ?"
    )
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, [match, *params, limit])]


def memory_rows(
    conn: apsw.Connection, rowids: list[int], filters: Filters = ACTIVE
) -> dict[int, dict[str, Any]]:
    """Rows that pass the filters (graph expansion may have brought in others)."""
    if not rowids:
        return {}
    where, params = memory_filter_sql(filters)
    placeholders = ",".join("?" * len(rowids))
    sql = (
        f"SELECT m.rowid, {', '.join('m.' + c.strip() for c in records.COLUMNS.split(','))} "
        f"FROM memories m WHERE m.rowid IN ({placeholders}) AND {where}"
    )
    return {int(r[0]): records.row_dict(r[1:]) for r in conn.execute(sql, [*rowids, *params])}


def listed(
    conn: apsw.Connection,
    *,
    type: str | None,
    scope: str | None,
    status: str | None,
    tag: str | None,
    limit: int,
    branch: str | None,
) -> list[dict[str, Any]]:
    """Rows newest first, filtered (Memory.memories)."""
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if type is not None and type not in MEMORY_TYPES:
        raise InvalidInput(f"unknown memory type {type!r}")
    validate.check_limit(limit)
    if branch is not None:
        validate.check_name("branch", branch)
    clauses, params = [], []
    for column, value in (("status", status), ("type", type), ("scope", scope)):
        if value is not None:
            clauses.append(f"{column}=?")
            params.append(value)
    if branch is not None:
        clauses.append("branch=?")
        params.append(branch)
    if tag is not None:
        clauses.append("EXISTS (SELECT 1 FROM json_each(tags) WHERE value=?)")
        params.append(tag)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    sql = f"SELECT {records.COLUMNS} FROM memories {where} ORDER BY id DESC LIMIT ?"
    return [records.row_dict(r) for r in fetch_all(conn, sql, [*params, limit])]


def about_files(
    conn: apsw.Connection, paths: Sequence[str], limit: int, visibility: Visibility
) -> list[dict[str, Any]]:
    """Active rows whose source is one of `paths` (relative to any folder: a source
    `auth/login.py` is about `src/auth/login.py`), newest first (Memory.about_files)."""
    wanted = {p.strip("/").removeprefix("./") for p in paths if p.strip("/")}
    names = {p.rsplit("/", 1)[-1] for p in wanted}
    found: dict[str, dict[str, Any]] = {}
    visible = tree.visible_sql(visibility, alias="")
    for name in sorted(names):
        for row in records.about_file(conn, name, limit * 4, visible):
            source = str(row["source_file"]).strip("/").removeprefix("./")
            if any(same_file(source, path) for path in wanted):
                found.setdefault(row["id"], row)
    return sorted(found.values(), key=lambda r: r["updated"], reverse=True)[:limit]


def mentioning(
    conn: apsw.Connection, words: Sequence[str], limit: int, visibility: Visibility
) -> list[dict[str, Any]]:
    """Active rows whose text holds any of `words`, best BM25 first (Memory.mentioning):
    a compound identifier by its whole (tokens.fts_names), not by any of its parts."""
    query = " ".join(w for w in words if w.strip())
    if not query:
        return []
    validate.check_text("words", query, limit=4000)
    filters = Filters(visible=visibility)
    found = matching(conn, fts_names(list(words)), filters, limit)
    rows = memory_rows(conn, [rowid for rowid, _ in found], filters)
    return [rows[rowid] for rowid, _ in found if rowid in rows]


def same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def resolve(conn: apsw.Connection, text: str) -> str:
    """The id that `text` names (an id, or a unique prefix of at least 6 characters)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("memory id is empty")
    found = records.resolve_id(conn, text)
    if found is None:
        raise NotFound(f"no memory with id {text!r}")
    return found


def check_query(query: str, k: int, mode: str, scope: str | None) -> None:
    """A recall's or search's arguments, checked before anything is read."""
    validate.check_text("query", query, limit=4000)
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"unknown search mode {mode!r}; use {', '.join(SEARCH_MODES)}")
    validate.check_limit(k, MAX_K, "k")
    if scope is not None:
        validate.check_name("scope", scope)
