"""Version control over the object store: objects, the Repository API, live worktrees."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from helixfs.lazy import names_from

if TYPE_CHECKING:
    from helixfs.vcs.merge import MergeResult
    from helixfs.vcs.node import Node
    from helixfs.vcs.refs import RefInfo
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.worktree import Worktree

DEEP_TREES = 10_000
"""Trees are walked recursively, one or two frames per directory level, and Linux allows
directories nested deeper than Python's default limit of 1,000 frames: a 2,000-level tree
was checked end to end (commit, diff, merge, gc, fsck) under this limit."""
if sys.getrecursionlimit() < DEEP_TREES:
    sys.setrecursionlimit(DEEP_TREES)


# Every name loads when first asked for: a hook with no daemon reads commits
# (vcs/heads.py, vcs/objects.py) without the Repository (~40 ms).
__getattr__ = names_from(
    __name__,
    {
        "MergeResult": "helixfs.vcs.merge",
        "Node": "helixfs.vcs.node",
        "RefInfo": "helixfs.vcs.refs",
        "Repository": "helixfs.vcs.repo",
        "Worktree": "helixfs.vcs.worktree",
    },
)


__all__ = ["MergeResult", "Node", "RefInfo", "Repository", "Worktree"]
