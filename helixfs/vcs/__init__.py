"""Version control over the object store: objects, the Repository API, live worktrees."""

from __future__ import annotations

from helixfs.vcs.node import Node
from helixfs.vcs.repo import MergeResult, RefInfo, Repository
from helixfs.vcs.worktree import Worktree

__all__ = ["MergeResult", "Node", "RefInfo", "Repository", "Worktree"]
