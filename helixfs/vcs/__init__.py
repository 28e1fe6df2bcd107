"""Version control over the object store: objects, the Repository API, live worktrees."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from helixfs.vcs.merge import MergeResult
    from helixfs.vcs.node import Node
    from helixfs.vcs.repo import RefInfo, Repository
    from helixfs.vcs.worktree import Worktree

DEEP_TREES = 10_000
"""Trees are walked recursively, one or two frames per directory level, and Linux allows
directories nested deeper than Python's default limit of 1,000 frames: a 2,000-level tree
was checked end to end (commit, diff, merge, gc, fsck) under this limit."""
if sys.getrecursionlimit() < DEEP_TREES:
    sys.setrecursionlimit(DEEP_TREES)


_LAZY = {
    "MergeResult": "helixfs.vcs.merge",
    "Node": "helixfs.vcs.node",
    "RefInfo": "helixfs.vcs.repo",
    "Repository": "helixfs.vcs.repo",
    "Worktree": "helixfs.vcs.worktree",
}


def __getattr__(name: str) -> object:
    """Every name loads when first asked for (PEP 562): a hook with no daemon
    reads commits (vcs/heads.py, vcs/objects.py) without the Repository (~40 ms)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["MergeResult", "Node", "RefInfo", "Repository", "Worktree"]
