"""Memory that follows the tree: staleness of file memories, branch visibility (ADR 0063).

The engine never reads the repository. A caller that has one hands it a `TreeView` of
the branch it works in (vcs/sourceview.py's BranchView meets this protocol) and the
engine asks it:

- `blob(path)`: a memory about a file records the file's blob id when written; a
  different blob now means the file changed (stale, `changed`), none means it is gone;
- `moved(path)`: for a path that is gone, the commit that deleted it and where its
  file went (a rename): the memory follows, its source becomes the new path (op
  `follow` in history) and it says `renamed` until confirmed;
- `owns(commit)`: branch visibility (see `visible_sql`).

A stale memory still answers, marked with how and by which commit, at a lower weight.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import apsw

from helixfs.errors import HelixError
from helixfs.memory import records
from helixfs.memory.db import fetch_all, writing
from helixfs.memory.types import Hit, Staleness

# What a stale memory's relevance still counts for: a renamed file's memory is likely
# still right (its content may be the same), a changed one may be, a deleted one less.
STALE_WEIGHT = {"renamed": 0.8, "changed": 0.5, "deleted": 0.35}
STALE_SCAN = 20_000  # file memories `helix memories --stale` checks, newest first


class TreeUnavailable(HelixError):
    """The view cannot read its tree now (another process holds the repository): the
    memory answers as if it had no view, unmarked."""


class Moved(Protocol):
    @property
    def path(self) -> str | None: ...  # the new name; None: deleted

    @property
    def commit(self) -> str | None: ...  # the commit that renamed or deleted it


class TreeView(Protocol):
    """One branch of the repository as memory sees it; `branch` None is the trunk."""

    @property
    def branch(self) -> str | None: ...

    @property
    def head(self) -> str: ...

    def blob(self, path: str) -> str | None: ...

    def changed_by(self, path: str) -> str | None: ...

    def moved(self, path: str) -> Moved: ...

    def owns(self, commit: str) -> bool: ...


def tree_path(path: str) -> str:
    """A source file as a path in the tree: no leading `./` or `/`."""
    return "/".join(p for p in path.strip().split("/") if p and p != ".")


def check_rows(
    conn: apsw.Connection, rows: Iterable[dict[str, Any]], view: TreeView, now: float
) -> dict[str, Staleness]:
    """Memory id -> its staleness, for the rows that are about a file whose blob was
    recorded; a rename found is followed (the row is rewritten, in the caller's
    transaction if any). None marked if the view cannot read its tree."""
    found: dict[str, Staleness] = {}
    try:
        for row in rows:
            stale = _check(conn, row, view, now)
            if stale is not None:
                found[row["id"]] = stale
    except TreeUnavailable as err:
        import logging  # here: a hook with no daemon never gets here (~3 ms of its start)

        logging.getLogger("helixfs.memory").info("memories not checked against the tree: %s", err)
        return {}
    return found


def _check(
    conn: apsw.Connection, row: dict[str, Any], view: TreeView, now: float
) -> Staleness | None:
    blob, path = row.get("source_blob"), row.get("source_file")
    if not blob or not path:
        return None
    current = view.blob(path)
    if current is not None:
        if row.get("moved_from"):
            return Staleness("renamed", None, path, row["moved_from"])
        if current == blob:
            return None
        return Staleness("changed", view.changed_by(path), path)
    moved = view.moved(path)
    if moved.path is None:
        return Staleness("deleted", moved.commit, path)
    if row.get("branch") == view.branch:  # a rename in another line of work is its own
        _follow(conn, row, moved.path, moved.commit, now)
    return Staleness("renamed", moved.commit, moved.path, row.get("moved_from") or path)


def _follow(
    conn: apsw.Connection, row: dict[str, Any], new_path: str, commit: str | None, now: float
) -> None:
    """The memory's source becomes the file's new name, remembering the old one."""
    changes = {"source_file": new_path, "moved_from": row.get("moved_from") or row["source_file"]}
    with writing(conn):
        records.update(
            conn, row["id"], changes, "follow", now, f"renamed in {commit or 'a commit'}"
        )
    row.update(changes)


def fresh_changes(view: TreeView | None, path: str | None) -> dict[str, Any]:
    """Row fields that make a memory about `path` fresh for the view's current content
    (a confirmation, a re-assertion): its blob now, no rename pending."""
    if view is None or not path:
        return {}
    blob = view.blob(path)
    return {"source_blob": blob, "moved_from": None} if blob is not None else {}


def stale_rows(conn: apsw.Connection, visible: tuple[str, list[Any]]) -> list[dict[str, Any]]:
    """Active visible memories with a recorded blob, newest first, at most STALE_SCAN
    (for `--stale`: the caller keeps those that are stale)."""
    where, params = visible
    sql = (
        f"SELECT {', '.join('m.' + c for c in records.NAMES)} FROM memories m "
        f"WHERE m.status='active' AND m.source_blob IS NOT NULL AND {where} "
        "ORDER BY m.id DESC LIMIT ?"
    )
    return [records.row_dict(r) for r in fetch_all(conn, sql, [*params, STALE_SCAN])]


# -- branch visibility --------------------------------------------------------------------


@dataclass(frozen=True)
class Visibility:
    """Which branch memories a reader sees: unscoped ones always; those of `branch`;
    and those of other branches written at a commit `owned` here (`branch|commit`)."""

    branch: str | None = None
    owned: tuple[str, ...] = ()
    everything: bool = False  # no branch filter (a listing of every branch)


TRUNK = Visibility()
EVERY_BRANCH = Visibility(everything=True)


def visibility(conn: apsw.Connection, view: TreeView | None) -> Visibility:
    """The view's visibility: a memory of branch B written at commit C is seen from
    branch R when R is B, or when C is in R's history but not in the trunk's (R was
    made from B after C, or merged B in). From the trunk: unscoped memories only."""
    if view is None or view.branch is None:
        return TRUNK
    if not _has_other_branches(conn, view.branch):
        return Visibility(view.branch)
    pairs = fetch_all(
        conn,
        "SELECT DISTINCT branch, base_commit FROM memories WHERE branch IS NOT NULL "
        "AND branch != ? AND base_commit IS NOT NULL AND status IN ('active', 'superseded')",
        (view.branch,),
    )
    try:
        owned = tuple(f"{b}|{c}" for b, c in pairs if view.owns(str(c)))
    except TreeUnavailable:
        owned = ()
    return Visibility(view.branch, owned)


def _has_other_branches(conn: apsw.Connection, branch: str) -> bool:
    """Whether any memory belongs to another branch (the branch index answers)."""
    row = conn.execute(
        "SELECT 1 FROM memories WHERE branch IS NOT NULL AND branch != ? LIMIT 1", (branch,)
    ).fetchone()
    return row is not None


def visible_sql(vis: Visibility, alias: str = "m.") -> tuple[str, list[Any]]:
    """An SQL condition on `memories` (as `alias`) for `vis`, with its parameters. The
    unary `+` keeps SQLite from answering through the branch index (every unscoped
    row), as retrieval's other filters do."""
    if vis.everything:
        return "1", []
    clause = f"+{alias}branch IS NULL"
    params: list[Any] = []
    if vis.branch is not None:
        clause += f" OR +{alias}branch = ?"
        params.append(vis.branch)
    owned = ""
    if vis.owned:
        marks = ",".join("?" * len(vis.owned))
        owned = f"(s.branch || '|' || s.base_commit) IN ({marks})"
        clause += f" OR ({alias}branch || '|' || {alias}base_commit) IN ({marks})"
        params.extend(vis.owned)
    if vis.branch is None:
        return f"({clause})", params
    # a memory the branch (or one it sees) stated a new value of is hidden in it
    shadowing = f"s.branch = ?{' OR ' + owned if owned else ''}"
    hidden = (
        "EXISTS (SELECT 1 FROM edges e JOIN memories s ON s.id = e.src "
        f"WHERE e.dst = {alias or 'memories.'}id AND e.rel = 'shadows' AND s.status = 'active' "
        f"AND ({shadowing}))"
    )
    return f"(({clause}) AND NOT {hidden})", [*params, vis.branch, *vis.owned]


def branch_rows(conn: apsw.Connection, branch: str, status: str = "active") -> list[dict[str, Any]]:
    """A branch's own memories, oldest first (a merge consolidates them in that order)."""
    sql = f"SELECT {records.COLUMNS} FROM memories WHERE branch=? AND status=? ORDER BY id"
    return [records.row_dict(r) for r in fetch_all(conn, sql, (branch, status))]


def branch_names(conn: apsw.Connection) -> list[str]:
    rows = fetch_all(conn, "SELECT DISTINCT branch FROM memories WHERE branch IS NOT NULL")
    return sorted(str(r[0]) for r in rows)


def with_staleness(items: Sequence[Any], stale: dict[str, Staleness]) -> list[Any]:
    """Records or hits (frozen dataclasses with `id` and `stale`) marked stale."""
    return [dataclasses.replace(i, stale=stale[i.id]) if i.id in stale else i for i in items]


def reweighed(conn: apsw.Connection, hits: Sequence[Hit], view: TreeView, now: float) -> list[Hit]:
    """Hits with their memories' staleness in `view`, a stale one's score lowered by
    STALE_WEIGHT, best first again."""
    ids = [h.id for h in hits if h.kind == "memory"]
    if not ids:
        return list(hits)
    marks = ",".join("?" * len(ids))
    sql = f"SELECT {records.COLUMNS} FROM memories WHERE id IN ({marks})"
    rows = [records.row_dict(r) for r in fetch_all(conn, sql, ids)]
    stale = check_rows(conn, rows, view, now)
    if not stale:
        return list(hits)
    marked = [
        dataclasses.replace(h, stale=stale[h.id], score=h.score * STALE_WEIGHT[stale[h.id].how])
        if h.id in stale and h.kind == "memory"
        else h
        for h in hits
    ]
    return sorted(marked, key=lambda h: h.score, reverse=True)
