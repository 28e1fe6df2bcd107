"""Three-way merge of branches: trees by entry, text files by lines.

Policy (a demanding user must never find a conflict resolved silently): a merge with a
conflict raises MergeConflict carrying the conflicting paths and every conflicting text
file with `<<<<<<<` / `=======` / `>>>>>>>` markers, and changes nothing. A caller that
wants the marked files committed (to fix them in place) passes `allow_conflicts=True`:
the merge commit then lists the paths in `meta["conflicts"]` and the result reports them.

Line merge: both sides are diffed against the base (`linediff.py`); hunks that overlap or
touch are a conflict unless both sides made the very same edit. Binary files, type
changes (file vs directory) and modify/delete are conflicts too (ours is kept, or the
side that still has the file, and the path is listed). A folder deleted on one side
and changed on the other is merged file by file, as git does. A file one side renamed
(same or similar content under a new name, `renames.py`) and the other edited is
merged under its new name, as git's rename detection does; renamed on one side and
deleted (or renamed elsewhere) on the other is a conflict on the new names, as in git.
A file one side added right in a folder the other side renamed (moved every file of),
or split evenly between folders, is a conflict on the added path (and on files added
below it), left where it was added: git's "file location" and "directory rename split"
conflicts (`merge.directoryRenames=conflict`, its default), not a guess either way.

Criss-cross histories have several best common ancestors. As git's recursive merge
does, they are merged with one another first (pairwise, recursively) into a virtual
base tree that lives in memory only; a text conflict among the bases stays in it with
its markers, so both sides differ from it there and the final merge reports it. A
conflict among the bases that cannot carry markers (binary, modify/delete, type
change) leaves the path "unsettled": the final merge reports it unless both sides
agree, whatever the virtual base holds there.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from helixfs.errors import MergeConflict, NotADirectory, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.store import RefUpdate
from helixfs.vcs.ancestry import best_common, merge_bases
from helixfs.vcs.attrs import change_key, folder_entry
from helixfs.vcs.content import ContentReader, Stored, pack_bytes
from helixfs.vcs.linediff import changed_ranges
from helixfs.vcs.linkmerge import link_conflicts, settle_groups, spread_edits, touched_groups
from helixfs.vcs.links import link_id_of, once_per_group
from helixfs.vcs.objects import Tree, TreeEntry, encode_entry, uncompressed
from helixfs.vcs.refs import branch_ref
from helixfs.vcs.renames import renames
from helixfs.vcs.rootown import ROOT_PATH, merge_own
from helixfs.vcs.text import as_text
from helixfs.vcs.treeops import EMPTY_TREE_ID, Change, Trees, find, show_path

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

Objects = dict[ObjectId, bytes]


@dataclass(frozen=True)
class MergeResult:
    status: str  # "up-to-date" | "fast-forward" | "merged" | "conflicts"
    commit: CommitId | None
    conflicts: list[bytes] = field(default_factory=list)
    marked: list[bytes] = field(default_factory=list)  # the conflicts that got markers
    reasons: dict[bytes, str] = field(default_factory=dict)  # why an unmarked one is one


class MergeConflictError(MergeConflict):
    """MergeConflict with the details a caller needs to resolve it."""

    def __init__(
        self,
        message: str,
        conflicts: list[bytes],
        files: dict[bytes, bytes],
        reasons: dict[bytes, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.conflicts = conflicts
        self.files = files
        self.reasons = reasons or {}


# -- line merge ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Hunk:
    start: int  # base line range [start, end) replaced by `lines`
    end: int
    lines: Sequence[bytes]
    side: int  # 0 ours, 1 theirs


def _hunks(base: list[bytes], other: list[bytes], side: int) -> list[_Hunk]:
    return [_Hunk(i1, i2, other[j1:j2], side) for i1, i2, j1, j2 in changed_ranges(base, other)]


def merge_lines(
    base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, str] = ("ours", "theirs")
) -> tuple[bytes, bool]:
    """(merged text, clean?) of a three-way line merge; conflicts carry markers."""
    base_lines = base.splitlines(keepends=True)
    ours_lines = ours.splitlines(keepends=True)
    theirs_lines = theirs.splitlines(keepends=True)
    hunks = sorted(
        _hunks(base_lines, ours_lines, 0) + _hunks(base_lines, theirs_lines, 1),
        key=lambda h: (h.start, h.end),
    )
    out: list[bytes] = []
    clean = True
    pos = 0
    i = 0
    while i < len(hunks):
        cluster = [hunks[i]]
        end = hunks[i].end
        i += 1
        while i < len(hunks) and hunks[i].start <= end:
            cluster.append(hunks[i])
            end = max(end, hunks[i].end)
            i += 1
        start = cluster[0].start
        out.extend(base_lines[pos:start])
        pos = end
        mine = _side(base_lines, cluster, 0, start, end)
        yours = _side(base_lines, cluster, 1, start, end)
        sides = {h.side for h in cluster}
        if sides == {0} or mine == yours:
            out.extend(mine)
        elif sides == {1}:
            out.extend(yours)
        else:
            clean = False
            out.extend(_markers(mine, yours, labels))
    out.extend(base_lines[pos:])
    return b"".join(out), clean


def _side(base: list[bytes], cluster: list[_Hunk], side: int, start: int, end: int) -> list[bytes]:
    """One side's version of base[start:end], given its hunks in the cluster."""
    result: list[bytes] = []
    pos = start
    for hunk in cluster:
        if hunk.side != side:
            continue
        result.extend(base[pos : hunk.start])
        result.extend(hunk.lines)
        pos = hunk.end
    result.extend(base[pos:end])
    return result


def _markers(mine: list[bytes], yours: list[bytes], labels: tuple[str, str]) -> list[bytes]:
    def block(lines: list[bytes]) -> list[bytes]:
        if lines and not lines[-1].endswith(b"\n"):
            return [*lines[:-1], lines[-1] + b"\n"]
        return lines

    return [
        b"<<<<<<< " + labels[0].encode() + b"\n",
        *block(mine),
        b"=======\n",
        *block(yours),
        b">>>>>>> " + labels[1].encode() + b"\n",
    ]


# -- tree merge --------------------------------------------------------------------------


def _folder_or_gone(entry: TreeEntry | None) -> bool:
    return entry is None or entry.is_dir()


def _tree_of(entry: TreeEntry | None) -> ObjectId:
    return entry.oid if entry is not None else EMPTY_TREE_ID


class _Scratch:
    """What one merge builds but never writes: the virtual base's records and trees.

    Every merger of one merge reads through it, so a virtual base (or a merge of
    virtual bases) is read like a stored tree without touching the store.
    """

    def __init__(self, repo: Repository) -> None:
        self.objects: Objects = {}
        self.trees: dict[ObjectId, Tree] = {}
        self.unsettled: set[bytes] = set()  # paths the bases conflict on without markers
        self.reader = ContentReader(
            repo.content_source, pending=self.objects, records=repo.contents.records
        )


class _TreeMerger:
    def __init__(
        self,
        repo: Repository,
        labels: tuple[str, str],
        scratch: _Scratch,
        objects: Objects | None = None,
    ) -> None:
        """`objects`: where the merged records go (fresh, to be written, by default)."""
        self.repo = repo
        self.labels = labels
        self.scratch = scratch
        self.objects: Objects = {} if objects is None else objects
        self.conflicts: list[bytes] = []
        self.marked: dict[bytes, bytes] = {}
        self.reasons: dict[bytes, str] = {}  # why a conflict with no markers is one
        self.root_conflict = False  # the root's own mode or owner (reported as ".")
        self.relinked: list[bytes] = []  # names each side moved to another node
        self.now = time.time_ns()

    def _tree(self, oid: ObjectId) -> Tree:
        built = self.scratch.trees.get(oid)
        return built if built is not None else self.repo.trees.get(oid)

    def merge(self, base: ObjectId, ours: ObjectId, theirs: ObjectId, prefix: bytes) -> ObjectId:
        tb, to, tt = self._tree(base), self._tree(ours), self._tree(theirs)
        names = sorted(set(tb.names) | set(to.names) | set(tt.names))
        entries: list[TreeEntry] = []
        for name in names:
            merged = self._entry(find(tb, name), find(to, name), find(tt, name), prefix + name)
            if merged is not None:
                entries.append(merged)
        own = None if prefix else self._own(tb, to, tt)
        trees = self.repo.trees
        oid = trees.encode(entries, [encode_entry(e) for e in entries], self.objects, own=own)
        # encode just cached it; kept here too, as a virtual base tree is in no store
        self.scratch.trees[oid] = trees.get(oid)
        return oid

    def _own(self, tb: Tree, to: Tree, tt: Tree) -> TreeEntry | None:
        """The root's own mode and owner, merged; changed apart on both sides, the root
        (".") is a conflict, and ours is kept."""
        own, clean = merge_own(tb.own, to.own, tt.own)
        if not clean:
            self.root_conflict = True
            self.reasons[ROOT_PATH] = "the root's mode or owner changed on both sides"
        return own

    def _unsettled(self, path: bytes) -> bool:
        """Whether the bases conflict (without markers) at or below `path`."""
        return any(u == path or u.startswith(path + b"/") for u in self.scratch.unsettled)

    def _entry(
        self, b: TreeEntry | None, o: TreeEntry | None, t: TreeEntry | None, path: bytes
    ) -> TreeEntry | None:
        if change_key(o) == change_key(t):
            return self._linked(b, o, t, path)
        # Where the bases conflicted without markers the virtual base holds an arbitrary
        # pick: a side equal to it proves nothing, so only agreement is clean there.
        unsettled = self._unsettled(path)
        if change_key(b) == change_key(o) and not unsettled:
            return t
        if change_key(b) == change_key(t) and not unsettled:
            return o
        if o is not None and t is not None and o.is_dir() and t.is_dir():
            base = b.oid if b is not None and b.is_dir() else EMPTY_TREE_ID
            sub = self.merge(base, o.oid, t.oid, path + b"/")
            return folder_entry(o, sub, self._tree(sub).entries)
        if o is not None and t is not None and o.is_file() and t.is_file() and not unsettled:
            return self._file(b, o, t, path)
        if b is not None and b.is_dir() and _folder_or_gone(o) and _folder_or_gone(t):
            return self._deleted_folder(b, o, t, path)
        self.conflicts.append(path)  # modify/delete or a type change: keep ours, report
        return o if o is not None else t

    def _linked(
        self, b: TreeEntry | None, o: TreeEntry | None, t: TreeEntry | None, path: bytes
    ) -> TreeEntry | None:
        """The same file on both sides, merged by its link: a side that moved the name
        to another node (`rm b; ln a b`) wins over one that did not. A side whose name
        lost its group (the other names went) changed nothing of it: settle_groups
        counts the names left. Moved apart on both sides: `relinked`, judged by the
        groups' names in link_conflicts."""
        if o is None or t is None or o.xattrs == t.xattrs or o.is_dir():
            return o
        lb = None if b is None or b.is_dir() else link_id_of(b.xattrs)
        lo, lt = link_id_of(o.xattrs), link_id_of(t.xattrs)
        if lo == lt:
            return o
        ours, theirs = lo is not None and lo != lb, lt is not None and lt != lb
        if ours and theirs:
            self.relinked.append(path)
            return o
        return t if theirs or lo is None else o

    def _deleted_folder(
        self, b: TreeEntry, o: TreeEntry | None, t: TreeEntry | None, path: bytes
    ) -> TreeEntry | None:
        """A folder one side deleted and the other changed: merged file by file, as git
        does, so only a file the other side edited conflicts (there, not on the folder)
        and the files it never touched stay deleted."""
        kept = o if o is not None else t
        assert kept is not None  # both gone is agreement, settled before
        sub = self.merge(b.oid, _tree_of(o), _tree_of(t), path + b"/")
        if sub == EMPTY_TREE_ID:
            return None
        return folder_entry(kept, sub, self._tree(sub).entries)

    def follow_renames(self, base: ObjectId, sides: Sequence[_Side], merged: ObjectId) -> ObjectId:
        """A file one side renamed and the other edited was a modify/delete conflict:
        the edit now follows the file to its new name, as with git's rename detection."""
        trees = self.repo.trees
        moves: dict[bytes, tuple[bytes, ObjectId, bool]] = {}
        conflicts = set(self.conflicts)
        for one, is_ours in zip(sides, (True, False), strict=True):
            for old, new in renames(self.scratch.reader, one.changes, conflicts).items():
                moves.setdefault(old, (new, one.tree, is_ours))
        changes: dict[bytes, Stored | None] = {}
        followed: list[tuple[bytes, ObjectId]] = []  # (old path, the side that moved it)
        for old, (new, side, is_ours) in moves.items():
            # the version the other side edited, which the conflict kept at the old name
            b, kept = _entry_at(trees, base, old), _entry_at(trees, merged, old)
            if new in self.conflicts or kept is None or not kept.is_file() or b is None:
                continue  # the new name conflicts on its own, or the edit was no file
            moved = _entry_at(trees, side, new)
            assert moved is not None
            o, t = (moved, kept) if is_ours else (kept, moved)
            if b.oid == o.oid or b.oid == t.oid:  # one side kept the content: no line merge
                result = t if b.oid == o.oid else o
            else:
                result = self._file(b, o, t, new)
            if new in self.conflicts and new not in self.marked:
                self.conflicts.remove(new)  # binary: no markers can hold both edits,
                continue  # so it stays a modify/delete conflict, both versions kept
            self.conflicts.remove(old)
            changes[old] = None
            changes[new] = Stored(result.oid, result.size, {})
            followed.append((old, side))
        if changes:
            merged = trees.apply(merged, changes, self.objects)
        for old, side in followed:
            merged = self._prune(merged, side, old)
        return merged

    def rename_clashes(self, sides: Sequence[_Side]) -> None:
        """A file both sides removed from its old path merges cleanly by entries. But if
        one side renamed it, the other's delete (or its rename elsewhere) disagrees: git
        reports rename/delete and rename/rename conflicts, and so do we, on the new
        names, which stay in the tree. Renamed alike on both sides is clean."""
        ours, theirs = sides
        gone = ours.deleted() & theirs.deleted()
        if not gone:
            return
        mine = renames(self.scratch.reader, ours.changes, gone)
        yours = renames(self.scratch.reader, theirs.changes, gone)
        for old in sorted(set(mine) | set(yours)):
            if mine.get(old) == yours.get(old):
                continue
            for new in sorted({n for n in (mine.get(old), yours.get(old)) if n is not None}):
                if new not in self.conflicts:
                    self.conflicts.append(new)

    def added_in_moved_folders(self, base: ObjectId, sides: Sequence[_Side]) -> None:
        """Report a file one side added in a folder that the other side renamed: merged
        by entries, it would sit alone in a folder every other file left."""
        trees = self.repo.trees
        for mover, adder, label in zip(sides, sides[::-1], self.labels, strict=True):
            added = [c.path for c in adder.changes if c.status == "A"]
            # As git (ort) does, a folder's rename is looked for only where a file was
            # added right in it: one added in a subfolder new on its side asks nothing.
            asked = {
                folder
                for folder in {path.rpartition(b"/")[0] for path in added}
                if folder
                and _emptied(trees, mover.tree, folder)
                and _entry_at(trees, base, folder) is not None
            }
            if not asked:
                continue  # the common case: no rename to look for
            moved = renames(self.scratch.reader, mover.changes, mover.deleted())
            went = {f: d for f in asked if (d := _destinations(f, moved))}
            for path in added:
                # the nearest renamed folder above it, as git's check_dir_renamed finds
                folder = next((f for f in reversed(_folders(path)) if f in went), None)
                if folder is not None and path not in self.conflicts:
                    self.conflicts.append(path)
                    self.reasons[path] = f"added in {show_path(folder)}/, " + _where_it_went(
                        label, went[folder]
                    )

    def _prune(self, merged: ObjectId, side: ObjectId, path: bytes) -> ObjectId:
        """The folders a followed rename emptied go, where the renaming side has none:
        it moved the whole folder, and the conflict alone had kept it."""
        trees = self.repo.trees
        parent = path.rpartition(b"/")[0]
        while parent:
            entry = _entry_at(trees, merged, parent)
            if entry is None or not entry.is_dir() or trees.get(entry.oid).entries:
                break
            if _entry_at(trees, side, parent) is not None:
                break
            merged = trees.apply(merged, {parent: None}, self.objects)
            parent = parent.rpartition(b"/")[0]
        return merged

    def _file(self, b: TreeEntry | None, o: TreeEntry, t: TreeEntry, path: bytes) -> TreeEntry:
        read = self.scratch.reader.read
        base = read(b.oid) if b is not None and b.is_file() else b""
        ours, theirs = read(o.oid), read(t.oid)
        if any(as_text(x) is None for x in (base, ours, theirs)):
            self.conflicts.append(path)
            return o
        merged, clean = merge_lines(base, ours, theirs, self.labels)
        if not clean:
            self.conflicts.append(path)
            self.marked[path] = merged
        stored = pack_bytes(merged)
        self.objects.update(stored.objects)
        mode = (
            o.mode
            if o.mode == t.mode
            else (t.mode if b is not None and o.mode == b.mode else o.mode)
        )
        return TreeEntry(o.name, mode, stored.oid, stored.size, self.now, o.xattrs)


def _entry_at(trees: Trees, root: ObjectId, path: bytes) -> TreeEntry | None:
    try:
        return trees.entry(root, path)
    except (NotFound, NotADirectory):
        return None


def _emptied(trees: Trees, root: ObjectId, folder: bytes) -> bool:
    """Gone, or left empty (moving files out through the API keeps their folder)."""
    entry = _entry_at(trees, root, folder)
    return entry is None or (entry.is_dir() and entry.oid == EMPTY_TREE_ID)


def _shown_folder(folder: bytes) -> str:
    return f"{show_path(folder)}/" if folder else "the root"


def _folders(path: bytes) -> list[bytes]:
    """The folders above `path`: `a/b/c` -> `a`, `a/b`."""
    parts = path.split(b"/")[:-1]
    return [b"/".join(parts[: n + 1]) for n in range(len(parts))]


def _destinations(folder: bytes, moved: dict[bytes, bytes]) -> list[bytes]:
    """Where `folder` went, judged by its files' renames as git does: the folder that
    received the most of them; several when they tie (git's "directory rename split",
    a conflict too); none when no file of it was renamed."""
    prefix = folder + b"/"
    votes: Counter[bytes] = Counter()
    for old, new in moved.items():
        rest = old[len(prefix) :]
        if old.startswith(prefix) and new == rest:
            votes[b""] += 1  # its files went up to the root
        elif old.startswith(prefix) and new.endswith(b"/" + rest):
            votes[new[: -len(rest) - 1]] += 1
    most = max(votes.values(), default=0)
    return sorted(place for place, count in votes.items() if count == most) if most else []


def _where_it_went(label: str, places: list[bytes]) -> str:
    if len(places) == 1:
        return f"which {label} renamed to {_shown_folder(places[0])}"
    return f"which {label} split between " + " and ".join(map(_shown_folder, places))


class _Side(NamedTuple):
    """One side of a merge: its tree and that tree's changes against the base."""

    tree: ObjectId
    changes: list[Change]

    def deleted(self) -> set[bytes]:
        return {c.path for c in self.changes if c.status == "D"}


def _base_tree(repo: Repository, bases: list[CommitId], scratch: _Scratch) -> ObjectId:
    """The tree to merge against: the best base's, or several merged into a virtual one.

    git's recursive merge: taking one of several best bases (the newest, once) loses
    what the others changed, e.g. a revert on one side of a criss-cross. The bases are
    merged one by one (oldest first, for a stable result), each pair against their own
    best bases, recursively; the result and its records stay in `scratch`.
    """
    if not bases:
        return EMPTY_TREE_ID
    ordered = sorted(bases, key=lambda cid: (repo.commit_info(cid).time_ns, cid))
    tree = repo.commit_info(ordered[0]).tree
    merged = [ordered[0]]  # the commits the virtual base so far descends from
    for other in ordered[1:]:
        inner = _base_tree(repo, best_common(repo, merged, other), scratch)
        labels = ("merged bases", f"base {hex_id(other)[:12]}")
        merger = _TreeMerger(repo, labels, scratch, objects=scratch.objects)
        tree = merger.merge(inner, tree, repo.commit_info(other).tree, b"")
        # text conflicts keep their markers in the virtual base; the rest cannot
        scratch.unsettled.update(p for p in merger.conflicts if p not in merger.marked)
        merged.append(other)
    return tree


def merge_branches(
    repo: Repository, branch: str, target: str, message: str | None, allow_conflicts: bool
) -> MergeResult:
    theirs = repo.resolve(branch)
    ours = repo.resolve(f"branches/{target}")
    bases = merge_bases(repo, ours, theirs)
    if theirs in bases:  # then it is the only one
        return MergeResult("up-to-date", ours)
    if ours in bases:
        objects: dict[ObjectId, bytes] = {}
        refs = [
            RefUpdate(branch_ref(target), theirs, expected=ours),
            repo.work_follows(target, ours, theirs, objects),
        ]
        repo.store.write(objects, refs, uncompressed=uncompressed(objects))
        return MergeResult("fast-forward", theirs)
    scratch = _Scratch(repo)
    base_tree = _base_tree(repo, bases, scratch)
    ours_tree, theirs_tree = repo.commit_info(ours).tree, repo.commit_info(theirs).tree
    merger, tree = merge_trees(repo, (base_tree, ours_tree, theirs_tree), (target, branch), scratch)
    if merger.conflicts and not allow_conflicts:
        raise MergeConflictError(
            f"merging {branch!r} into {target!r} conflicts in {conflict_list(merger)}; nothing"
            " was changed (resolve, or merge with conflicts allowed to commit the marked files)",
            merger.conflicts,
            merger.marked,
            merger.reasons,
        )
    meta: dict[str, object] = {"merge": branch}
    if merger.conflicts:
        meta["conflicts"] = [p.decode("utf-8", "surrogateescape") for p in merger.conflicts]
    text = message or f"merge {branch} into {target}"
    cid = repo.write_commit(target, tree, [ours, theirs], text, meta, merger.objects)
    status = "conflicts" if merger.conflicts else "merged"
    return MergeResult(status, cid, merger.conflicts, list(merger.marked), merger.reasons)


def merge_trees(
    repo: Repository,
    trees: tuple[ObjectId, ObjectId, ObjectId],
    labels: tuple[str, str],
    scratch: _Scratch | None = None,
) -> tuple[_TreeMerger, ObjectId]:
    """The three-way merge of (base, ours, theirs) trees: the merger (its conflicts, the
    records to write) and the merged tree. Shared by merge, revert and cherry-pick."""
    base_tree, ours_tree, theirs_tree = trees
    merger = _TreeMerger(repo, labels, scratch if scratch is not None else _Scratch(repo))
    tree = merger.merge(base_tree, ours_tree, theirs_tree, b"")
    if repo.store.contains(base_tree):  # not a virtual base
        sides = [_Side(t, list(repo.trees.diff(base_tree, t))) for t in (ours_tree, theirs_tree)]
        if merger.conflicts:
            tree = merger.follow_renames(base_tree, sides, tree)
        merger.rename_clashes(sides)
        merger.added_in_moved_folders(base_tree, sides)
        pairs = [(side.tree, side.changes) for side in sides]
        tree, linked = spread_edits(repo.trees, pairs, tree, merger.objects)
        for path in linked:
            if path not in merger.conflicts:
                merger.conflicts.append(path)
                merger.reasons[path] = "a hard-linked file edited apart under two of its names"
        touched = touched_groups(c for side in sides for c in side.changes)
        tree = settle_groups(repo.trees, tree, touched, merger.objects)
    for path in link_conflicts(repo.trees, ours_tree, theirs_tree, merger.relinked):
        if path not in merger.conflicts:
            merger.conflicts.append(path)
            merger.reasons[path] = "hard-linked to different files on the two sides"
    merger.conflicts = once_per_group(merger.conflicts, lambda p: _entry_at(repo.trees, tree, p))
    if merger.root_conflict:
        merger.conflicts.insert(0, ROOT_PATH)
    return merger, tree


def conflict_list(merger: _TreeMerger) -> str:
    """`N path(s): a, b (why)`: the first ten conflicts of a merge, for its message."""
    shown = ", ".join(
        show_path(p) + (f" ({merger.reasons[p]})" if p in merger.reasons else "")
        for p in merger.conflicts[:10]
    )
    return f"{len(merger.conflicts)} path(s): {shown}"
