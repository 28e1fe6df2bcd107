"""Values the memory engine hands out, and the Embedder protocol it is built against.

Everything here is a frozen dataclass: callers (CLI, `.helix/` files) may cache,
serialise or compare them without fearing that the engine changes them underneath.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from helixfs.lazy import names_from

if TYPE_CHECKING:
    from helixfs.memory.outcomes import ArchiveCandidate as ArchiveCandidate
    from helixfs.memory.outcomes import Edge as Edge
    from helixfs.memory.outcomes import HistoryEntry as HistoryEntry
    from helixfs.memory.outcomes import IndexReport as IndexReport
    from helixfs.memory.outcomes import MemoryImport as MemoryImport
    from helixfs.memory.outcomes import WriteResult as WriteResult

MemoryType = Literal[
    "identity",
    "preference",
    "project",
    "decision",
    "entity",
    "snippet",
    "fact",
    "gotcha",
    "howto",
    "convention",
]
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
Status = Literal["active", "superseded", "archived", "forgotten"]
STATUSES: tuple[str, ...] = get_args(Status)

SearchMode = Literal["hybrid", "lexical", "vector"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
HitKind = Literal["memory", "chunk"]
WriteAction = Literal["add", "update", "supersede", "noop", "dropped"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors. Implemented in helixfs.memory.embed.

    `name` is the provider (e.g. "fastembed"), `model` the exact model id and `dim` the
    vector size: all three are pinned in the database, and a change triggers a re-embed.
    `embed` may return a list of lists or a 2-D numpy array; vectors need not be
    normalised (the engine normalises them).
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Any: ...


@dataclass(frozen=True)
class Source:
    """Where a memory came from: who said it, about which file and line, and when."""

    agent: str | None = None
    file: str | None = None
    line: int | None = None
    when: float | None = None
    blob: str | None = None  # the file's blob id when written or confirmed (ADR 0063)
    moved_from: str | None = None  # its path before a rename that the memory followed


@dataclass(frozen=True)
class Staleness:
    """Why a memory about a file may no longer hold: `how` is changed, deleted or
    renamed; `commit` the commit that did it; `path` where the file is now (renamed),
    `moved_from` where it was."""

    how: str
    commit: str | None = None
    path: str | None = None
    moved_from: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class MemoryRecord:
    id: str
    type: str
    content: str
    scope: str
    tags: tuple[str, ...]
    source: Source
    confidence: float
    salience: float
    valid_from: float
    valid_to: float | None
    created: float
    updated: float
    last_seen: float
    status: Status
    branch: str | None = None  # None: unscoped (the trunk's, or written outside a branch)
    stale: Staleness | None = None  # set by a read given a tree view (memory/tree.py)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        data["stale"] = self.stale.to_json() if self.stale else None
        return data

    def portable(self) -> dict[str, Any]:
        """What it says and where it came from, as `remember` takes it again in another
        store (a .dna strand, a shared-memory batch): not the ids, times and status of
        the store it leaves."""
        source = self.source
        return {
            "content": self.content,
            "type": self.type,
            "tags": list(self.tags),
            "scope": self.scope,
            "source": {
                "agent": source.agent,
                "file": source.file,
                "line": source.line,
                "when": source.when,
            },
            "confidence": self.confidence,
            "salience": self.salience,
        }


@dataclass(frozen=True)
class Hit:
    """One search result: a memory, or a passage (chunk) of a workspace file."""

    id: str
    kind: HitKind
    content: str
    score: float
    type: str | None = None
    status: str | None = None
    scope: str | None = None
    tags: tuple[str, ...] = ()
    confidence: float | None = None
    created: float | None = None
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    commit_id: str | None = None
    source_file: str | None = None  # a memory's file, if it is about one
    branch: str | None = None  # a memory's branch (None: unscoped)
    stale: Staleness | None = None  # a memory about a file that changed since

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if v is not None}
        data["tags"] = list(self.tags)
        if self.stale is not None:
            data["stale"] = self.stale.to_json()
        return data


@dataclass(frozen=True)
class Checkpoint:
    id: str
    scope: str
    created: float
    task: str
    done: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    hypotheses: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ContextBlock:
    """A packed block of memories; `tokens` is the estimate (see tokens.estimate_tokens)."""

    text: str
    tokens: int
    budget: int
    hits: tuple[Hit, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "hits": [h.to_json() for h in self.hits],
        }


OUTCOMES = (
    "MemoryImport",
    "WriteResult",
    "HistoryEntry",
    "Edge",
    "ArchiveCandidate",
    "IndexReport",
)
"""The engine's write and upkeep values, in outcomes.py, loaded on first use."""

__getattr__ = names_from(__name__, dict.fromkeys(OUTCOMES, "helixfs.memory.outcomes"))
