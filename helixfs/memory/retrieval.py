"""Hybrid retrieval: BM25 + vector KNN + graph expansion, fused, weighted, diversified.

Ranks from each retriever are fused by reciprocal rank (RRF, k=60) because BM25 scores
and cosine distances live on unrelated scales. The fused score is then weighted by how
fresh, salient and trustworthy a memory is, so a recent confirmed fact beats a stale
one and an injection-flagged one (confidence 0.1) never tops the list on relevance
alone. A hit that only the model proposed must be similar enough to the query
(SIMILARITY_FLOOR), so a query about nothing stored finds nothing. MMR last, so the k
results are not k phrasings of the same fact.
"""

from __future__ import annotations

import array
import functools
import math
import operator
import struct
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from helixfs import config
from helixfs.memory.db import pack_vector, table_exists, unpack_vector
from helixfs.memory.lexical import Filters, Scored, memory_filter_sql
from helixfs.memory.tokens import fts_query, jaccard, word_set

if TYPE_CHECKING:  # numpy loads with the first vector: a lexical ranking needs none
    import numpy as np
    import numpy.typing as npt

    from helixfs.memory.annindex import VectorIndex

RRF_K = 60
SALIENCE_HALF_LIFE_DAYS = 30.0
RECENCY_HALF_LIFE_DAYS = config.default("memory.half_life") / 86400  # memory.half_life
RECENCY_WEIGHT = 0.4  # share of the weight that recency can take away
SALIENCE_WEIGHT = 0.15  # relevance first: decay only tips close calls
DUPLICATE_SIMILARITY = 0.95
MMR_LAMBDA = 0.75
CHUNK_WEIGHT = 0.7
# Cosine similarity that a hit only the model proposed must reach (a lexical hit needs
# none): the model ranks every text against every query, so a query about nothing stored
# got k hits. On benchmarks/eval 95% of the relevant memories in the model's top 50 are
# above 0.20 (p5 0.197, p10 0.242, median 0.415); nonsense queries reach 0.13-0.29.
# recall@10 at 0.20: hybrid 0.756 (as without), vector 0.702 (0.661). Floors of 0.25-0.28
# measured a little better still, but sit inside the relevant range above.
SIMILARITY_FLOOR = 0.2
HOP_DECAY = 0.5
CONTENTLESS_PENALTY = 0.5  # see substance()
SUBSTANTIAL_WORDS = 14  # a statement this long always passes the gate (but a question)
STATUS_WEIGHT = {"active": 1.0, "archived": 0.5, "superseded": 0.3, "forgotten": 0.2}
DAY = 86400.0


@dataclass
class Candidate:
    """A memory or chunk on its way to becoming a Hit; key is 'm:ROWID' or 'c:ROWID'."""

    key: str
    score: float = 0.0
    row: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | None = None


@dataclass(frozen=True)
class Indexes:
    """In-RAM vector indexes of a long-lived process (None: ask sqlite-vec)."""

    memories: VectorIndex | None = None
    chunks: VectorIndex | None = None


NO_INDEXES = Indexes()


def effective_salience(salience: float, last_seen: float, now: float) -> float:
    idle_days = max(0.0, now - last_seen) / DAY
    return float(salience * 0.5 ** (idle_days / SALIENCE_HALF_LIFE_DAYS))


def vector_memories(
    conn: apsw.Connection,
    qvec: Sequence[float],
    filters: Filters,
    limit: int,
    index: VectorIndex | None = None,
) -> Scored:
    active_only = filters.statuses == ("active",)
    overfetch = min(4096, limit * (2 if filters.scope is None and not filters.types else 4))
    if index is not None:
        found = index.search(qvec, overfetch, active_only=active_only)
    elif table_exists(conn, "memory_vec"):
        sql = "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ?"
        if active_only:
            sql += " AND active = 1"
        found = [
            (int(r[0]), float(r[1])) for r in conn.execute(sql, (pack_vector(qvec), overfetch))
        ]
    else:
        return []
    if not found:
        return []
    rowids = [r for r, _ in found]
    where, params = memory_filter_sql(filters)
    placeholders = ",".join("?" * len(rowids))
    allowed = {
        int(r[0])
        for r in conn.execute(
            f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({placeholders}) AND {where}",
            [*rowids, *params],
        )
    }
    return [item for item in found if item[0] in allowed][:limit]


def lexical_chunks(conn: apsw.Connection, query: str, limit: int) -> Scored:
    match = fts_query(query)
    if not match:
        return []
    sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (match, limit))]


def vector_chunks(
    conn: apsw.Connection, qvec: Sequence[float], limit: int, index: VectorIndex | None = None
) -> Scored:
    if index is not None:
        return index.search(qvec, limit, active_only=False)
    if not table_exists(conn, "chunk_vec"):
        return []
    sql = "SELECT rowid, distance FROM chunk_vec WHERE embedding MATCH ? AND k = ?"
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (pack_vector(qvec), limit))]


def close_enough(
    candidates: list[Candidate], qvec: Sequence[float], lexical: set[str]
) -> list[Candidate]:
    """The candidates that are relevant to the query by more than the model's say-so.

    A candidate the lexical retriever found is always kept. Any other (a vector hit, a
    graph neighbour) must be at least SIMILARITY_FLOOR cosine-similar to the query: the
    model ranks every text against every query, so without a floor a query about
    nothing stored still got k hits. One without a vector cannot be judged: kept.
    """
    import numpy as np

    query = np.asarray(qvec, dtype=np.float32)
    query /= float(np.linalg.norm(query)) or 1.0
    return [
        cand
        for cand in candidates
        if cand.key in lexical
        or cand.vector is None
        or float(np.dot(np.asarray(cand.vector, dtype=np.float32), query)) >= SIMILARITY_FLOOR
    ]


def merged(memories: Scored, chunks: Scored, limit: int) -> list[str]:
    """One ranked list of keys from a memory list and a chunk list of the same retriever.

    Merging by raw score before RRF (BM25 with BM25, distance with distance) lets a
    passage that matches better outrank a memory that matches worse; fusing them as two
    separate lists would put both rank-1 items on equal footing.
    """
    keyed = [(score, f"m:{r}") for r, score in memories] + [(s, f"c:{r}") for r, s in chunks]
    keyed.sort(key=lambda item: item[0])
    return [key for _, key in keyed[:limit]]


def fuse(ranked_lists: Iterable[list[str]]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for ranked in ranked_lists:
        for rank, key in enumerate(ranked):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
    return scores


def expand_graph(
    conn: apsw.Connection, scores: dict[str, float], hops: int, seeds: int = 10
) -> dict[str, float]:
    """Add neighbours of the best memories (1..hops away) at a decayed score.

    `supersedes` edges are not followed: they lead to retired values, which must not
    come back through the side door.
    """
    frontier = sorted(
        (k for k in scores if k.startswith("m:")), key=lambda k: scores[k], reverse=True
    )[:seeds]
    result = dict(scores)
    for hop in range(1, hops + 1):
        if not frontier:
            break
        ids = _ids_of(conn, [int(k[2:]) for k in frontier])
        next_frontier: list[str] = []
        for key in frontier:
            memory_id = ids.get(int(key[2:]))
            if memory_id is None:
                continue
            for neighbour_rowid in _neighbours(conn, memory_id):
                nkey = f"m:{neighbour_rowid}"
                gained = scores.get(key, result[key]) * HOP_DECAY**hop
                if gained > result.get(nkey, 0.0):
                    result[nkey] = max(result.get(nkey, 0.0), gained)
                    next_frontier.append(nkey)
        frontier = next_frontier
    return result


def _ids_of(conn: apsw.Connection, rowids: list[int]) -> dict[int, str]:
    placeholders = ",".join("?" * len(rowids))
    sql = f"SELECT rowid, id FROM memories WHERE rowid IN ({placeholders})"
    return {int(r[0]): str(r[1]) for r in conn.execute(sql, rowids)}


def _neighbours(conn: apsw.Connection, memory_id: str) -> list[int]:
    sql = (
        "SELECT m.rowid FROM edges e JOIN memories m ON m.id = "
        "CASE WHEN e.src = ? THEN e.dst ELSE e.src END "
        "WHERE (e.src = ? OR e.dst = ?) AND e.rel NOT IN ('supersedes', 'shadows')"
    )
    return [int(r[0]) for r in conn.execute(sql, (memory_id, memory_id, memory_id))]


def memory_weight(
    row: dict[str, Any], now: float, half_life_days: float = RECENCY_HALF_LIFE_DAYS
) -> float:
    """How much a memory's relevance counts: recency, salience, confidence, status.
    Salience decays from the last write of the memory (`updated`), not from its last
    recall (`last_seen`): a recall must not reorder other queries' results."""
    return weight_of(
        row["updated"], row["salience"], row["confidence"], row["status"], now, half_life_days
    )


def weight_of(
    updated: float,
    salience: float,
    confidence: float,
    status: str,
    now: float,
    half_life_days: float = RECENCY_HALF_LIFE_DAYS,
) -> float:
    """memory_weight from the four columns it reads (a scan of thousands reads no more)."""
    age_days = max(0.0, now - updated) / DAY
    recency = 0.5 ** (age_days / half_life_days)
    salient = effective_salience(salience, updated, now)
    return float(
        (1.0 - RECENCY_WEIGHT + RECENCY_WEIGHT * recency)
        * (1.0 - SALIENCE_WEIGHT + SALIENCE_WEIGHT * salient)
        * (0.2 + 0.8 * confidence)
        * STATUS_WEIGHT.get(status, 0.2)
    )


@functools.lru_cache(maxsize=1 << 14)
def substance(content: str) -> float:
    """1.0 for a memory that states something, down to 1 - CONTENTLESS_PENALTY for one the
    ingest gate would have dropped ("Caroline: Okay, gotta run!", "Sounds good!"). Such a
    memory matches any query that names its speaker, and a chat confirms it again and
    again; stored on purpose it stays findable, below what answers."""
    if content.count(" ") >= SUBSTANTIAL_WORDS and not content.rstrip().endswith("?"):
        return 1.0  # what the gate drops is short: skip its regexes (~0.1 ms a text)
    if any(c.isdigit() for c in content):
        return 1.0  # "quarry runs dbt 1.8": a short fact with a value is no small talk
    from helixfs.memory.extract import GATE_THRESHOLD, gate_score  # its regexes: ~10 ms

    score = gate_score(content)
    return 1.0 - CONTENTLESS_PENALTY * max(0.0, 1.0 - score / GATE_THRESHOLD)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def load_vectors(conn: apsw.Connection, table: str, rowids: list[int]) -> dict[int, list[float]]:
    if not rowids or not table_exists(conn, table):
        return {}
    placeholders = ",".join("?" * len(rowids))
    sql = f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({placeholders})"
    return {int(r[0]): unpack_vector(r[1]) for r in conn.execute(sql, rowids)}


def similarity_matrix(pool: list[Candidate]) -> npt.NDArray[np.float32]:
    """Pairwise similarity: the dot product where both have vectors (of the pool's
    first dimension), word Jaccard otherwise; float32, as similarity_row gives it."""
    import numpy as np

    n = len(pool)
    vectors = _pool_vectors(pool)
    dim = next((len(v) for v in vectors if v is not None), 0)
    matrix = np.zeros((n, max(dim, 1)), dtype=np.float64)
    for i, vector in enumerate(vectors):
        if vector is not None:
            matrix[i] = vector
    # float64 products of the float32 values, summed, then rounded to float32: what
    # similarity_row computes without numpy (einsum, not BLAS: a 40x40 product is
    # faster without waking BLAS threads)
    sims: npt.NDArray[np.float32] = np.einsum("id,jd->ij", matrix, matrix).astype(np.float32)
    lacking = [i for i, vector in enumerate(vectors) if vector is None]
    if lacking:
        words = [word_set(c.row["content"]) for c in pool]
        for row in lacking:
            for col in range(n):
                sims[row, col] = sims[col, row] = jaccard(words[row], words[col])
    return sims


def _pool_vectors(pool: list[Candidate]) -> list[Sequence[float] | None]:
    """Each candidate's vector, None where it has none or one of another dimension."""
    dim = next((len(c.vector) for c in pool if c.vector is not None), 0)
    return [c.vector if c.vector is not None and len(c.vector) == dim else None for c in pool]


def similarity_row(
    best: int,
    columns: Iterable[int],
    vectors: list[Sequence[float] | None],
    words: list[frozenset[str]] | None,
) -> list[float]:
    """Row `best` of similarity_matrix at `columns`, in Python: each dot product summed exactly
    (math.fsum of float64 products of float32 values, themselves exact) and rounded to
    float32 as numpy's float64 sum is. The two agree but where a sum lies within ~1e-15
    of halfway between two float32 values; MMR would choose apart only if two
    candidates' marginal values were that close too."""
    mine = vectors[best]
    sims = []
    for i in columns:
        other = vectors[i]
        if mine is None or other is None:
            assert words is not None  # made when a vector is lacking
            sims.append(jaccard(words[best], words[i]))
        else:
            sims.append(math.fsum(map(operator.mul, mine, other)))
    return array.array("f", sims).tolist()


def source_of(cand: Candidate) -> str:
    """Where a candidate's text lives: a file's path, or the memory store (all memories
    state facts of one store: two memories alike are two phrasings of one fact)."""
    return f"file:{cand.row['path']}" if cand.key.startswith("c:") else "memories"


def mmr(candidates: list[Candidate], k: int) -> list[Candidate]:
    """Maximal marginal relevance; near-duplicates (sim >= 0.95) of a chosen candidate
    from the same source are dropped outright. Alike passages of different files are
    kept (MMR only ranks them lower): the agent needs every path that holds the text.
    Through numpy's matrix where numpy is loaded (the engine's process), else row by
    row in Python (a hook's reader: numpy's import is ~65 ms of its 150): the same
    similarities, so the same choices."""
    pool = sorted(candidates, key=lambda c: c.score, reverse=True)
    if not pool:
        return []
    if "numpy" in sys.modules and any(c.vector is not None for c in pool):
        return _mmr_by_matrix(pool, k)
    return _mmr_by_rows(pool, k)


def _mmr_by_matrix(pool: list[Candidate], k: int) -> list[Candidate]:
    import numpy as np

    sims = similarity_matrix(pool)
    scores = np.array([c.score for c in pool], dtype=np.float64) / (pool[0].score or 1.0)
    sources = np.array([source_of(c) for c in pool])
    closest = np.zeros(len(pool), dtype=np.float64)  # max similarity to anything chosen
    open_ = np.ones(len(pool), dtype=bool)
    chosen: list[int] = []
    while len(chosen) < k:
        value = MMR_LAMBDA * scores - (1 - MMR_LAMBDA) * closest
        value[~open_] = -np.inf
        best = int(np.argmax(value))
        if value[best] == -np.inf:
            break
        chosen.append(best)
        open_[best] = False
        open_[(sims[best] >= DUPLICATE_SIMILARITY) & (sources == sources[best])] = False
        closest = np.maximum(closest, sims[best])
    return [pool[i] for i in chosen]


_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """`x` rounded to float32, as similarity_matrix stores it."""
    return float(_F32.unpack(_F32.pack(x))[0])


def _mmr_by_rows(pool: list[Candidate], k: int) -> list[Candidate]:
    """_mmr_by_matrix without numpy: the same choices, step for step. Only the chosen
    rows of the similarity matrix are computed (k rows, not the pool's square), float32
    (similarity_row), compared with the threshold as float32 (as numpy compares a
    float32 array with a Python float); the scores are float64 in both."""
    vectors = _pool_vectors(pool)
    lacking = any(vector is None for vector in vectors)
    words = [word_set(c.row["content"]) for c in pool] if lacking else None
    duplicate = _f32(DUPLICATE_SIMILARITY)
    top = pool[0].score or 1.0
    scores = [c.score / top for c in pool]
    sources = [source_of(c) for c in pool]
    closest = [0.0] * len(pool)
    open_ = [True] * len(pool)
    chosen: list[int] = []
    while len(chosen) < k:
        values = [
            MMR_LAMBDA * s - (1 - MMR_LAMBDA) * c if o else -math.inf
            for s, c, o in zip(scores, closest, open_, strict=True)
        ]
        best = max(range(len(values)), key=values.__getitem__)  # the first best, as argmax
        if values[best] == -math.inf:
            break
        chosen.append(best)
        open_[best] = False
        # the open candidates' similarities only: no other can be chosen any more
        others = [i for i, still in enumerate(open_) if still]
        for i, sim in zip(others, similarity_row(best, others, vectors, words), strict=True):
            if sim >= duplicate and sources[i] == sources[best]:
                open_[i] = False
            closest[i] = max(closest[i], sim)
    return [pool[i] for i in chosen]
