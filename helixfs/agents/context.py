"""What every hook answer is made of: the world it reads, memory lines, a token budget.

A hook's text goes into the agent's context window at every step, so it is bounded (a
budget per event, counted with the memory engine's token estimate), never repeats a
memory the session was already shown, and passes the redaction pass on its way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.memory.redact import redact
from helixfs.memory.tokens import estimate_tokens

if TYPE_CHECKING:
    from helixfs.agents.session import Session
    from helixfs.memory import Hit, Memory, MemoryRecord
    from helixfs.memory.tree import TreeView
    from helixfs.memory.types import Staleness
    from helixfs.vcs.repo import Repository

MEMORY_CHARS = 300  # one memory's text in a hook's answer, at most


def _no_view() -> TreeView | None:
    return None


@dataclass
class World:
    """What a hook may read: the store's memory and (opened only if a hook needs it)
    its repository. `read_files`: the hook may read the agent's files itself (it runs
    in the agent's process; a mount's daemon must not read its own mount). `view`: the
    branch the agent works in, for its memories and their staleness (ADR 0063)."""

    store: Path
    memory: Memory
    repository: Callable[[], Repository | None]
    read_files: bool = True
    view: Callable[[], TreeView | None] = field(default=_no_view)

    @property
    def branch(self) -> str | None:
        view = self.view()
        return view.branch if view is not None else None


@dataclass
class Packer:
    """Lines packed under a token budget: a line that does not fit is left out."""

    budget: int
    lines: list[str] = field(default_factory=list)
    tokens: int = 0

    def add(self, line: str) -> bool:
        cost = estimate_tokens(line) + 1
        if self.tokens + cost > self.budget:
            return False
        self.lines.append(line)
        self.tokens += cost
        return True

    def section(self, title: str, lines: Iterable[str]) -> int:
        """`title` then as many of `lines` as fit (none fit: no title either)."""
        items = list(lines)
        if not items or not self.add(title):
            return 0
        added = sum(self.add(line) for line in items)
        if not added:
            self.lines.pop()
            self.tokens -= estimate_tokens(title) + 1
        return added

    def text(self) -> str:
        return "\n".join(self.lines)


def cut(text: str, limit: int = MEMORY_CHARS) -> str:
    """One line of at most `limit` characters, secrets redacted (a memory was redacted
    when written; a workspace passage, a commit subject or an error line may not be)."""
    flat = " ".join(redact(text).text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def memory_line(memory_id: str, type_: str | None, content: str, prefix: str = "") -> str:
    return f"- {prefix}[{type_ or 'memory'}] {cut(content)} (memory {memory_id})"


def record_line(record: MemoryRecord, prefix: str = "") -> str:
    return memory_line(record.id, record.type, record.content, stale_prefix(record.stale) + prefix)


def hit_line(hit: Hit) -> str:
    if hit.kind == "chunk":
        where = f"{hit.path}:{hit.start_line}-{hit.end_line}"
        return f"- {where}: {cut(hit.content, 200)}"
    return memory_line(hit.id, hit.type, hit.content, stale_prefix(hit.stale))


def stale_prefix(stale: Staleness | None) -> str:
    """`(stale: src/auth.py changed in 1a2b3c4d5e6f) ` for a memory whose file moved on
    since it was written: the agent reads it as possibly out of date."""
    if stale is None:
        return ""
    where = f"{stale.moved_from} -> {stale.path}" if stale.how == "renamed" else stale.path
    commit = f" in {stale.commit[:12]}" if stale.commit else ""
    return f"(stale: {where} {stale.how}{commit}) "


def hit_key(hit: Hit) -> str:
    return hit.id if hit.kind == "memory" else f"{hit.path}:{hit.start_line}"


def fresh_hits(hits: Iterable[Hit], state: Session, seen: set[str]) -> list[Hit]:
    """Hits neither shown earlier in the session nor in this answer; marks them seen."""
    kept = []
    for hit in hits:
        key = hit_key(hit)
        if key in seen or key in state.injected:
            continue
        seen.add(key)
        kept.append(hit)
    return kept


def pack_hits(packer: Packer, title: str, hits: Iterable[Hit], state: Session) -> int:
    """`title` and the lines of `hits` that fit; those shown are marked in the session."""
    items = list(hits)
    if not items or not packer.add(title):
        return 0
    shown = [hit_key(hit) for hit in items if packer.add(hit_line(hit))]
    if not shown:
        packer.lines.pop()
        packer.tokens -= estimate_tokens(title) + 1
    state.mark(shown)
    return len(shown)


def additional_context(event: str, text: str) -> dict[str, Any] | None:
    """The answer Claude Code reads from a hook's stdout to add `text` to the context."""
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
