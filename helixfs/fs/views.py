"""The trees the mount shows, and keeping the kernel's picture of them true.

A view is a Worktree shown at some place: the mount root (the current branch),
`.helix/branches/NAME`, `.helix/snapshots/NAME`, `.helix/commits/ID`. When a view's node
identities are replaced (a HEAD switch, or an out-of-band reset/merge/checkout followed
by `Worktree.reload()`), every inode the kernel knows in it is matched again by path:
a path that still exists keeps its inode number (so `git`'s index, which records st_ino,
stays valid) and has its cached attributes and pages dropped; a path that is gone has its
dentry dropped. Open file handles keep their old node, so they keep working against the
state they opened.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from helixfs.errors import HelixError, NotFound
from helixfs.fs.edge import Invalidator
from helixfs.fs.helixdir import ViewSpec
from helixfs.fs.inodes import ROOT_INODE, InodeTable, NodeInode, View
from helixfs.fs.negatives import NegativeNames
from helixfs.fs.saver import Saver

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.worktree import Node, Worktree

log = logging.getLogger(__name__)


class Views:
    """Every view of the mount, by (kind, name), plus the root."""

    def __init__(
        self,
        repo: Repository,
        inodes: InodeTable,
        invalidator: Invalidator,
        saver: Saver,
        negatives: NegativeNames,
        follow_open: Callable[[Node, Node], None] = lambda old, new: None,
    ) -> None:
        self.repo = repo
        self.inodes = inodes
        self.invalidator = invalidator
        self.saver = saver
        self.negatives = negatives  # names the kernel caches as absent (negatives.py)
        self.follow_open = follow_open  # an open file's handles move to its new node
        head = repo.head_branch()
        self.root = View("root", head, repo.worktree(head), ROOT_INODE, ROOT_INODE)
        inodes.new_slot(self.root)
        inodes.for_node(self.root, self.root.worktree.root, ROOT_INODE, b"")
        self._views: dict[tuple[str, str], View] = {}

    def open(self, spec: ViewSpec, path: tuple[bytes, ...], parent_ino: int) -> View:
        """The view a `.helix/` directory shows, opened on first use."""
        key = (spec.kind, spec.name)
        view = self._views.get(key)
        if view is None:
            worktree = self._worktree(spec)
            view = View(spec.kind, spec.name, worktree, self.inodes.number_for(path), parent_ino)
            self.inodes.new_slot(view)
            self._views[key] = view
        return view

    def _worktree(self, spec: ViewSpec) -> Worktree:
        if spec.kind == "branch":
            return self.repo.worktree(spec.name)
        if spec.kind == "snapshot":
            return self.repo.snapshot_view(spec.name)
        if spec.kind == "commit":
            return self.repo.commit_view(spec.rev or spec.name)
        raise NotFound(f"unknown view kind {spec.kind!r}")

    @property
    def any_open(self) -> bool:
        """Whether a view under `.helix/` is open: until one is, every branch is shown
        once (the root's), and no request has another view to tell of a change."""
        return bool(self._views)

    def sharing(self, worktree: Worktree) -> list[View]:
        """Views showing `worktree` (the root and `.helix/branches/` of the same branch)."""
        if not self._views:  # nothing under `.helix/` open: asked on nearly every request
            return [self.root] if self.root.worktree is worktree else []
        views = [v for v in self._views.values() if v.worktree is worktree]
        return [self.root, *views] if self.root.worktree is worktree else views

    def forget(self, kind: str, name: str) -> None:
        view = self._views.pop((kind, name), None)
        if view is None:
            return
        if not view.readonly and not self._is_live(view.worktree):
            self.saver.forget(view.worktree)  # a late commit would resurrect work/NAME
        paths = _paths(self.inodes.in_view(view), view)
        gone = self.inodes.drop_view_generation(view)
        for entry in gone:  # open files and the kernel's folders stay, as removed ones
            self.inodes.orphan(entry)
        self._tell_gone(gone, paths)
        self.inodes.new_slot(view)  # numbers the kernel still holds now answer ESTALE
        self.inodes.renumber(view.root_ino)

    def close_if_unused(self, view: View) -> None:
        """The kernel forgot the root of `view`. A read-only view (a commit, a snapshot)
        that it and open files no longer use is dropped with its loaded tree: one view
        per commit ever browsed under `.helix/commits/` would otherwise live as long as
        the mount. A later lookup opens it again, under a new number."""
        if not view.readonly or self._views.get((view.kind, view.name)) is not view:
            return
        if any(entry.lookups or entry.opens for entry in self.inodes.in_view(view)):
            return
        del self._views[(view.kind, view.name)]
        self.inodes.drop_view(view)

    def switch_root(self, branch: str) -> None:
        """Show `branch` at the mount root (inode 1 stays the root)."""
        if branch == self.root.name:
            return
        self.root.name = branch
        self._rebind(self.root, self.repo.worktree(branch))

    def ref_moved(self, branch: str) -> None:
        """Repository.subscribe callback: a ref moved by some other core-API call."""
        try:
            head = self.repo.head_branch()
            if head != self.root.name:
                self.switch_root(head)
            self._reload_branch(branch)
        except HelixError:
            log.exception("could not follow the move of branch %s", branch)

    def snapshot_moved(self, name: str, renamed_to: str | None) -> None:
        """Repository.subscribe_snapshots callback. A rename moves the view (a process
        inside goes on working there) and the kernel's old name goes; any other change
        (made, deleted, moved) leaves a view of that name showing what the ref no longer
        names: it goes, and the next lookup opens what the name is now."""
        if renamed_to is None:
            self.forget("snapshot", name)
            return
        view = self._views.get(("snapshot", name))
        self.move("snapshot", name, renamed_to)
        if view is not None:
            self.invalidator.entry(view.parent_ino, name.encode())

    def _reload_branch(self, branch: str) -> None:
        """The repository already reloaded (or replaced) the branch's Worktree."""
        if not self.repo.has_branch(branch):
            self._branch_gone(branch)
            return
        worktree = self.repo.worktree(branch)
        for view in [self.root, *self._views.values()]:
            if view.kind in ("root", "branch") and view.name == branch:
                self._rebind(view, worktree)

    def _branch_gone(self, branch: str) -> None:
        """No branch of that name any more. Renamed (its Worktree lives on under the new
        name), its folder's view and numbers move with it: a process inside goes on
        working there, as in a folder `mv` renamed. Deleted, the view goes."""
        view = self._views.get(("branch", branch))
        if view is None or not self._is_live(view.worktree) or view.worktree.branch == branch:
            self.forget("branch", branch)
            return
        self.move("branch", branch, view.worktree.branch)

    def move(self, kind: str, old: str, new: str) -> None:
        """The folder of view `old` was renamed to `new`: the view and its numbers go
        with it, so a process inside goes on working there."""
        view = self._views.pop((kind, old), None)
        self.forget(kind, new)  # a stale view of an older one of that name
        if view is None:
            return
        view.name = new
        if view.readonly:
            view.worktree.branch = new  # a snapshot's label, as its errors name it
        self._views[(kind, new)] = view
        self.inodes.rename_number(view.root_ino, new.encode())

    def _rebind(self, view: View, worktree: Worktree) -> None:
        old = view.worktree
        self.regenerate(view, worktree)
        if old is not worktree and not old.readonly and not self._is_live(old):
            self.saver.forget(old)  # renamed or dropped: a late commit would fail

    def _is_live(self, worktree: Worktree) -> bool:
        """Still the repository's worktree of its branch (e.g. main after a HEAD switch)."""
        try:
            return self.repo.worktree(worktree.branch) is worktree
        except HelixError:
            return False

    def regenerate(self, view: View, worktree: Worktree) -> None:
        """New node identities for `view`: keep numbers by path, invalidate the rest."""
        old = self.inodes.in_view(view)
        paths = _paths(old, view)
        also = self._other_names(old, view)
        # A name the old state lacked may exist now: the kernel must ask again.
        for parent, name in self.negatives.take({entry.ino for entry in old}):
            self.invalidator.entry(parent, name)
        self.inodes.drop_view_generation(view)
        # The same branch reloaded (an outside commit, reset or merge): a file it left
        # as it was stays the same file for its open descriptors, as on a local disk.
        # Another branch (a HEAD switch) is another file: descriptors keep the old one.
        same_branch = view.worktree is worktree
        view.worktree = worktree
        self.inodes.new_slot(view)
        gone = []
        for entry in sorted(old, key=lambda e: len(paths.get(e.ino) or ())):
            node = None if entry.detached else _resolve(worktree, paths.get(entry.ino))
            if (
                node is None
                or self.inodes.known(view, node) is not None
                or not _same_file(entry.node, node)
            ):
                self.inodes.orphan(entry)
                gone.append(entry)
                continue
            if same_branch and entry.node.is_file():
                self.follow_open(entry.node, node)
            self.inodes.remap(entry, view, node)
            self.invalidator.inode(entry.ino)
        self._tell_gone(gone, paths)
        for parent, name in also:  # looked up again: another file now, or none
            self.invalidator.entry(parent, name)

    def _other_names(self, old: list[NodeInode], view: View) -> list[tuple[int, bytes]]:
        """The kernel's names of hard-linked files besides the one each entry records
        (where the kernel last saw it): it may hold a name under every folder it knows."""
        names = []
        for entry in old:
            group = entry.node.group
            for parent, name in group.places if group is not None else ():
                known = self.inodes.known(view, parent)
                if known is not None and (known.ino, name) != (entry.parent, entry.name):
                    names.append((known.ino, name))
        return names

    def _tell_gone(self, gone: list[NodeInode], paths: dict[int, tuple[bytes, ...] | None]) -> None:
        """Delete the kernel's names of `gone`, deepest first: the kernel refuses to
        delete a directory that still has a name in use under it (ENOTEMPTY: an open
        file), and a directory it was not told is gone, say a shell's cwd, answers
        ENOENT to stat, `cd ..` and getcwd instead of being a deleted directory."""
        for entry in sorted(gone, key=lambda e: len(paths.get(e.ino) or ()), reverse=True):
            self.invalidator.entry(entry.parent, entry.name, entry.ino)


def _paths(entries: list[NodeInode], view: View) -> dict[int, tuple[bytes, ...] | None]:
    """Each entry's path inside the view, from where the kernel last saw it."""
    by_ino = {e.ino: e for e in entries}
    paths: dict[int, tuple[bytes, ...] | None] = {}
    for entry in entries:
        names: list[bytes] = []
        current: NodeInode | None = entry
        while current is not None and current.ino != view.root_ino:
            names.append(current.name)
            current = None if current.detached else by_ino.get(current.parent)
        paths[entry.ino] = tuple(reversed(names)) if current is not None else None
    return paths


def _same_file(old: Node, new: Node) -> bool:
    """Whether `new` may take over `old`'s inode number. A directory may (git's index stays
    valid); a file only with the same type and content: the kernel keeps the size and pages
    it cached under that number, and a descriptor opened before must not see another file's
    length (it would read the old content cut short)."""
    if old.is_dir() or new.is_dir():
        return old.is_dir() and new.is_dir()
    return stat.S_IFMT(old.mode) == stat.S_IFMT(new.mode) and (old.oid, old.size) == (
        new.oid,
        new.size,
    )


def _resolve(worktree: Worktree, path: tuple[bytes, ...] | None) -> Node | None:
    if path is None:
        return None
    node = worktree.root
    try:
        for name in path:
            node = worktree.lookup(node, name)
    except HelixError:
        return None
    return node
