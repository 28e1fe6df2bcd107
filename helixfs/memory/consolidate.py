"""Decide what a new candidate fact does to the memories already stored.

NOOP    an equivalent active memory exists: confirm it (salience up), add provenance.
UPDATE  the new fact refines an existing one (same slot, more detail): rewrite in place,
        the old text stays in history.
SUPERSEDE  the new fact contradicts active ones (same subject, different value): add the
        new memory, retire the old ones (status superseded, valid_to, `supersedes` edge).
ADD     nothing close enough: a new memory.

Order matters: the cheap exact and slot checks run before the vector neighbours, and a
flagged (injection-looking) fact may only ADD, never retire or rewrite a trusted one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from helixfs.memory import contradict, frames
from helixfs.memory.annindex import VectorIndex
from helixfs.memory.db import fetch_all, fetch_one, pack_vector, table_exists
from helixfs.memory.extract import Candidate
from helixfs.memory.lexical import Filters, lexical_memories
from helixfs.memory.retrieval import cosine, load_vectors
from helixfs.memory.tokens import jaccard, normalize, word_set
from helixfs.memory.tree import Visibility

NOOP_COSINE = 0.97
UPDATE_COSINE = 0.85
NOOP_JACCARD = 0.9
UPDATE_JACCARD = 0.6
NEIGHBOURS = 5


@dataclass(frozen=True)
class Decision:
    action: str  # add | update | supersede | noop
    target: str | None = None  # the memory confirmed (noop) or rewritten (update)
    retire: tuple[str, ...] = ()  # memories a supersede retires
    reasserts: tuple[str, ...] = ()  # superseded memories holding the same value again
    reason: str = ""
    shadows: tuple[str, ...] = ()  # trunk memories a branch's new value hides in it
    # the newer memory that retires the new one at once: it was learnt, elsewhere,
    # before the value it would supersede (memory/remote_sync.py, ADR 0065)
    superseded_by: str | None = None


def decide_without_vector(
    conn: apsw.Connection, cand: Candidate, scope: str, flagged: bool, branch: str | None = None
) -> Decision | None:
    """What the stored rows alone decide (the same text, a flag, the subject's slot);
    None when it takes the nearest neighbours (`by_neighbours`). Only memories of the
    same scope and branch take part: a branch never retires what its trunk knows, its
    merge does (ADR 0063)."""
    twin = identical(conn, cand, scope, branch)
    if twin:
        return Decision("noop", target=twin, reason="identical fact")
    if flagged:
        return Decision("add", reason="flagged content never rewrites other memories")
    if cand.subject and cand.subject not in _NOT_A_SLOT:
        return _by_slot(conn, cand, scope, branch)
    return None


# Subjects that name nothing by themselves: "it was a great day" and "it was a long day"
# are not two values of one slot (issue 30: conversation turns superseded each other).
_NOT_A_SLOT = frozenset(
    str.split(
        "it this that these those he she they we you i there here what who which everything "
        "something nothing anything everyone someone today tonight life"
    )
)


def older_loses(conn: apsw.Connection, decision: Decision, at: float) -> Decision:
    """A fact learnt at `at` (on another machine) supersedes only values older than it;
    a rival learnt after it stays, and supersedes it instead: the newer fact wins,
    whichever arrives last."""
    if decision.action != "supersede" or not decision.retire:
        return decision
    marks = ",".join("?" * len(decision.retire))
    times = dict(
        fetch_all(
            conn, f"SELECT id, valid_from FROM memories WHERE id IN ({marks})", decision.retire
        )
    )
    newer = [m for m in decision.retire if float(times.get(m, 0.0)) > at]
    if not newer:
        return decision
    return dataclasses.replace(
        decision,
        retire=tuple(m for m in decision.retire if m not in newer),
        superseded_by=min(newer, key=lambda m: float(times[m])),
        reason=f"{decision.reason}; a newer value was learnt since",
    )


def identical(
    conn: apsw.Connection, cand: Candidate, scope: str, branch: str | None = None
) -> str | None:
    """The active memory of `scope` with the same normalised text (a NOOP), if any.
    Only `norm` may pick the index: with `status=` free to, SQLite walked
    memories_status_id over every active row (31 ms a write at 100,000 memories)."""
    row = fetch_one(
        conn,
        "SELECT id FROM memories WHERE norm=? AND +scope=? AND +status='active' "
        "AND +branch IS ? LIMIT 1",
        (normalize(cand.content), scope, branch),
    )
    return str(row[0]) if row else None


def _by_slot(
    conn: apsw.Connection, cand: Candidate, scope: str, branch: str | None
) -> Decision | None:
    rows = fetch_all(
        conn,
        "SELECT id, value, status FROM memories WHERE scope=? AND subject=? "
        "AND status IN ('active', 'superseded') AND +branch IS ? ORDER BY id",
        (scope, cand.subject, branch),
    )
    active = [(str(r[0]), str(r[1])) for r in rows if r[2] == "active"]
    if not active:
        return None
    for memory_id, value in active:
        if value == cand.value:
            return Decision("noop", target=memory_id, reason=f"same value for {cand.subject!r}")
    for memory_id, value in active:
        if (
            _refines(value, cand.value)
            and _comparable(cand.subject, value, cand.value)
            and not contradict.negation_differs(value, cand.value)
        ):
            return Decision("update", target=memory_id, reason=f"refines {cand.subject!r}")
    rivals = tuple(m for m, value in active if _comparable(cand.subject, value, cand.value))
    if not rivals:
        return None
    reasserted = tuple(str(r[0]) for r in rows if r[2] == "superseded" and r[1] == cand.value)
    return Decision(
        "supersede",
        retire=rivals,
        reasserts=reasserted,
        reason=f"new value for {cand.subject!r}",
    )


def _comparable(subject: str, old: str, new: str) -> bool:
    """Do two values answer the same question about `subject`?

    A multi-word subject names an attribute ("dev server port", "escalation contact"):
    any new value replaces the old. A one-word subject is often just an entity
    ("pixelforge is on React 17" / "pixelforge is bundled with webpack"): then only
    values of the same shape compete, both short, or sharing a content word at a
    similar length ("on react 17" / "on react 18").
    """
    if len(subject.split()) > 1:
        return True
    old_words, new_words = old.split(), new.split()
    if len(old_words) <= 2 and len(new_words) <= 2:
        return True
    shorter, longer = sorted((len(old_words), len(new_words)))
    # lengths first: tokenising every value of a big slot is what a slot check costs;
    # then "redis for the rate limiter" / "redis for session storage" share a word but
    # are two uses, where "on react 17" / "on react 18" change a value
    return (
        longer <= 2 * shorter + 2
        and bool(word_set(old) & word_set(new))
        and bool(contradict.contradicts(old, new))
    )


def _refines(old: str, new: str) -> bool:
    """New value keeps every word of the old one and adds some ('postgres' -> 'postgres 15')."""
    old_words, new_words = old.split(), new.split()
    return bool(old_words) and len(new_words) > len(old_words) and set(old_words) <= set(new_words)


def by_neighbours(
    conn: apsw.Connection,
    cand: Candidate,
    vector: Sequence[float] | None,
    scope: str,
    index: VectorIndex | None,
    branch: str | None = None,
) -> Decision:
    new_words = word_set(cand.content)
    neighbours = _neighbours(conn, cand, vector, scope, index, branch)
    # A changed number, name, version, date or negation first: such a neighbour is as
    # similar as an equivalent one, and a NOOP would drop the new value.
    changed = [(m, contradict.contradicts(c, cand.content)) for m, c, _ in neighbours]
    if any(why for _, why in changed):
        return Decision(
            "supersede",
            retire=tuple(m for m, why in changed if why),
            reason=next(why for _, why in changed if why),
        )
    for memory_id, content, sim in neighbours:
        old_words = word_set(content)
        lexical = jaccard(old_words, new_words)
        alike = sim >= NOOP_COSINE or lexical >= NOOP_JACCARD
        if alike and not contradict.values_differ(content, cand.content):
            return Decision("noop", target=memory_id, reason=f"equivalent (sim {sim:.2f})")
    retired = tuple(m for m, content, _ in neighbours if frames.replaces(content, cand.content))
    if retired:
        return Decision("supersede", retire=retired, reason="same statement, new value")
    for memory_id, content, sim in neighbours:
        old_words = word_set(content)
        lexical = jaccard(old_words, new_words)
        superset = old_words < new_words
        if superset and (sim >= UPDATE_COSINE or lexical >= UPDATE_JACCARD):
            return Decision("update", target=memory_id, reason=f"refinement (sim {sim:.2f})")
    return Decision("add", reason="new fact")


def _neighbours(
    conn: apsw.Connection,
    cand: Candidate,
    vector: Sequence[float] | None,
    scope: str,
    index: VectorIndex | None,
    branch: str | None = None,
) -> list[tuple[str, str, float]]:
    """Nearest active memories of the scope: by vector when we have one, else by BM25."""
    if vector is not None and index is not None:
        sims = {r: 1.0 - d for r, d in index.search(vector, NEIGHBOURS * 4, active_only=True)}
    elif vector is not None and table_exists(conn, "memory_vec"):
        found = fetch_all(
            conn,
            "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ? "
            "AND active = 1",
            (pack_vector(vector), NEIGHBOURS * 4),
        )
        sims = {int(r[0]): 1.0 - float(r[1]) for r in found}
    else:
        rowids = [
            r
            for r, _ in lexical_memories(
                conn, cand.content, Filters(visible=Visibility(branch)), NEIGHBOURS
            )
        ]
        vectors = load_vectors(conn, "memory_vec", rowids) if vector is not None else {}
        sims = {r: cosine(vector, vectors[r]) if r in vectors and vector else 0.0 for r in rowids}
    if not sims:
        return []
    placeholders = ",".join("?" * len(sims))
    rows = fetch_all(
        conn,
        f"SELECT rowid, id, content FROM memories WHERE rowid IN ({placeholders}) "
        "AND +scope=? AND +status='active' AND +branch IS ?",  # `+`: rowids drive
        [*sims, scope, branch],
    )
    found_rows = [(str(r[1]), str(r[2]), sims[int(r[0])]) for r in rows]
    return sorted(found_rows, key=lambda item: item[2], reverse=True)[:NEIGHBOURS]
