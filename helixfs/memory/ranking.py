"""From retriever outputs to ordered Hits, and from Hits to a token-budgeted block."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from helixfs.memory import records, retrieval
from helixfs.memory.lexical import Filters, lexical_memories, memory_rows
from helixfs.memory.retrieval import Candidate, Indexes
from helixfs.memory.tokens import estimate_tokens
from helixfs.memory.tree import TRUNK, Visibility, visible_sql
from helixfs.memory.types import ContextBlock, Hit

if TYPE_CHECKING:
    from helixfs.memory.when import Period

POOL_MIN = 50
DATE_BOOST = 1.0  # a memory of the period the query names (when.py) counts this much more


def lexical(
    conn: apsw.Connection, query: str, k: int, filters: Filters, chunks: bool, mode: str
) -> list[str]:
    """The BM25 retriever's ranked keys for `rank` (none in vector mode). Apart, because
    it needs no query vector: the engine runs it while the query is being embedded."""
    if mode == "vector":
        return []
    pool = _pool(k)
    lexical_chunks = retrieval.lexical_chunks(conn, query, pool) if chunks else []
    memories = lexical_memories(conn, query, filters, pool)
    return retrieval.merged(memories, lexical_chunks, pool)


def rank(
    conn: apsw.Connection,
    lexical_keys: list[str],
    qvec: Sequence[float] | None,
    k: int,
    filters: Filters,
    chunks: bool,
    now: float,
    indexes: Indexes = retrieval.NO_INDEXES,
    mode: str = "hybrid",
    period: Period | None = None,
    half_life_days: float = retrieval.RECENCY_HALF_LIFE_DAYS,
) -> list[Hit]:
    """Fused, weighted, diversified hits from `lexical(...)`'s keys and the vector
    retriever. `mode` lexical/vector drops the other retriever (for evaluation: hybrid
    must beat both). `period`: the time the query names (when.period_of); memories
    whose event time is in it are boosted. `half_life_days`: `memory.half_life`."""
    pool = _pool(k)
    lists = [lexical_keys] if mode != "vector" else []
    if qvec is not None and mode != "lexical":
        vector_chunks = retrieval.vector_chunks(conn, qvec, pool, indexes.chunks) if chunks else []
        vector = retrieval.vector_memories(conn, qvec, filters, pool, indexes.memories)
        lists.append(retrieval.merged(vector, vector_chunks, pool))
    fused = retrieval.expand_graph(conn, retrieval.fuse(lists), hops=2)
    candidates = _weighted(conn, fused, filters, now, period, half_life_days)
    candidates.sort(key=lambda c: c.score, reverse=True)
    shortlist = _with_substance(candidates[: 4 * k])
    _attach_vectors(conn, shortlist, indexes)
    if qvec is not None and mode != "lexical":
        shortlist = retrieval.close_enough(shortlist, qvec, set(lexical_keys))
    return [_to_hit(c) for c in retrieval.mmr(shortlist, k)]


def _with_substance(shortlist: list[Candidate]) -> list[Candidate]:
    """The shortlist re-ordered after what the ingest gate would drop is weighed down
    (retrieval.substance): on the shortlist only, its regexes cost ~0.1 ms a text."""
    for cand in shortlist:
        if cand.key.startswith("m:"):
            cand.score *= retrieval.substance(cand.row["content"])
    return sorted(shortlist, key=lambda c: c.score, reverse=True)


def _pool(k: int) -> int:
    """Candidates each retriever contributes to the fusion."""
    return max(POOL_MIN, 5 * k)


def _weighted(
    conn: apsw.Connection,
    fused: dict[str, float],
    filters: Filters,
    now: float,
    period: Period | None = None,
    half_life_days: float = retrieval.RECENCY_HALF_LIFE_DAYS,
) -> list[Candidate]:
    # Here, not at the top: a hook that ranks no query (a SessionStart, a PreToolUse)
    # imports neither (their regexes, datetime: ~5 ms of its start).
    from helixfs.memory.when import within

    memory_rowids = [int(k[2:]) for k in fused if k.startswith("m:")]
    chunk_rowids = [int(k[2:]) for k in fused if k.startswith("c:")]
    out: list[Candidate] = []
    for rowid, row in memory_rows(conn, memory_rowids, filters).items():
        key = f"m:{rowid}"
        weight = retrieval.memory_weight(row, now, half_life_days)
        if within(period, row["source_time"]):
            weight *= 1.0 + DATE_BOOST
        out.append(Candidate(key, fused[key] * weight, row))
    for rowid, row in _chunk_rows(conn, chunk_rowids).items():
        key = f"c:{rowid}"
        out.append(Candidate(key, fused[key] * retrieval.CHUNK_WEIGHT, row))
    return out


def _chunk_rows(conn: apsw.Connection, rowids: list[int]) -> dict[int, dict[str, Any]]:
    if not rowids:
        return {}
    placeholders = ",".join("?" * len(rowids))
    sql = (
        "SELECT rowid, path, start_line, end_line, text, hash, commit_id FROM chunks "
        f"WHERE rowid IN ({placeholders})"
    )
    from helixfs.memory import workspace

    commit = workspace.passage_commits(conn)
    return {
        int(r[0]): {
            "path": r[1],
            "start_line": r[2],
            "end_line": r[3],
            "content": r[4],
            "hash": r[5],
            "commit_id": commit(r[6]),
        }
        for r in conn.execute(sql, rowids)
    }


def _attach_vectors(conn: apsw.Connection, candidates: list[Candidate], indexes: Indexes) -> None:
    """Vectors for MMR: from the in-RAM index when there is one, else from sqlite-vec."""
    wanted = {"m:": [], "c:": []}  # type: dict[str, list[int]]
    for cand in candidates:
        wanted[cand.key[:2]].append(int(cand.key[2:]))
    found = {}
    for prefix, table, index in (
        ("m:", "memory_vec", indexes.memories),
        ("c:", "chunk_vec", indexes.chunks),
    ):
        rowids = wanted[prefix]
        vectors = index.vectors(rowids) if index else retrieval.load_vectors(conn, table, rowids)
        found.update({f"{prefix}{r}": v for r, v in vectors.items()})
    for cand in candidates:
        cand.vector = found.get(cand.key)


def _to_hit(cand: Candidate) -> Hit:
    row = cand.row
    if cand.key.startswith("c:"):
        return Hit(
            id=f"{row['path']}:{row['start_line']}-{row['end_line']}",
            kind="chunk",
            content=row["content"],
            score=cand.score,
            path=row["path"],
            start_line=row["start_line"],
            end_line=row["end_line"],
            commit_id=row["commit_id"],
        )
    return memory_hit(row, cand.score)


def memory_hit(row: dict[str, Any], score: float) -> Hit:
    return Hit(
        id=row["id"],
        kind="memory",
        content=row["content"],
        score=score,
        type=row["type"],
        status=row["status"],
        scope=row["scope"],
        tags=tuple(json.loads(row["tags"])),
        confidence=row["confidence"],
        created=row["created"],
        source_file=row.get("source_file"),
        branch=row.get("branch"),
    )


def top_memories(
    conn: apsw.Connection,
    scope: str | None,
    limit: int,
    now: float,
    visible: Visibility = TRUNK,
    half_life_days: float = retrieval.RECENCY_HALF_LIFE_DAYS,
) -> list[Hit]:
    """Without a query: active memories ordered by weight (salience, recency, confidence),
    among the TOP_SCAN seen last. SQLite weighs them (TOP_WEIGHT_SQL: weight_of's
    arithmetic, the same doubles, pow() being the C library's in both): 5,000 rows a
    Python loop weighed in ~10 ms of a briefing's ~20. Ties keep the scan's order (last
    seen first, then the newest row); the full rows of the `limit` best are read after."""
    where, params = visible_sql(visible, alias="")
    scanned = "SELECT rowid, last_seen, updated, salience, confidence FROM memories "
    scanned += f"WHERE status='active' AND {where}"
    if scope is not None:
        scanned += " AND scope IN ('global', ?)"
        params.append(scope)
    scanned += " ORDER BY last_seen DESC, rowid DESC LIMIT ?"
    sql = (
        f"SELECT rowid, {TOP_WEIGHT_SQL} AS w FROM ({scanned}) "
        "ORDER BY w DESC, last_seen DESC, rowid DESC LIMIT ?"
    )
    constants = {
        "now": now,
        "day": retrieval.DAY,
        "half_life": half_life_days,
        "salience_half_life": retrieval.SALIENCE_HALF_LIFE_DAYS,
        "recency_weight": retrieval.RECENCY_WEIGHT,
        "salience_weight": retrieval.SALIENCE_WEIGHT,
        "status_weight": retrieval.STATUS_WEIGHT["active"],
    }
    args = [*(constants[name] for name in TOP_WEIGHT_ARGS), *params, TOP_SCAN, limit]
    best = [(float(w), int(rowid)) for rowid, w in conn.execute(sql, args)]
    rows = _rows_by_rowid(conn, [rowid for _, rowid in best])
    return [memory_hit(rows[rowid], weight) for weight, rowid in best]


TOP_SCAN = 5000  # the memories seen last that a briefing weighs
# retrieval.weight_of, operation for operation (left to right, as Python evaluates it),
# for status 'active'; the `?` are TOP_WEIGHT_ARGS in order. A test checks it gives
# weight_of's very doubles.
_AGE = "(max(0.0, ? - updated) / ?)"
TOP_WEIGHT_SQL = (
    "((1.0 - ? + ? * pow(0.5, " + _AGE + " / ?))"
    " * (1.0 - ? + ? * (salience * pow(0.5, " + _AGE + " / ?)))"
    " * (0.2 + 0.8 * confidence) * ?)"
)
TOP_WEIGHT_ARGS = (
    "recency_weight",
    "recency_weight",
    "now",
    "day",
    "half_life",
    "salience_weight",
    "salience_weight",
    "now",
    "day",
    "salience_half_life",
    "status_weight",
)


def _rows_by_rowid(conn: apsw.Connection, rowids: list[int]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for start in range(0, len(rowids), 500):
        part = rowids[start : start + 500]
        marks = ",".join("?" * len(part))
        sql = f"SELECT rowid, {records.COLUMNS} FROM memories WHERE rowid IN ({marks})"
        for row in conn.execute(sql, part):
            found[int(row[0])] = records.row_dict(row[1:])
    return found


class KeptTop:
    """top_memories' answer kept by a long-lived memory (the daemon's), until the
    database changes (`stamp`: this connection's changes and SQLite's data_version,
    which moves when another connection commits) or KEPT_SECONDS of its clock pass
    (the weights' recency moves that slowly). A SessionStart then costs no scan."""

    KEPT_SECONDS = 60.0

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], tuple[tuple[int, int], float, list[Hit]]] = {}

    def get(
        self,
        conn: apsw.Connection,
        scope: str | None,
        limit: int,
        now: float,
        visible: Visibility,
        half_life_days: float,
    ) -> list[Hit]:
        key = (scope, limit, visible, half_life_days)
        version = conn.execute("PRAGMA data_version").fetchone()
        stamp = (conn.total_changes(), int(version[0]) if version else 0)
        found = self._kept.get(key)
        if found is None or found[0] != stamp or not 0 <= now - found[1] <= self.KEPT_SECONDS:
            hits = top_memories(conn, scope, limit, now, visible, half_life_days)
            if len(self._kept) > 64:
                self._kept.clear()
            found = self._kept[key] = (stamp, now, hits)
        return list(found[2])


def render(hit: Hit) -> str:
    if hit.kind == "chunk":
        return f"- {hit.path}:{hit.start_line}-{hit.end_line}\n```\n{hit.content}\n```\n"
    return f"- [{hit.type}]{stale_mark(hit)} {hit.content} ({hit.id})\n"


def stale_mark(hit: Hit) -> str:
    """` (stale: FILE changed in COMMIT)` for a memory whose file moved on, else ''."""
    stale = hit.stale
    if stale is None:
        return ""
    where = f"{stale.moved_from} -> {stale.path}" if stale.how == "renamed" else stale.path
    commit = f" in {stale.commit[:12]}" if stale.commit else ""
    return f" (stale: {where} {stale.how}{commit})"


HEADER = "# Memory context\n"


def pack(hits: Sequence[Hit], budget: int) -> ContextBlock:
    """Greedy: best first, skip what does not fit, keep trying smaller ones; never over."""
    used = estimate_tokens(HEADER)
    if used > budget:
        return ContextBlock("", 0, budget, ())
    parts, chosen = [HEADER], []
    for hit in hits:
        cost = estimate_tokens(render(hit))
        if used + cost <= budget:
            parts.append(render(hit))
            chosen.append(hit)
            used += cost
    if not chosen:  # a header over nothing would read as a context that is there
        return ContextBlock("", 0, budget, ())
    text = "".join(parts)
    return ContextBlock(text, estimate_tokens(text), budget, tuple(chosen))
