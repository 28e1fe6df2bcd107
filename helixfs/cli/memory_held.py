"""The memory a long-lived process keeps open for the commands it runs.

A memory command opens `STORE/memory.db` for its call. The mount's daemon and `helix
mcp` run many commands, and opening for each threw the in-RAM vector indexes away with
the connection: at 100,000 memories every forwarded `recall` paid ~0.1-0.2 s to open
and ~0.15-0.2 s to scan sqlite-vec, against 20-40 ms warm. Such a process lends its
Memory to the commands it runs, for the length of each call (a ContextVar: the
daemon's other tasks and threads see nothing).

Kept apart from cli/memory.py, which imports the memory engine (0.3 s): cli/main.py
imports this for every command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from helixfs.cli.store_path import same_store

if TYPE_CHECKING:
    from helixfs.memory import Memory

MemorySource = Callable[[], "Memory"]
_HELD: ContextVar[tuple[Path, MemorySource] | None] = ContextVar("held_memory", default=None)


@contextmanager
def holding(store: Path, memory: MemorySource) -> Iterator[None]:
    """Within, memory commands on `store` use `memory()` and leave it open."""
    token = _HELD.set((store, memory))
    try:
        yield
    finally:
        _HELD.reset(token)


def held_memory(store: Path) -> Memory | None:
    """The memory lent for `store`, if any."""
    found = _HELD.get()
    if found is None or not same_store(found[0], store):
        return None
    return found[1]()


def lent_source(store: Path) -> MemorySource | None:
    """The source of the memory lent for `store`, to keep past this call (the web
    view a daemon serves uses its memory for every page)."""
    found = _HELD.get()
    if found is None or not same_store(found[0], store):
        return None
    return found[1]
