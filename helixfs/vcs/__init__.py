"""Version control over the object store: objects, the Repository API, live worktrees."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from helixfs.vcs.node import Node
from helixfs.vcs.repo import RefInfo, Repository

if TYPE_CHECKING:
    from helixfs.vcs.merge import MergeResult
    from helixfs.vcs.worktree import Worktree

DEEP_TREES = 10_000
"""Trees are walked recursively, one or two frames per directory level, and Linux allows
directories nested deeper than Python's default limit of 1,000 frames: a 2,000-level tree
was checked end to end (commit, diff, merge, gc, fsck) under this limit."""
if sys.getrecursionlimit() < DEEP_TREES:
    sys.setrecursionlimit(DEEP_TREES)


def __getattr__(name: str) -> object:
    """The merge and live-worktree halves load when first asked for (helixfs/lazy.py)."""
    if name == "MergeResult":
        from helixfs.vcs.merge import MergeResult

        return MergeResult
    if name == "Worktree":
        from helixfs.vcs.worktree import Worktree

        return Worktree
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MergeResult", "Node", "RefInfo", "Repository", "Worktree"]
