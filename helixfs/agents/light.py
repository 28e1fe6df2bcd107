"""A hook with no daemon, answered from memory.db without the engine (ADR 0052).

The events that only read the memory (PreToolUse's ambient context, UserPromptSubmit,
PostToolUse's failed-build lookup, PreCompact, SubagentStart) get a `Reader`
(memory/reader.py: the engine's own SQL and ranking, without numpy, sqlite-vec or the
embedder) in place of the engine, and no repository. SessionStart and Stop get the
reader too (Stop's: `Checkpointing`, which makes the automatic checkpoint's one INSERT
where it is asked, not queued) and the branches and commits, read from the version store
opened read-only (vcs/heads.py, no Repository) only when the handler asks for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from helixfs.memory import Memory
    from helixfs.vcs.repo import Repository

LIGHT_EVENTS = (
    "PreToolUse",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "SubagentStart",
    "SessionStart",
    "Stop",
)
WITH_REPOSITORY = ("SessionStart", "Stop")


def answer(store: str, event: str, text: str) -> str | None:
    """What the hook prints (maybe nothing), or None: this event needs the engine, or
    the memory is not one the reader can open (the engine creates or upgrades it)."""
    if event not in LIGHT_EVENTS:
        return None
    import apsw

    from helixfs.errors import HelixError
    from helixfs.memory.reader import Checkpointing, Reader

    try:
        reader = (Checkpointing if event == "Stop" else Reader)(Path(store) / "memory.db")
    except (apsw.Error, HelixError):
        return None
    from helixfs.agents import hooks
    from helixfs.agents.context import World

    payload = json.loads(text)
    if not isinstance(payload, dict):
        raise ValueError("the hook's input is not a JSON object")
    with reader, ExitStack() as stack:
        opener = _repository(Path(store), stack) if event in WITH_REPOSITORY else _no_repository
        world = World(Path(store), cast("Memory", reader), opener)
        result = hooks.answer(event, payload, world)
    return "" if result is None else json.dumps(result, ensure_ascii=False) + "\n"


def _no_repository() -> None:
    return None


def _repository(store: Path, stack: ExitStack) -> Callable[[], Repository | None]:
    """The store's branches and commits, read-only (vcs/heads.py: the Repository's
    answers to what the hooks ask, without its imports or its lock), opened on first
    use and closed with the answer; None when there is no version store to read."""
    opened: list[Repository | None] = []

    def repository() -> Repository | None:
        if not opened:
            from helixfs.errors import HelixError
            from helixfs.vcs.heads import Heads

            try:
                opened.append(cast("Repository", stack.enter_context(Heads.open(store))))
            except HelixError:
                opened.append(None)
        return opened[0]

    return repository
