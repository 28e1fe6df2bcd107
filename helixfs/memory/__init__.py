"""HelixFS long-term memory: durable facts and workspace knowledge, searched hybrid.

Public API (everything a surface needs)::

    mem = Memory.open(STORE / "memory.db", embedder)   # embedder: Embedder | None
    mem.remember(text, type=, tags=, scope=, source=)   -> WriteResult (explicit write)
    mem.ingest(text, scope=, source=)                   -> list[WriteResult] (gated)
    mem.import_memories([MemoryImport], vectors=)       -> list[id] (bulk, one transaction)
    mem.recall(query, k=, types=, scope=)               -> list[Hit] (memories)
    mem.search(query, k=, scope=)                       -> list[Hit] (memories + chunks)
    mem.context(budget_tokens, query=, scope=)          -> ContextBlock (never over budget)
    mem.get(id) / memories(type=, scope=, status=, tag=, limit=) -> MemoryRecord(s)
    mem.forget(id_or_query) / purge(id) / history(id) / rollback(id, to_seq=)
    mem.relate(a, b, rel) / edges(id)
    mem.checkpoint(task, done=, next=, hypotheses=, blocked=, files=, scope=) / resume()
    mem.brief(topic=None, budget_tokens=) / archive_candidates() / archive(ids)
    mem.index_workspace({path: bytes}, commit_id, removed=None) -> IndexReport
    mem.stats() / close()
    with reported_errors(): ...   # SQLite failures as HelixErrors (for surfaces)

The engine lives in engine.py; the schema in db.py; the pipeline stages in redact.py,
extract.py and consolidate.py; retrieval in retrieval.py and ranking.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helixfs.lazy import names_from
from helixfs.memory.types import (
    MEMORY_TYPES,
    OUTCOMES,
    STATUSES,
    Checkpoint,
    ContextBlock,
    Embedder,
    Hit,
    MemoryRecord,
    Source,
)

if TYPE_CHECKING:
    from helixfs.memory.db import reported_errors
    from helixfs.memory.engine import Memory
    from helixfs.memory.kept import KeptOpen
    from helixfs.memory.outcomes import (
        ArchiveCandidate,
        Edge,
        HistoryEntry,
        IndexReport,
        MemoryImport,
        WriteResult,
    )

# Loaded on first use (PEP 562): the engine brings numpy and SQLite (~150 ms), and the
# CLI imports this package only for the names of memory types to parse a command line
# that it may hand, whole, to a mount's daemon.
__getattr__ = names_from(
    __name__,
    {
        "KeptOpen": "helixfs.memory.kept",
        "Memory": "helixfs.memory.engine",
        "reported_errors": "helixfs.memory.db",
        # the engine's write and upkeep values: a hook never builds them (~5 ms)
        **dict.fromkeys(OUTCOMES, "helixfs.memory.outcomes"),
    },
)


__all__ = [
    "MEMORY_TYPES",
    "STATUSES",
    "ArchiveCandidate",
    "Checkpoint",
    "ContextBlock",
    "Edge",
    "Embedder",
    "HistoryEntry",
    "Hit",
    "IndexReport",
    "KeptOpen",
    "Memory",
    "MemoryImport",
    "MemoryRecord",
    "Source",
    "WriteResult",
    "reported_errors",
]
