"""The values only the engine's writes and upkeep hand out (imports, write results,
history, edges, archive candidates, workspace index reports). They live apart from
types.py so that a hook, which reads memories and saves a checkpoint, does not build
their dataclasses at every start (~5 ms); types.py still names them (PEP 562)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from helixfs.memory.types import MemoryRecord, Source, WriteAction


@dataclass(frozen=True)
class MemoryImport:
    """One memory for `Memory.import_memories`: as `remember` takes it, plus when it was
    written (`at`, unix seconds; None: now)."""

    content: str
    type: str | None = None
    tags: tuple[str, ...] = ()
    scope: str = "global"
    source: Source | None = None
    confidence: float = 1.0
    salience: float = 0.5
    at: float | None = None


@dataclass(frozen=True)
class WriteResult:
    """What the pipeline did with one candidate fact.

    `superseded` lists the memories this write retired (SUPERSEDE); `noop_of` names the
    existing memory an equivalent fact was folded into.
    """

    action: WriteAction
    id: str | None
    memory: MemoryRecord | None = None
    superseded: tuple[str, ...] = ()
    redactions: int = 0
    flagged: bool = False
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "id": self.id,
            "superseded": list(self.superseded),
            "redactions": self.redactions,
            "flagged": self.flagged,
            "reason": self.reason,
            "memory": self.memory.to_json() if self.memory else None,
        }


@dataclass(frozen=True)
class HistoryEntry:
    seq: int
    memory_id: str | None
    op: str
    at: float
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    rel: str
    created: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ArchiveCandidate:
    memory: MemoryRecord
    effective_salience: float
    idle_days: float


@dataclass(frozen=True)
class IndexReport:
    """What index_workspace did; `embedded` counts texts actually sent to the embedder."""

    commit_id: str
    files_seen: int
    files_indexed: int
    files_removed: int
    chunks_added: int
    chunks_removed: int
    embedded: int
    cache_hits: int
