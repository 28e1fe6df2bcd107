"""What a hook with no daemon reads of the version store: the branch HEAD names, the
branches, a branch's commits back along first parents (ADR 0052).

`Heads` reads them from RocksDB opened read-only: no LOCK taken (a writer may hold the
store: a CLI command, an unmounting daemon), no recovery run, nothing written to the
database (rocksdict rewrites its own rocksdict-config.json, as at every open). It has
the Repository's methods a hook calls, with the Repository's answers, and none of its
imports: the Repository and the tree operations under it cost ~40 ms to import and ~25
ms to open read-write, most of a hook's budget. Revisions are names only (a branch,
then a snapshot; `branches/NAME`, `snapshots/NAME`; HEAD): ids and `~N` need the
Repository.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

from helixfs.errors import InvalidInput, NotFound
from helixfs.ids import CommitId, ObjectId
from helixfs.store.rocks import RocksStore
from helixfs.vcs.objects import Commit, decode_commit
from helixfs.vcs.refs import (
    BRANCHES,
    HEAD,
    SNAPSHOTS,
    RefInfo,
    branch_ref,
    snapshot_ref,
    storable,
)

OBJECTS_DIR = "objects"  # repo.OBJECTS_DIR (a test checks they agree)


class Heads:
    def __init__(self, store: RocksStore) -> None:
        self.store = store

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Heads:
        """The store folder's version store, read-only; NotFound as Repository.open."""
        folder = Path(path)
        if not (folder / OBJECTS_DIR / "CURRENT").is_file():
            raise NotFound(f"no HelixFS store at {folder} (create one with `helix init`)")
        heads = cls(RocksStore(folder / OBJECTS_DIR, read_only=True))
        if heads.store.ref(HEAD) is None:
            heads.close()
            raise NotFound(f"{folder} is not an initialised HelixFS store")
        return heads

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Heads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def head_branch(self) -> str:
        value = self.store.ref(HEAD)
        if value is None:
            raise NotFound("this store has no HEAD: is it initialised?")
        return value.decode()

    def current_branch(self) -> str:
        """HEAD's branch: a hook with no daemon runs in no branch's folder of a mount."""
        return self.head_branch()

    def branch_head(self, branch: str) -> CommitId:
        value = self.store.ref(branch_ref(branch)) if storable(branch) else None
        if value is None:
            raise NotFound(f"no branch named {branch!r}")
        return CommitId(value)

    def resolve(self, rev: str = HEAD) -> CommitId:
        """A commit from HEAD or a name, as Repository.resolve finds it."""
        if rev in (HEAD, "@"):
            return self.branch_head(self.current_branch())
        if not isinstance(rev, str) or not storable(rev):
            raise InvalidInput(f"revision {rev!r}: a hook reads branches by name only")
        names = [rev] if rev.startswith((BRANCHES, SNAPSHOTS)) else []
        for name in names or (branch_ref(rev), snapshot_ref(rev)):
            value = self.store.ref(name)
            if value is not None:
                return CommitId(value)
        raise NotFound(f"unknown revision {rev!r}")

    def commit_info(self, rev: str | CommitId) -> Commit:
        cid = self.resolve(rev) if isinstance(rev, str) else rev
        return decode_commit(self.store.get(ObjectId(cid)), cid)

    def branches(self) -> list[RefInfo]:
        return [RefInfo(n[len(BRANCHES) :], CommitId(v)) for n, v in self.store.refs(BRANCHES)]

    def log(self, rev: str = HEAD, limit: int | None = None) -> Iterator[Commit]:
        """First parents back from `rev`, newest first: Repository.log's default walk."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidInput(f"limit must be a whole number, not {limit!r}")
        return itertools.islice(self._first_parents(self.resolve(rev)), limit)

    def _first_parents(self, cid: CommitId) -> Iterator[Commit]:
        current: CommitId | None = cid
        while current is not None:
            commit = self.commit_info(current)
            yield commit
            current = commit.parents[0] if commit.parents else None
