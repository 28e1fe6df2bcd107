"""Version control over the object store: objects, the Repository API, live worktrees."""

from __future__ import annotations

from helixfs.vcs.repo import MergeResult, RefInfo, Repository
from helixfs.vcs.worktree import Node, Worktree

__all__ = ["MergeResult", "Node", "RefInfo", "Repository", "Worktree"]
