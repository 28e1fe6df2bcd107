"""What became of a path in a branch: the questions memory asks of the tree (ADR 0063).

A memory about a file records the file's blob id when it is written. Later, to tell
whether it still describes the file, the memory engine asks a branch's view: which
blob the path holds now, which commit last changed or deleted it, and, for a path
that is gone, where the file went (a rename: the commit that deleted it added a file
of the same or a similar content). It also asks which branch memories the reader
sees (`owns`). The engine never imports vcs: it is given this object and uses it
through `helixfs.memory.tree.TreeView`, a protocol this class meets.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from helixfs.errors import NotADirectory, NotFound
from helixfs.ids import CommitId
from helixfs.vcs import ancestry
from helixfs.vcs.history import first_parent, last_change
from helixfs.vcs.objects import TreeEntry
from helixfs.vcs.renames import renames
from helixfs.vcs.repo import Repository

WALK_LIMIT = 1000  # commits walked back to find a deletion (as history.last_change)
RENAME_HOPS = 8  # a file renamed again and again is followed this many times


@dataclass(frozen=True)
class Moved:
    """Where a deleted path's file went (`path` None: deleted, not renamed), and the
    commit that moved or deleted it."""

    path: str | None
    commit: str | None


class BranchView:
    """`branch` of `repo` as memory sees it. `branch` None: the trunk (the store's HEAD
    branch), whose memories are unscoped. A live branch's pending saves are committed
    first (`settle_rev`), as every read of the CLI does, unless `settle` is False (a
    hook on every tool call reads the last commit, committing nothing)."""

    def __init__(self, repo: Repository, branch: str | None, *, settle: bool = True) -> None:
        self._repo = repo
        self._trunk = repo.head_branch()
        self.branch = None if branch == self._trunk else branch
        self._name = branch or self._trunk
        if settle:
            repo.settle_rev(f"branches/{self._name}")
        self._head = repo.resolve(f"branches/{self._name}")
        self._trunk_head = repo.resolve(f"branches/{self._trunk}")
        self._contains = lru_cache(maxsize=4096)(self._contains_uncached)

    @property
    def head(self) -> str:
        return self._head.hex()

    def blob(self, path: str) -> str | None:
        """The content id (hex) the path holds at the branch's head; None if absent or
        not a file."""
        entry = _entry(self._repo, self._head, path)
        return entry.oid.hex() if entry is not None and not entry.is_dir() else None

    def changed_by(self, path: str) -> str | None:
        """The newest commit that changed `path` (None if the path is gone)."""
        found = last_change(self._repo, self._head, path.encode("utf-8", "surrogateescape"))
        return found.hex() if found is not None else None

    def moved(self, path: str) -> Moved:
        """A path absent at the head: the commit that deleted it and, if that commit
        added its file under another name, that name (followed through later renames)."""
        current, commit = path, None
        for _ in range(RENAME_HOPS):
            deleted = self._deletion(current)
            if deleted is None:
                return Moved(None, commit)
            new_path, commit = deleted
            if new_path is None:
                return Moved(None, commit)
            if _entry(self._repo, self._head, new_path) is not None:
                return Moved(new_path, commit)
            current = new_path
        return Moved(None, commit)

    def _deletion(self, path: str) -> tuple[str | None, str] | None:
        """(new name or None, commit id) of the first-parent commit that removed `path`."""
        raw = path.encode("utf-8", "surrogateescape")
        for count, commit in enumerate(first_parent(self._repo, self._head)):
            if count >= WALK_LIMIT or not commit.parents:
                return None
            parent = self._repo.commit_info(commit.parents[0])
            if _entry(self._repo, parent.id, path) is None:
                continue
            if _entry(self._repo, commit.id, path) is not None:
                return None  # present here: the walk passed its deletion (a revert)
            changes = self._repo.trees.diff(parent.tree, commit.tree)
            pairs = renames(self._repo.contents, changes, {raw})
            new = pairs.get(raw)
            return (new.decode("utf-8", "surrogateescape") if new else None), commit.id.hex()
        return None

    def owns(self, commit: str) -> bool:
        """Whether `commit` is in this branch's history and not in the trunk's: a memory
        written at that commit of another branch is visible here (ADR 0063)."""
        if self.branch is None:
            return False
        return self._contains(commit, self._head) and not self._contains(commit, self._trunk_head)

    def _contains_uncached(self, commit: str, head: CommitId) -> bool:
        try:
            cid = CommitId(bytes.fromhex(commit))
        except ValueError:
            return False
        if cid == head:
            return True
        try:
            return cid in ancestry.merge_bases(self._repo, cid, head)
        except NotFound:
            return False


def _entry(repo: Repository, rev: CommitId, path: str) -> TreeEntry | None:
    try:
        return repo.trees.entry(repo.commit_info(rev).tree, path.encode("utf-8", "surrogateescape"))
    except (NotFound, NotADirectory):
        return None
