"""A branch's memories follow the branch's end, however it comes (ADR 0063).

`helix branch -d/-m` archives or renames the branch's memories itself, to report them;
`rmdir`/`mv` in the mount's `.helix/branches/` reach only the repository, whose
branch-end listeners the daemon hears here. The command marks the name it handles
(`handled_here`), so the listener leaves that one to it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from helixfs.memory import Memory
    from helixfs.vcs.repo import Repository

log = logging.getLogger("helixfs.daemon")
_HANDLED: ContextVar[frozenset[str]] = ContextVar("branch_memory_handled", default=frozenset())


@contextmanager
def handled_here(name: str) -> Iterator[None]:
    """Within, the end of branch `name` is the caller's to carry to memory."""
    token = _HANDLED.set(_HANDLED.get() | {name})
    try:
        yield
    finally:
        _HANDLED.reset(token)


def follow_branch_ends(repo: Repository, memory: Callable[[], Memory]) -> Callable[[], None]:
    """Archive a deleted branch's memories, rename a renamed one's; returns the undo.
    On a thread: the listener runs under the repository lock, often on the FUSE loop,
    and the memory may take seconds to open."""

    def ended(name: str, renamed_to: str | None) -> None:
        if name in _HANDLED.get():
            return
        threading.Thread(
            target=_carry, args=(memory, name, renamed_to), name="helix-branch-memory"
        ).start()

    return repo.subscribe_branch_ends(ended)


def _carry(memory: Callable[[], Memory], name: str, renamed_to: str | None) -> None:
    try:
        mem = memory()
        if renamed_to is None:
            done = mem.archive_branch(name)
            log.info("branch %s deleted: %d of its memories archived", name, len(done))
        else:
            done = mem.rename_branch(name, renamed_to)
            log.info("branch %s renamed %s: %d memories follow", name, renamed_to, len(done))
    except Exception as exc:  # the branch is gone either way: say why memory did not follow
        log.warning("the memories of branch %s did not follow its end: %s", name, exc)
