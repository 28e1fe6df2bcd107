"""A damaged store: what each unreadable object takes with it, and a clean copy of the
rest (ADR 0046).

`survey` walks every ref's history and trees by id, reading each object once: a read
that fails (a RocksDB block whose checksum is wrong, a chunk whose bytes no longer hash
to its id) is noted with the paths and commits that hold the object, and the walk goes
on with the next one. Objects live in RocksDB in key order, so one damaged block holds
objects of unrelated files; everything in the other blocks still reads.

`salvage` builds a new store from the branch and snapshot heads with the unreadable
entries left out: the objects that read are copied by id (they are verified on the
way), directories that lost an entry are written anew.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from helixfs.errors import HelixError, InvalidInput
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.vcs.objects import (
    KIND_CHUNKED,
    KIND_PAGED,
    KIND_ROOT,
    KIND_TREE,
    TreeEntry,
    decode_chunked,
    decode_commit,
    decode_paged,
    decode_root,
    kind_of,
    references,
)
from helixfs.vcs.refs import BRANCHES, SNAPSHOTS
from helixfs.vcs.transfer import _Batch as Batch
from helixfs.vcs.treeops import show_path

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)

NAMED = 20  # paths and commits a report names per damaged object (the rest are counted)


@dataclass
class Damaged:
    """One unreadable object, and where the history holds it."""

    error: str
    paths: set[bytes] = field(default_factory=set)  # up to NAMED
    commits: list[CommitId] = field(default_factory=list)  # up to NAMED, newest first
    path_count: int = 0
    commit_count: int = 0

    def held(self, path: bytes, cid: CommitId) -> None:
        if path not in self.paths:
            self.path_count += 1
            if len(self.paths) < NAMED:
                self.paths.add(path)
        if not self.commits or self.commits[-1] != cid:
            self.commit_count += 1
            if len(self.commits) < NAMED:
                self.commits.append(cid)


@dataclass
class Survey:
    damaged: dict[ObjectId, Damaged] = field(default_factory=dict)
    readable: set[ObjectId] = field(default_factory=set)
    commits: int = 0
    lost_commits: dict[CommitId, str] = field(default_factory=dict)  # id -> "ref: error"

    def problems(self) -> list[str]:
        """One line per damaged object: its error, the paths and commits that hold it."""
        lines = [
            f"commit {hex_id(cid)} cannot be read (history of {why}); its tree and the"
            " commits before it are out of reach"
            for cid, why in self.lost_commits.items()
        ]
        for oid, damage in self.damaged.items():
            paths = ", ".join(sorted(show_path(p) or "/" for p in damage.paths))
            commits = ", ".join(hex_id(c)[:12] for c in damage.commits)
            lines.append(
                f"unreadable object {hex_id(oid)}: {damage.error}; held by"
                f" {_counted(damage.path_count, 'path')} ({paths}{_more(damage.path_count)})"
                f" in {_counted(damage.commit_count, 'commit')}"
                f" ({commits}{_more(damage.commit_count)})"
            )
        return lines


def _counted(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


def _more(count: int) -> str:
    return f" and {count - NAMED} more" if count > NAMED else ""


class _Walker:
    """Reads each object once; remembers what below each tree cannot be read."""

    def __init__(self, repo: Repository, survey: Survey) -> None:
        self.repo = repo
        self.survey = survey
        self._below: dict[ObjectId, list[tuple[bytes, ObjectId]]] = {}
        self._content: dict[ObjectId, bool] = {}

    def unreadable(self, oid: ObjectId, exc: HelixError) -> None:
        self.survey.damaged.setdefault(oid, Damaged(str(exc)))

    def entries(self, tree: ObjectId) -> list[TreeEntry] | None:
        try:
            read = [tree]
            record = self.repo.store.get(tree, keep=False)
            if kind_of(record) == KIND_ROOT:  # a root's mode and owner, then its listing
                read.append(decode_root(record).oid)
                record = self.repo.store.get(read[-1], keep=False)
            if kind_of(record) == KIND_PAGED:
                read += [page for page, _ in decode_paged(record)]
            entries = list(self.repo.trees.get(tree).entries)
        except HelixError as exc:
            self.unreadable(read[-1], exc)
            return None
        self.survey.readable.update(read)
        return entries

    def bad_below(self, tree: ObjectId) -> list[tuple[bytes, ObjectId]]:
        """(path under `tree`, object) of every unreadable object the tree holds."""
        known = self._below.get(tree)
        if known is not None:
            return known
        entries = self.entries(tree)
        found: list[tuple[bytes, ObjectId]] = [] if entries is not None else [(b"", tree)]
        for entry in entries or ():
            if entry.is_dir():
                found += [(_join(entry.name, p), o) for p, o in self.bad_below(entry.oid)]
            elif not self.content_reads(entry.oid):
                found.append((entry.name, entry.oid))
        self._below[tree] = found
        return found

    def content_reads(self, oid: ObjectId) -> bool:
        """A file's (or symlink's) content, every chunk of it, reads and verifies."""
        known = self._content.get(oid)
        if known is None:
            known = self._content[oid] = self._read_content(oid)
        return known

    def _read_content(self, oid: ObjectId) -> bool:
        try:
            record = self.repo.store.get(oid, keep=False)
            chunks = [c for c, _ in decode_chunked(record).chunks] if _chunked(record) else []
            for _ in chunk_records(self.repo, chunks):
                pass
        except HelixError as exc:
            self.unreadable(oid, exc)
            return False
        self.survey.readable.update([oid, *chunks])
        return True

    def history(self, ref: str, head: CommitId, seen: set[CommitId]) -> None:
        stack = [head]
        while stack:
            cid = stack.pop()
            if cid in seen:
                continue
            seen.add(cid)
            try:
                commit = decode_commit(self.repo.store.get(ObjectId(cid), keep=False))
            except HelixError as exc:
                self.survey.lost_commits[cid] = f"{ref}: {exc}"
                continue
            self.survey.readable.add(ObjectId(cid))
            self.survey.commits += 1
            for path, oid in self.bad_below(commit.tree):
                self.survey.damaged[oid].held(path, cid)
            stack.extend(CommitId(p) for p in commit.parents)


RUN = 256  # chunks read per run (~16 MiB)


def chunk_records(repo: Repository, chunks: list[ObjectId]) -> Iterator[bytes]:
    """A file's chunk records, read in runs as the mount reads them (`get_run`): a run
    over `bodies` still finds a chunk whose row in `objects` sits in a damaged block,
    which a `get` by id does not."""
    for start in range(0, len(chunks), RUN):
        yield from repo.store.get_run(chunks[start : start + RUN])


def _chunked(record: bytes) -> bool:
    return kind_of(record) == KIND_CHUNKED


def _join(name: bytes, below: bytes) -> bytes:
    return name + b"/" + below if below else name


def _heads(repo: Repository) -> Iterator[tuple[str, CommitId]]:
    for prefix in (BRANCHES, SNAPSHOTS):
        for name, value in repo.store.refs(prefix):
            yield name, CommitId(value)


def survey(repo: Repository) -> Survey:
    """Every unreadable object reachable from a branch or snapshot, with its paths and
    commits. Never raises for damage: it is what it reports."""
    found = Survey()
    walker = _Walker(repo, found)
    seen: set[CommitId] = set()
    with repo.store.scanning():
        for ref, head in _heads(repo):
            walker.history(ref, head, seen)
    return found


# -- salvage ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SalvageReport:
    dest: str
    refs: int  # branches and snapshots made in the new store
    objects: int  # records copied
    left_out: list[str]  # "ref: path" of each entry that could not be read
    lost_refs: list[str]  # refs whose head commit or root tree cannot be read


class _Copier:
    """Copies the readable part of a tree into the new store, by id where whole."""

    def __init__(self, old: Repository, new: Repository) -> None:
        self.old, self.new = old, new
        self.walker = _Walker(old, Survey())
        self._copied: set[ObjectId] = set()
        self._batch = Batch(new)  # an import's: written in bulk, flushed by size
        self.objects = 0

    def tree(self, oid: ObjectId, ref: str, prefix: bytes, left_out: list[str]) -> ObjectId:
        """`oid`'s tree in the new store: the same id when nothing under it is lost."""
        bad = self.walker.bad_below(oid)
        if not bad:
            self._copy_whole(oid)
            return oid
        kept: list[TreeEntry] = []
        for entry in self.walker.entries(oid) or ():
            path = _join(prefix, entry.name) if prefix else entry.name
            if entry.is_dir():
                if self.walker.entries(entry.oid) is None:
                    left_out.append(f"{ref}: {show_path(path)}/")
                    continue
                kept.append(entry._replace(oid=self.tree(entry.oid, ref, path, left_out)))
            elif self.walker.content_reads(entry.oid):
                self._copy_content(entry.oid)
                kept.append(entry)
            else:
                left_out.append(f"{ref}: {show_path(path)}")
        objects: dict[ObjectId, bytes] = {}
        new_oid = self.new.trees.build(kept, objects, self.old.trees.get(oid).own)
        for key, record in objects.items():
            self._add(key, record)
        return new_oid

    def _copy_whole(self, tree: ObjectId) -> None:
        if tree in self._copied:
            return
        record = self.old.store.get(tree, keep=False)
        self._add(tree, record)
        if kind_of(record) != KIND_TREE:  # a root record's listing, a paged tree's pages
            for held in references(record):
                self._copy_whole(held)
            return
        for entry in self.old.trees.get(tree).entries:
            if entry.is_dir():
                self._copy_whole(entry.oid)
            else:
                self._copy_content(entry.oid)

    def _copy_content(self, oid: ObjectId) -> None:
        if oid in self._copied:
            return
        record = self.old.store.get(oid, keep=False)
        self._add(oid, record)
        if _chunked(record):
            chunks = [c for c, _ in decode_chunked(record).chunks if c not in self._copied]
            for chunk, body in zip(chunks, chunk_records(self.old, chunks), strict=True):
                self._add(chunk, body)

    def _add(self, oid: ObjectId, record: bytes) -> None:
        self._copied.add(oid)
        self.objects += 1
        self._batch.add({oid: record})

    def flush(self) -> None:
        self._batch.flush()

    def close(self) -> None:
        self._batch.close()


def salvage(repo: Repository, dest: Path) -> SalvageReport:
    """A new store at `dest` holding each branch and snapshot head of `repo`, every
    entry that reads kept as it was, each one that does not left out (and listed). One
    commit per ref, without the history before it: a damaged store's history cannot be
    copied whole, and a part of it would not be what it was."""
    from helixfs.vcs.repo import Repository

    if dest.exists() and any(dest.iterdir()):
        raise InvalidInput(f"the salvage destination {dest} exists and is not empty")
    new = Repository.init(dest)
    try:
        return _salvage_into(repo, new, dest)
    finally:
        new.close()


def _salvage_into(repo: Repository, new: Repository, dest: Path) -> SalvageReport:
    copier = _Copier(repo, new)
    try:
        return _copied(repo, new, dest, copier)
    finally:
        copier.close()


def _copied(repo: Repository, new: Repository, dest: Path, copier: _Copier) -> SalvageReport:
    left_out: list[str] = []
    lost: list[str] = []
    root = new.resolve("main")
    targets: dict[str, CommitId] = {}
    with repo.store.scanning():
        for ref, head in _heads(repo):
            try:
                commit = repo.commit_info(head)
            except HelixError as exc:
                lost.append(f"{ref}: head commit {hex_id(head)[:12]}: {exc}")
                continue
            if copier.walker.entries(commit.tree) is None:
                lost.append(f"{ref}: root tree {hex_id(commit.tree)[:12]} cannot be read")
                continue
            tree = copier.tree(commit.tree, ref, b"", left_out)
            copier.flush()
            new.move_refs({BRANCHES + "main": root})
            message = f"salvaged {ref} of {repo.path} (was {hex_id(head)[:12]})"
            made = new.commit_tree(tree, message, branch="main", author=commit.author)
            targets[ref] = made if made is not None else root
    if BRANCHES + "main" not in targets:
        targets[BRANCHES + "main"] = root
    new.move_refs(targets)
    for line in left_out:
        log.warning("salvage left out %s", line)
    return SalvageReport(str(dest), len(targets), copier.objects, left_out, lost)


class DamageLog:
    """What a mount found unreadable: logged once per path, with the object's error
    (every read of a damaged file fails with EIO; one line says so)."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, bytes]] = set()
        self._lock = threading.Lock()

    def note(self, branch: str, path: bytes, exc: HelixError) -> None:
        with self._lock:
            if (branch, path) in self._seen:
                return
            self._seen.add((branch, path))
        log.error(
            "unreadable in %s: %s (EIO): %s; `helix fsck` names all the damage,"
            " `helix fsck --salvage DEST` copies out what is intact",
            branch,
            show_path(path) or "/",
            exc,
        )


DAMAGE_LOG = DamageLog()
"""The process's one log of damage met (a daemon serves every branch from it)."""
