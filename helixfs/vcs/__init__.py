"""Version control over the object store: objects, the Repository API, live worktrees."""

from __future__ import annotations

import sys

from helixfs.vcs.node import Node
from helixfs.vcs.repo import MergeResult, RefInfo, Repository
from helixfs.vcs.worktree import Worktree

DEEP_TREES = 10_000
"""Trees are walked recursively, one or two frames per directory level, and Linux allows
directories nested deeper than Python's default limit of 1,000 frames: a 2,000-level tree
was checked end to end (commit, diff, merge, gc, fsck) under this limit."""
if sys.getrecursionlimit() < DEEP_TREES:
    sys.setrecursionlimit(DEEP_TREES)

__all__ = ["MergeResult", "Node", "RefInfo", "Repository", "Worktree"]
