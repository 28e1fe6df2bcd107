"""A branch's memories when the branch is merged or deleted (ADR 0063).

A merge consolidates each active memory of the merged branch, oldest first, against the
memories of the target (its scope, its branch value: None for the trunk), as if it were
written there now: a duplicate confirms the target's memory and retires the branch's
(NOOP), a refinement rewrites the target's (UPDATE), a new value retires the target's
rivals (SUPERSEDE) and a new fact just moves (ADD). Every change is an op in history
(`merge` on the branch's memory), so nothing is lost and rollback undoes it.

A deletion archives the branch's active memories: kept, listed with `--archived`, not
searched by default.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw

from helixfs.memory import consolidate, records, tree, writer
from helixfs.memory.extract import INJECTION_TAG, candidate
from helixfs.memory.retrieval import load_vectors
from helixfs.memory.types import Source

# (candidate, vector, scope, branch) -> decision: the engine's, with its vector index
Decide = Callable[..., consolidate.Decision]


@dataclass
class MergeReport:
    """What a merge of `branch`'s memories into `into` (None: the trunk) did."""

    branch: str
    into: str | None
    moved: list[str] = field(default_factory=list)  # ADD: now the target's
    duplicates: list[str] = field(default_factory=list)  # NOOP: retired, target confirmed
    refined: list[str] = field(default_factory=list)  # UPDATE: retired, target rewritten
    superseded: list[str] = field(default_factory=list)  # target memories a new value retired
    vectors: dict[int, Any] = field(default_factory=dict)  # rowid -> vector rewritten

    def to_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "into": self.into,
            "moved": self.moved,
            "duplicates": self.duplicates,
            "refined": self.refined,
            "superseded": self.superseded,
        }


def merge(
    conn: apsw.Connection, branch: str, into: str | None, decide: Decide, now: float
) -> MergeReport:
    """Consolidate `branch`'s active memories into `into`; in the caller's transaction."""
    report = MergeReport(branch, into)
    rows = tree.branch_rows(conn, branch)
    vectors = load_vectors(conn, "memory_vec", [records.rowid_of(conn, r["id"]) for r in rows])
    for row in rows:
        rowid = records.rowid_of(conn, row["id"])
        _merge_one(conn, row, vectors.get(rowid), into, decide, now, report)
    return report


def _merge_one(
    conn: apsw.Connection,
    row: dict[str, Any],
    vector: list[float] | None,
    into: str | None,
    decide: Decide,
    now: float,
    report: MergeReport,
) -> None:
    tags = tuple(json.loads(row["tags"]))
    cand = candidate(row["content"], type_hint=row["type"], explicit=True)
    decision = decide(cand, vector, row["scope"], into, INJECTION_TAG in tags)
    fact = writer.NewFact(
        cand, tags, row["scope"], _source(row), row["confidence"], row["salience"], vector
    )
    target = "the trunk" if into is None else f"branch {into}"
    if decision.action in ("noop", "update"):
        assert decision.target is not None
        if decision.action == "noop":
            writer.confirm(conn, decision.target, fact, now)
            report.duplicates.append(row["id"])
        else:
            writer.refine(conn, decision.target, fact, now)
            report.refined.append(row["id"])
            if vector is not None:
                report.vectors[records.rowid_of(conn, decision.target)] = vector
        note = f"merged into {target}: {decision.action} of {decision.target}"
        retired = {"status": "superseded", "valid_to": now, "updated": now}
        records.update(conn, row["id"], retired, "merge", now, note)
        records.add_edge(conn, decision.target, row["id"], "merges", now)
        return
    moved = {"branch": into, "base_commit": row["base_commit"] if into else None}
    records.update(conn, row["id"], moved, "merge", now, f"merged into {target}")
    writer.retire(conn, row["id"], decision, now)
    report.moved.append(row["id"])
    report.superseded.extend(decision.retire)


def _source(row: dict[str, Any]) -> Source:
    return Source(
        agent=row["source_agent"],
        file=row["source_file"],
        line=row["source_line"],
        when=row["source_time"],
        blob=row["source_blob"],
    )


def archive(conn: apsw.Connection, branch: str, now: float) -> list[str]:
    """Archive `branch`'s active memories (its deletion); their ids."""
    ids = [r["id"] for r in tree.branch_rows(conn, branch)]
    if ids:
        changes = {"status": "archived", "updated": now}
        records.update_many(conn, ids, changes, "archive", now, f"branch {branch} deleted")
    return ids


def rename(conn: apsw.Connection, old: str, new: str, now: float) -> list[str]:
    """Every memory of branch `old`, whatever its status, becomes `new`'s."""
    ids = [str(r[0]) for r in conn.execute("SELECT id FROM memories WHERE branch=?", (old,))]
    if ids:
        note = f"branch {old} renamed {new}"
        records.update_many(conn, ids, {"branch": new}, "rename", now, note)
    return ids
