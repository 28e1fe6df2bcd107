"""A hook with no daemon, answered from memory.db without the engine (ADR 0052).

The events that only read the memory (PreToolUse's ambient context, UserPromptSubmit,
PostToolUse's failed-build lookup, PreCompact, SubagentStart) get a `Reader`
(memory/reader.py: the engine's own SQL and ranking, without numpy, sqlite-vec or the
embedder) in place of the engine, and no repository. The others still open the engine
and the store: SessionStart reads the branch and its commits from the repository
(RocksDB, the vcs), Stop writes a checkpoint (a write must not be lost: it is made
where it is asked, not queued).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from helixfs.memory import Memory

LIGHT_EVENTS = (
    "PreToolUse",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "SubagentStart",
)


def answer(store: str, event: str, text: str) -> str | None:
    """What the hook prints (maybe nothing), or None: this event needs the engine, or
    the memory is not one the reader can open (the engine creates or upgrades it)."""
    if event not in LIGHT_EVENTS:
        return None
    import apsw

    from helixfs.errors import HelixError
    from helixfs.memory.reader import Reader

    try:
        reader = Reader(Path(store) / "memory.db")
    except (apsw.Error, HelixError):
        return None
    from helixfs.agents import hooks
    from helixfs.agents.context import World

    payload = json.loads(text)
    if not isinstance(payload, dict):
        raise ValueError("the hook's input is not a JSON object")
    with reader:
        world = World(Path(store), cast("Memory", reader), _no_repository)
        result = hooks.answer(event, payload, world)
    return "" if result is None else json.dumps(result, ensure_ascii=False) + "\n"


def _no_repository() -> None:
    return None
