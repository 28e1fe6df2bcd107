"""Apply a consolidation decision: the row changes behind ADD, NOOP, UPDATE, SUPERSEDE.

Runs inside the caller's transaction; every change goes through records.py, so each one
is logged in history and reflected in the FTS and vector tables.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from helixfs.memory import records
from helixfs.memory.consolidate import Decision
from helixfs.memory.db import new_id
from helixfs.memory.extract import Candidate
from helixfs.memory.retrieval import effective_salience
from helixfs.memory.tokens import normalize
from helixfs.memory.types import Source

Vector = Sequence[float] | npt.NDArray[np.float32]
CONFIRM_BOOST = 0.1  # salience gained when a fact is asserted again (or refined)


@dataclass(frozen=True)
class NewFact:
    cand: Candidate
    tags: tuple[str, ...]
    scope: str
    source: Source
    confidence: float
    salience: float
    vector: Vector | None
    branch: str | None = None  # the branch it is written in (None: unscoped)
    base_commit: str | None = None  # that branch's head when written


def apply(conn: apsw.Connection, decision: Decision, fact: NewFact, now: float) -> str:
    """Carry out `decision`; returns the id of the memory that now holds the fact."""
    if decision.action == "noop":
        assert decision.target is not None
        return confirm(conn, decision.target, fact, now)
    if decision.action == "update":
        assert decision.target is not None
        return refine(conn, decision.target, fact, now)
    memory_id = add(conn, fact, now)
    retire(conn, memory_id, decision, now)
    if decision.superseded_by is not None:
        _arrived_superseded(conn, memory_id, decision.superseded_by, now)
    return memory_id


def _arrived_superseded(conn: apsw.Connection, memory_id: str, newer: str, now: float) -> None:
    """A fact from elsewhere older than the value stored here: kept, already retired."""
    until = records.fetch(conn, newer)["valid_from"]
    changes = {"status": "superseded", "valid_to": until, "updated": now}
    records.update(conn, memory_id, changes, "supersede", now, f"superseded by {newer}")
    records.add_edges(conn, newer, [(memory_id, "supersedes")], now)


def _merged_tags(row_tags: str, tags: tuple[str, ...]) -> str:
    return json.dumps(list(dict.fromkeys((*json.loads(row_tags), *tags))))


def add(conn: apsw.Connection, fact: NewFact, now: float) -> str:
    cand, source = fact.cand, fact.source
    memory_id = new_id(now)
    data = {
        "id": memory_id,
        "type": cand.type,
        "content": cand.content,
        "scope": fact.scope,
        "tags": json.dumps(list(fact.tags)),
        "source_agent": source.agent,
        "source_file": source.file,
        "source_line": source.line,
        "source_time": source.when if source.when is not None else now,
        "confidence": fact.confidence,
        "salience": fact.salience,
        "valid_from": now,
        "valid_to": None,
        "created": now,
        "updated": now,
        "last_seen": now,
        "status": "active",
        "subject": cand.subject,
        "value": cand.value,
        "norm": normalize(cand.content),
        "branch": fact.branch,
        "base_commit": fact.base_commit if fact.branch is not None else None,
        "source_blob": source.blob if source.file else None,
        "moved_from": None,
    }
    rowid = records.insert(conn, data, now)
    if fact.vector is not None:
        records.insert_vector(conn, rowid, fact.vector, True)
    records.add_provenance(conn, memory_id, "add", source, now, cand.content)
    return memory_id


def retire(conn: apsw.Connection, new: str, decision: Decision, now: float) -> None:
    """Old values get valid_to and a `supersedes` edge; nothing is deleted."""
    changes = {"status": "superseded", "valid_to": now, "updated": now}
    if decision.retire:
        records.update_many(
            conn, decision.retire, changes, "supersede", now, f"superseded by {new}"
        )
    edges = [(old, "supersedes") for old in decision.retire]
    edges += [(old, "reasserts") for old in decision.reasserts]
    edges += [(old, "shadows") for old in decision.shadows]
    records.add_edges(conn, new, edges, now)


def _fresh(source: Source) -> dict[str, object]:
    """A fact asserted again from a file whose blob is known is about that content now:
    the memory it confirms or refines is fresh for it (ADR 0063)."""
    if not source.file or not source.blob:
        return {}
    return {"source_file": source.file, "source_blob": source.blob, "moved_from": None}


def confirm(conn: apsw.Connection, memory_id: str, fact: NewFact, now: float) -> str:
    row = records.fetch(conn, memory_id)
    salience = effective_salience(row["salience"], row["last_seen"], now)
    changes = {
        "salience": min(1.0, salience + CONFIRM_BOOST),
        "last_seen": max(now, row["last_seen"]),  # an older assertion from elsewhere
        "tags": _merged_tags(row["tags"], fact.tags),
        **_fresh(fact.source),
    }
    records.update(conn, memory_id, changes, "confirm", now, "equivalent fact asserted again")
    records.add_provenance(conn, memory_id, "noop", fact.source, now, fact.cand.content)
    return memory_id


def refine(conn: apsw.Connection, memory_id: str, fact: NewFact, now: float) -> str:
    cand = fact.cand
    row = records.fetch(conn, memory_id)
    salience = effective_salience(row["salience"], row["last_seen"], now)
    changes = {
        "content": cand.content,
        "norm": normalize(cand.content),
        "subject": cand.subject or row["subject"],
        "value": cand.value or row["value"],
        "tags": _merged_tags(row["tags"], fact.tags),
        "updated": now,
        "last_seen": now,
        "salience": min(1.0, salience + CONFIRM_BOOST),
        **_fresh(fact.source),
    }
    records.update(conn, memory_id, changes, "update", now, "refined")
    if fact.vector is not None:
        records.set_vector(conn, records.rowid_of(conn, memory_id), fact.vector, True)
    records.add_provenance(conn, memory_id, "update", fact.source, now, cand.content)
    return memory_id
