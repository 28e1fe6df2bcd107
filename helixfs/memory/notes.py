"""Checkpoints, resume and briefings (markdown), and the helpers forget/rollback lean on."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from helixfs.errors import InvalidInput, NotFound
from helixfs.memory import validate
from helixfs.memory.db import fetch_all, fetch_one, new_id, writing
from helixfs.memory.ranking import top_memories
from helixfs.memory.redact import redact
from helixfs.memory.tokens import estimate_tokens, fts_query
from helixfs.memory.types import Checkpoint, Hit

if TYPE_CHECKING:
    from helixfs.memory.outcomes import HistoryEntry

CHECKPOINT_FIELDS = ("done", "next", "hypotheses", "blocked", "files")
MAX_ITEMS = 100
BRIEF_ORDER = (
    "identity",
    "preference",
    "convention",
    "decision",
    "gotcha",
    "project",
    "howto",
    "entity",
    "fact",
    "snippet",
)


def single_match(conn: apsw.Connection, query: str) -> str:
    """The one active memory matching every term of `query` (forget by query)."""
    match = fts_query(query, all_terms=True)
    if not match:
        raise InvalidInput(f"{query!r} is neither a memory id nor a searchable query")
    rows = fetch_all(
        conn,
        "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
        "WHERE memories_fts MATCH ? AND m.status='active' ORDER BY f.rank LIMIT 6",
        (match,),
    )
    if not rows:
        raise NotFound(f"no active memory matches {query!r}")
    if len(rows) > 1:
        ids = ", ".join(str(r[0]) for r in rows[:5])
        raise InvalidInput(f"{query!r} matches several memories ({ids}...); forget one by id")
    return str(rows[0][0])


def rollback_target(entries: Sequence[HistoryEntry], to_seq: int | None) -> dict[str, Any]:
    """The row state a rollback restores: after op `to_seq`, or before the last change."""
    if to_seq is not None:
        for entry in entries:
            if entry.seq == to_seq:
                if entry.after is None:
                    raise InvalidInput(f"operation {to_seq} left no state to restore")
                return entry.after
        raise NotFound(f"operation {to_seq} is not in this memory's history")
    for entry in reversed(entries):
        if entry.op in ("relate",):
            continue
        if entry.before is None:
            raise InvalidInput(
                "nothing to undo: the last change created the memory (use forget to retire it)"
            )
        return entry.before
    raise InvalidInput("nothing to undo")


def _clean_list(kind: str, items: Sequence[str]) -> list[str]:
    if isinstance(items, str):
        items = [items]
    if len(items) > MAX_ITEMS:
        raise InvalidInput(f"too many {kind} items ({len(items)} > {MAX_ITEMS})")
    cleaned = []
    for item in items:
        if not isinstance(item, str) or not item.strip() or len(item) > 4000:
            raise InvalidInput(f"each {kind} item must be non-empty text under 4000 chars")
        cleaned.append(redact(item.strip()).text)
    return cleaned


def checkpoint(
    conn: apsw.Connection,
    clock: Callable[[], float],
    task: str,
    scope: str,
    lists: dict[str, Sequence[str]],
) -> Checkpoint:
    """Memory.checkpoint's write, checked, in a transaction of its own: the engine's and
    a hook's with no daemon (reader.Checkpointing), which opens no engine for one INSERT."""
    validate.check_text("task", task, limit=4000)
    validate.check_name("scope", scope)
    with writing(conn):
        return save_checkpoint(conn, new_id(clock()), scope, clock(), task, lists)


def save_checkpoint(
    conn: apsw.Connection,
    checkpoint_id: str,
    scope: str,
    now: float,
    task: str,
    lists: dict[str, Sequence[str]],
) -> Checkpoint:
    cleaned = {name: _clean_list(name, lists.get(name, ())) for name in CHECKPOINT_FIELDS}
    task_text = redact(task.strip()).text
    conn.execute(
        "INSERT INTO checkpoints(id, scope, created, task, done, next, hypotheses, blocked, "
        "files) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            checkpoint_id,
            scope,
            now,
            task_text,
            *(json.dumps(cleaned[name]) for name in CHECKPOINT_FIELDS),
        ),
    )
    return Checkpoint(
        checkpoint_id,
        scope,
        now,
        task_text,
        **{name: tuple(cleaned[name]) for name in CHECKPOINT_FIELDS},
    )


def last_checkpoint(conn: apsw.Connection, scope: str | None) -> Checkpoint:
    sql = "SELECT id, scope, created, task, done, next, hypotheses, blocked, files FROM checkpoints"
    params: list[Any] = []
    if scope is not None:
        sql += " WHERE scope=?"
        params.append(scope)
    row = fetch_one(conn, sql + " ORDER BY id DESC LIMIT 1", params)
    if row is None:
        raise NotFound("no checkpoint saved yet; save one with `helix checkpoint TASK ...`")
    lists = {name: tuple(json.loads(row[4 + i])) for i, name in enumerate(CHECKPOINT_FIELDS)}
    return Checkpoint(str(row[0]), str(row[1]), float(row[2]), str(row[3]), **lists)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def resume_markdown(
    conn: apsw.Connection, cp: Checkpoint, now: float, half_life_days: float
) -> str:
    lines = [
        f"# Resume: {cp.task}",
        "",
        f"_Checkpoint {cp.id}, {_when(cp.created)}, scope {cp.scope}_",
        "",
    ]
    titles = {
        "done": "Done",
        "next": "Next",
        "hypotheses": "Hypotheses",
        "blocked": "Blocked",
        "files": "Files",
    }
    for name in CHECKPOINT_FIELDS:
        items: tuple[str, ...] = getattr(cp, name)
        if items:
            lines.append(f"## {titles[name]}")
            lines.extend(f"- `{i}`" if name == "files" else f"- {i}" for i in items)
            lines.append("")
    top = top_memories(conn, cp.scope, 50, now, half_life_days=half_life_days)
    recent = [h for h in top if h.type in ("decision", "gotcha")][:5]
    if recent:
        lines.append("## Recent decisions and gotchas")
        lines.extend(f"- [{h.type}] {h.content}" for h in recent)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _first_sentence(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    for stop in (". ", "; "):
        head, sep, _ = flat.partition(stop)
        if sep and len(head) >= 20:
            flat = head + "."
            break
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def brief_markdown(topic: str | None, hits: Sequence[Hit], budget: int) -> str:
    """Group by type, one compressed line per memory, stop at the token budget."""
    if not isinstance(budget, int) or budget < 20:
        raise InvalidInput("brief budget must be at least 20 tokens")
    title = f"# Brief: {topic}" if topic else "# Brief: everything remembered"
    if not hits:
        return f"{title}\n\nNothing remembered yet{' about this' if topic else ''}.\n"
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(hit.type or "fact", []).append(hit)
    out = [title, ""]
    used = estimate_tokens("\n".join(out))
    for type_name in sorted(
        groups, key=lambda t: BRIEF_ORDER.index(t) if t in BRIEF_ORDER else len(BRIEF_ORDER)
    ):
        heading = f"## {type_name} ({len(groups[type_name])})"
        lines = [heading]
        for hit in groups[type_name]:
            lines.append(f"- {_first_sentence(hit.content)}")
        for i in range(len(lines), 1, -1):
            block = "\n".join(lines[:i]) + "\n"
            if used + estimate_tokens(block) <= budget:
                out.append(block)
                used += estimate_tokens(block)
                break
    return "\n".join(out).rstrip() + "\n"
