"""The branch a memory command works in, as the tree view the memory engine is given.

A memory written in a branch belongs to it, and a memory about a file is checked against
that branch's tree (ADR 0063). The branch is `--branch NAME`, else the folder the command
runs in (`.helix/branches/NAME/` of a mount: the daemon runs it there), else the trunk.
In the daemon the view reads the daemon's repository; without one, the command opens the
repository itself (no daemon holds it), and works without a view if there is none.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import tree_path
from helixfs.cli.store_path import tree_place
from helixfs.errors import HelixError, NotFound, StoreLocked

if TYPE_CHECKING:
    from helixfs.memory import Source
    from helixfs.memory.tree import Moved, TreeView
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.sourceview import BranchView


def add_branch_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--branch",
        metavar="NAME",
        help=f"{what} (default: the branch folder it runs in, else the trunk)",
    )


@contextmanager
def tree_view(args: argparse.Namespace, store: Path) -> Iterator[TreeView | None]:
    """The view of the command's branch, for its length; None without a repository.
    Without a daemon the repository is opened only if the memory asks the tree
    something (a memory about a file, another branch's): most commands never do, and
    opening it costs a command ~0.2 s."""
    branch = getattr(args, "branch", None)
    daemon_repo = getattr(args, "daemon_repo", None)
    if daemon_repo is not None:
        yield view_of(daemon_repo, branch)
        return
    if not (store / "objects").exists():
        if branch:
            raise NotFound(f"--branch {branch}: no repository at {store} to find it in")
        yield None
        return
    view = LazyView(store, branch)
    try:
        if branch is not None:
            view.real()  # a branch named is checked before anything is written
        yield view
    finally:
        view.close()


class LazyView:
    """A BranchView over a repository this process opens on the first question."""

    def __init__(self, store: Path, branch: str | None) -> None:
        self._store = store
        self._branch = branch
        self._repo: Repository | None = None
        self._view: BranchView | None = None

    @property
    def branch(self) -> str | None:
        return self.real().branch if self._branch is not None else None

    @property
    def head(self) -> str:
        return self.real().head

    def blob(self, path: str) -> str | None:
        return self.real().blob(path)

    def changed_by(self, path: str) -> str | None:
        return self.real().changed_by(path)

    def moved(self, path: str) -> Moved:
        return self.real().moved(path)

    def owns(self, commit: str) -> bool:
        return self.real().owns(commit)

    def real(self) -> BranchView:
        if self._view is None:
            from helixfs.memory.tree import TreeUnavailable
            from helixfs.vcs.repo import Repository

            try:
                self._repo = Repository.open(self._store)
            except StoreLocked as err:  # a process holding it without serving its commands
                raise TreeUnavailable(str(err)) from None
            self._view = view_of(self._repo, self._branch)
        return self._view

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()


def in_tree(source: Source, args: argparse.Namespace, view: TreeView | None, store: Path) -> Source:
    """A source file as the tree path it is, if the tree holds that file: named from the
    mount folder the command runs in (`auth.py` in `src/`: `src/auth.py`), or by its
    absolute path in the mount (what agents pass)."""
    if view is None or not source.file:
        return source
    if source.file.startswith("/"):
        place = tree_place(store, Path(source.file))
        if place is None or not place.folder:
            return source
        path = os.fsdecode(place.folder)
    else:
        folder = getattr(args, "tree_folder", b"")
        if not folder:
            return source
        path = os.fsdecode(tree_path(os.fsencode(source.file), folder))
    return dataclasses.replace(source, file=path) if view.blob(path) is not None else source


def view_of(repo: Repository, branch: str | None, *, settle: bool = True) -> BranchView:
    """`branch`'s view; None: the folder's branch (a `.helix/branches/NAME/` cwd), else
    the trunk. A snapshot's or a commit's folder reads as the trunk."""
    from helixfs.vcs.sourceview import BranchView

    if branch is None:
        head = repo.folder_head()
        branch = head.name if head is not None and head.kind == "branch" else None
    elif not any(ref.name == branch for ref in repo.branches()):
        raise NotFound(f"no branch named {branch!r}")
    return BranchView(repo, branch, settle=settle)


def merge_memories(repo: Repository, branch: str, into: str) -> dict[str, Any] | None:
    """After `helix merge BRANCH`: the branch's memories consolidated into `into`'s
    (the trunk's when `into` is the store's HEAD branch). None if there is no memory."""
    store = repo.path
    if store is None or not (store / "memory.db").exists():
        return None
    from helixfs.cli.memory import open_memory

    target = None if into == repo.head_branch() else into
    try:
        with open_memory(store) as mem:
            return mem.merge_branch(branch, target).to_json()
    except HelixError as err:  # the merge of the files stands: say what memory could not
        return {"branch": branch, "into": target, "error": str(err)}


def archive_memories(repo: Repository, branch: str) -> list[str]:
    """After a branch is deleted: its memories archived (`helix memories --archived`)."""
    store = repo.path
    if store is None or not (store / "memory.db").exists():
        return []
    from helixfs.cli.memory import open_memory

    with open_memory(store) as mem:
        return mem.archive_branch(branch)


def rename_memories(repo: Repository, old: str, new: str) -> list[str]:
    """After `helix branch -m OLD NEW`: OLD's memories are NEW's."""
    store = repo.path
    if store is None or not (store / "memory.db").exists():
        return []
    from helixfs.cli.memory import open_memory

    with open_memory(store) as mem:
        return mem.rename_branch(old, new)
