"""A person's corrections of one memory: edit its text, type or tags; confirm it.

Unlike `remember`, nothing here is consolidated: the person names the memory to change,
so no rival is looked for. Each change is one op in history (`edit`, `confirm`), so
`rollback` undoes it like any other. Runs inside the caller's write transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from helixfs.errors import InvalidInput
from helixfs.memory import records, validate
from helixfs.memory.retrieval import effective_salience
from helixfs.memory.tokens import normalize
from helixfs.memory.types import MEMORY_TYPES

CONFIRMED_BOOST = 0.2  # a person's word counts for more than an agent asserting it again


def edit_changes(
    row: dict[str, Any],
    content: str | None,
    type_: str | None,
    tags: Sequence[str] | None,
    now: float,
) -> dict[str, Any]:
    """The columns an edit sets; InvalidInput when it sets nothing or something bad."""
    changes: dict[str, Any] = {}
    if content is not None and content != row["content"]:
        changes["content"] = content
        changes["norm"] = normalize(content)
    if type_ is not None and type_ != row["type"]:
        if type_ not in MEMORY_TYPES:
            raise InvalidInput(f"unknown memory type {type_!r}; use {', '.join(MEMORY_TYPES)}")
        changes["type"] = type_
    if tags is not None:
        encoded = json.dumps(list(validate.check_tags(tags)))
        if encoded != row["tags"]:
            changes["tags"] = encoded
    if not changes:
        raise InvalidInput("the edit changes nothing: give new text, a type or tags")
    changes["updated"] = now
    return changes


def edit(
    conn: apsw.Connection, memory_id: str, changes: dict[str, Any], now: float, note: str
) -> dict[str, Any]:
    if records.fetch(conn, memory_id)["status"] == "forgotten":
        raise InvalidInput(f"memory {memory_id} is forgotten: restore it before editing it")
    return records.update(conn, memory_id, changes, "edit", now, note or "edited by hand")


def confirm(
    conn: apsw.Connection,
    memory_id: str,
    now: float,
    note: str,
    fresh: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Salience up and full confidence: the memory is right, a person said so. `fresh`:
    the source fields that make it true for the file's current content (tree.py)."""
    row = records.fetch(conn, memory_id)
    if row["status"] != "active":
        raise InvalidInput(
            f"memory {memory_id} is {row['status']}: only an active one is confirmed"
        )
    salience = effective_salience(row["salience"], row["last_seen"], now)
    changes = {
        "salience": min(1.0, salience + CONFIRMED_BOOST),
        "confidence": 1.0,
        "last_seen": now,
        **(fresh or {}),
    }
    return records.update(conn, memory_id, changes, "confirm", now, note or "confirmed by hand")


def counts(conn: apsw.Connection) -> dict[str, dict[str, int]]:
    """type -> status -> number of memories (memories_status covers it)."""
    found: dict[str, dict[str, int]] = {}
    for type_, status, count in conn.execute(
        "SELECT type, status, count(*) FROM memories GROUP BY status, type"
    ):
        found.setdefault(str(type_), {})[str(status)] = int(count)
    return found
