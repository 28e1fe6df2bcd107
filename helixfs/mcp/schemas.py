"""The output schema of each MCP tool: the JSON document its command prints (ADR 0063).

A tool returns `Annotated[CallToolResult, Model]`: the SDK publishes Model's JSON schema
as the tool's `outputSchema` and checks the structured content against it before the
result leaves. Each model names the fields a client can rely on; `extra="allow"` keeps
a newer field from being a failure. Every document may carry the command's stderr
lines as `notes`. A name that is not UTF-8 leaves as `{"bytes_b64": ...}` (ADR 0020).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class BytesText(_Open):
    bytes_b64: str


Text = str | BytesText


class Doc(_Open):
    notes: list[str] | None = None  # what the command said on stderr


# -- memory -------------------------------------------------------------------------------


class StaleDoc(_Open):
    how: Literal["changed", "deleted", "renamed"]
    commit: str | None = None
    path: str | None = None
    moved_from: str | None = None


class HitDoc(_Open):
    id: str
    kind: Literal["memory", "chunk"]
    content: str
    score: float
    type: str | None = None
    status: str | None = None
    scope: str | None = None
    tags: list[str] = []
    confidence: float | None = None
    created: float | None = None
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    commit_id: str | None = None
    source_file: str | None = None
    branch: str | None = None
    stale: StaleDoc | None = None


class SourceDoc(_Open):
    agent: str | None
    file: str | None
    line: int | None
    when: float | None
    blob: str | None = None
    moved_from: str | None = None


class MemoryDoc(_Open):
    id: str
    type: str
    content: str
    scope: str
    tags: list[str]
    source: SourceDoc
    confidence: float
    salience: float
    valid_from: float
    valid_to: float | None
    created: float
    updated: float
    last_seen: float
    status: Literal["active", "superseded", "archived", "forgotten"]
    branch: str | None = None
    stale: StaleDoc | None = None


class SearchOut(Doc):
    hits: list[HitDoc]


class ContextOut(Doc):
    text: str
    tokens: int
    budget: int
    hits: list[HitDoc]


class MemoriesOut(Doc):
    memories: list[MemoryDoc]


class HistoryEntryDoc(_Open):
    seq: int
    memory_id: str | None
    op: str
    at: float
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    note: str


class HistoryOut(Doc):
    changes: list[HistoryEntryDoc]


class CheckpointOut(Doc):
    id: str
    scope: str
    created: float
    task: str
    done: list[str]
    next: list[str]
    hypotheses: list[str]
    blocked: list[str]
    files: list[str]


class ResumeOut(CheckpointOut):
    markdown: str


class BriefOut(Doc):
    topic: str | None
    markdown: str


class WriteOut(Doc):
    action: Literal["add", "update", "supersede", "noop", "dropped"]
    id: str | None
    superseded: list[str]
    redactions: int
    flagged: bool
    reason: str
    memory: MemoryDoc | None


class ConfirmOut(MemoryDoc):
    notes: list[str] | None = None


class ForgetOut(Doc):
    forgotten: list[str]


class PurgeOut(Doc):
    purged: str


class EdgeOut(Doc):
    src: str
    dst: str
    rel: str
    created: float


# -- workspace ----------------------------------------------------------------------------


class CommitDoc(_Open):
    id: str
    tree: str
    parents: list[str]
    time_ns: int
    time: str
    author: Text
    message: Text
    meta: dict[str, Any]


class LogOut(Doc):
    commits: list[CommitDoc]


class ChangeDoc(_Open):
    status: str
    path: Text


class DiffOut(Doc):
    changes: list[ChangeDoc]
    text: str | None = None


class EntryDoc(_Open):
    name: Text
    type: str
    mode: str
    size: int
    id: str


class LsOut(Doc):
    entries: list[EntryDoc]


class ReadOut(Doc):
    path: Text
    size: int
    content: str | None = None
    content_base64: str | None = None
    truncated: bool | None = None


class RefDoc(_Open):
    name: str
    id: str
    current: bool | None = None


class RefsOut(Doc):
    branches: list[RefDoc]
    snapshots: list[RefDoc]


class BranchOut(Doc):
    branch: str
    id: str


class SnapshotOut(Doc):
    snapshot: str
    id: str


class MemoryMergeDoc(_Open):
    branch: str
    into: str | None
    moved: list[str] = []
    duplicates: list[str] = []
    refined: list[str] = []
    superseded: list[str] = []
    error: str | None = None


class MergeOut(Doc):
    status: str
    commit: str | None
    conflicts: list[Text]
    committed: bool
    memories: MemoryMergeDoc | None = None


# -- experiments --------------------------------------------------------------------------


class ScoreDoc(_Open):
    metric: str
    value: float
    commit: str
    time: str


class ExperimentDoc(_Open):
    name: str
    branch: str
    running: bool
    base: str | None
    head: str | None
    commits: int
    first_time: str | None
    last_time: str | None
    started_time: str | None
    stopped_time: str | None
    score: float | None
    scores: dict[str, ScoreDoc]
    picked: Any = None


class ExperimentOut(ExperimentDoc):
    notes: list[str] | None = None


class ExperimentsOut(Doc):
    experiments: list[ExperimentDoc]


class ScoreOut(Doc):
    experiment: str
    metric: str
    value: float
    commit: str
    time: str


class CompareOut(Doc):
    base: str | None
    experiments: list[ExperimentDoc]
    shared_paths: list[Text]


class PickOut(Doc):
    experiment: str
    status: str
    commit: str | None
    into: str
    memories: MemoryMergeDoc | None = None
