"""Operations on stored trees: lookup, path copying, diff, what commits leave out.

Trees are immutable and content-addressed, so decoded trees are cached by id without
any invalidation, and a change to one path re-encodes only the directories on its way
to the root (path copying): the rest of the tree is shared by id.
"""

from __future__ import annotations

import bisect
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, Union

from helixfs.errors import InvalidInput, IsADirectory, NotADirectory, NotFound
from helixfs.ids import ObjectId, object_id
from helixfs.store import ObjectStore, Patch
from helixfs.vcs.attrs import change_key, folder_entry
from helixfs.vcs.content import Stored
from helixfs.vcs.ephemeral import is_ephemeral
from helixfs.vcs.ignore import (
    EXCLUDE_PATH,
    GIT_DIR,
    NO_RULES,
    RULE_FILES,
    RULES_MAX,
    RuleFiles,
    Rules,
    Scope,
)
from helixfs.vcs.links import relinked, without_new_names
from helixfs.vcs.objects import (
    ENTRY_FIXED_BYTES,
    FLAT_MAX,
    KIND_PAGED,
    KIND_ROOT,
    MODE_DIR,
    MODE_FILE,
    NUL,
    TREE_HEAD_BYTES,
    Tree,
    TreeEntry,
    decode_paged,
    decode_root,
    decode_tree,
    encode_entry,
    encode_paged,
    encode_tree_raw,
    entry_bytes,
    join_pages,
    kind_of,
    root_record,
)
from helixfs.vcs.pages import pages_of, repage, write_pages
from helixfs.vcs.text import show_path as show_path  # re-exported: the vcs imports it here

EMPTY_TREE_RECORD = encode_tree_raw([])
EMPTY_TREE_ID = object_id(EMPTY_TREE_RECORD)
EMPTY_TREE = Tree((), (), ())
ROOT_PATH = b"."  # how a change of the root's own mode or owner is listed (ADR 0044)
CONTROL_DIR = b".helix"
"""The root name a mount serves as its virtual folder: never an entry of a root tree."""
# Decoded trees kept, counted in bytes (`tree_bytes`). Counted in trees, 4,096 trees of
# a `.git/objects` (256 entries each) held ~370 MB (QA soak); counted in entries, one
# directory bigger than the budget was kept whole, over it.
CACHED_BYTES = 56 << 20
# What one decoded entry holds beyond its encoding and name (tracemalloc, CPython 3.11):
# the TreeEntry (~100), its id (65), name and raw bytes headers (2 x 33), mtime and
# size ints (~60), a slot in each of the tree's three tuples (24) and ~25 more.
ENTRY_BYTES = 315
# Folder records this long or longer are described to the store as a patch on their
# previous version when path copying changed entries in place (ADR 0095): below it the
# log's bytes a patch saves cost less than the patch (a 10-entry folder's 700 bytes).
PATCH_FROM = 2048
# Memo tables keyed by tree id. Every save of a work tree makes new ids (one per folder
# on the changed path), so unbounded they grew for as long as a mount lived. A dropped
# memo is only recomputed.
MEMO_KEPT = 65536

K = TypeVar("K")
V = TypeVar("V")

Objects = dict[ObjectId, bytes]
Patches = dict[ObjectId, Patch]
Nested = dict[bytes, Union["Nested", Stored, TreeEntry, None]]


def split_path(path: bytes | str) -> list[bytes]:
    """Components of a relative path; b"" is the root. Refuses `.`, `..`, NUL and `//`."""
    if isinstance(path, str):
        path = path.encode("utf-8", "surrogateescape")
    if not isinstance(path, bytes):
        raise InvalidInput(f"path must be bytes or str, got {type(path).__name__}")
    path = path.strip(b"/")
    if not path:
        return []
    parts = path.split(b"/")
    # the whole path's checks at C speed first (a commit splits each path twice): a
    # part is looked at one by one only to name what is wrong
    if (
        NUL in path
        or b"" in parts
        or b"." in parts
        or b".." in parts
        or (len(path) > 255 and max(map(len, parts)) > 255)
    ):
        for part in parts:
            if not part or part in (b".", b"..") or NUL in part or len(part) > 255:
                raise InvalidInput(f"invalid path {show_path(path)[:200]!r}: {_why(part)}")
    return parts


def _why(part: bytes) -> str:
    if part in (b".", b".."):
        return "a path is relative to the root, without '.' or '..'"
    if not part:
        return "it has an empty component ('//')"
    if NUL in part:
        return "it holds a NUL byte"
    return "a name is longer than 255 bytes"


@dataclass(frozen=True, slots=True)
class Change:
    """One path that differs between two trees. status: A(dded), D(eleted), M(odified)."""

    status: str
    path: bytes
    old: TreeEntry | None
    new: TreeEntry | None


class Trees:
    """Decoded-tree cache over a store, plus the tree algorithms that use it."""

    def __init__(self, store: ObjectStore, limit: int = CACHED_BYTES) -> None:
        self.store = store
        self._cache: dict[ObjectId, Tree] = {EMPTY_TREE_ID: EMPTY_TREE}
        self._costs: dict[ObjectId, int] = {EMPTY_TREE_ID: 0}  # tree_bytes of each
        self._limit = limit  # bytes, summed over the cached trees
        self._cached = 0
        # (tree, Scope.key) whose commit filter drops nothing: no temp name, nothing ignored
        self._clean: dict[tuple[ObjectId, object], None] = {}
        self._filtered: dict[tuple[ObjectId, ObjectId | None, object], ObjectId] = {}
        self.rule_files: RuleFiles | None = None  # set by the Repository (it reads contents)

    def get(self, oid: ObjectId) -> Tree:
        """A directory listing; a paged tree comes back whole, its pages in `pages`."""
        tree = self._cache.get(oid)
        if tree is None:
            record = self.store.get(oid)
            kind = kind_of(record)
            if kind == KIND_ROOT:
                own = decode_root(record)
                tree = self.get(own.oid)._replace(own=own)
                self.remember(oid, tree)
            elif kind == KIND_PAGED:
                pages = decode_paged(record)
                tree = join_pages(pages, [decode_tree(self.store.get(p)) for p, _ in pages])
                self.remember(oid, tree)
            else:
                tree = decode_tree(record)
                self.remember(oid, tree, len(record))
        return tree

    def cached(self, oid: ObjectId) -> Tree | None:
        """The decoded tree `oid` if the cache holds it (nothing is read)."""
        return self._cache.get(oid)

    @property
    def cached_bytes(self) -> int:
        return self._cached

    def remember(self, oid: ObjectId, tree: Tree, flat_size: int | None = None) -> None:
        """Cache a decoded tree; over the budget, the oldest quarter of it goes (or more,
        for a big tree). A tree bigger than the whole budget is not kept: it would flush
        everything else and still not fit. `flat_size`: the length of its record, when
        that is flat (the entries need not be summed then)."""
        if oid in self._cache:
            return
        if flat_size is None:
            size = tree_bytes(tree)
        else:  # flat_tree_bytes, inline: every commit sizes each tree it makes
            size = 2 * (flat_size - TREE_HEAD_BYTES) + _FLAT_ENTRY_BYTES * len(tree.raw)
        if size > self._limit:
            return
        if self._cached + size > self._limit:
            self._evict(max(self._cached + size - self._limit, self._limit // 4))
        self._cache[oid] = tree
        self._costs[oid] = size
        self._cached += size

    def _evict(self, wanted: int) -> None:
        """Drop the oldest trees until `wanted` bytes are freed."""
        freed, stale = 0, []
        for old in self._cache:
            if freed >= wanted:
                break
            stale.append(old)
            freed += self._costs[old]
        for old in stale:
            del self._cache[old], self._costs[old]
        self._cached -= freed

    def encode(
        self,
        entries: Sequence[TreeEntry],
        raws: Sequence[bytes],
        objects: Objects,
        names: Sequence[bytes] | None = None,
        *,
        previous: Tree | None = None,
        changed: Iterable[bytes] = (),
        own: TreeEntry | None = None,
    ) -> ObjectId:
        """Store a tree (into `objects`) from entries already sorted by name.

        A big one is paged. Given the `previous` tree and the names it `changed`, only
        the pages holding those names are rewritten; others are not even re-encoded.
        `own`: a root's own attributes (`Tree.own`), wrapped around the listing.
        """
        if names is None:
            names = [e.name for e in entries]
        pages: tuple[tuple[ObjectId, int], ...] = ()
        if len(raws) <= FLAT_MAX:
            record = encode_tree_raw(raws)
        else:
            kept = pages_of(previous, pure=True) if previous is not None else None
            new = repage(
                kept,
                names,
                _itself,
                changed,
                lambda start, stop: write_pages(
                    names[start:stop], raws[start:stop], objects, self.store.contains
                ),
            )
            pages = tuple((page.oid, page.count) for page in new)
            record = encode_paged(pages)
        oid = object_id(record)
        objects[oid] = record
        flat_size = None if pages else len(record)
        tree = Tree(tuple(entries), tuple(names), tuple(raws), pages)
        self.remember(oid, tree, flat_size)
        return oid if own is None else self.rooted(oid, own, objects, tree)

    def encode_flat(
        self,
        entries: tuple[TreeEntry, ...],
        raws: tuple[bytes, ...],
        names: tuple[bytes, ...],
        objects: Objects,
    ) -> ObjectId:
        """`encode` of a flat tree (at most FLAT_MAX entries) without own attributes."""
        record = encode_tree_raw(raws)
        oid = object_id(record)
        objects[oid] = record
        self.remember(oid, Tree(entries, names, raws), len(record))
        return oid

    def rooted(
        self, listing: ObjectId, own: TreeEntry | None, objects: Objects, tree: Tree | None = None
    ) -> ObjectId:
        """A root's id: its listing's, or a root record holding `own` as well (ADR 0044)."""
        if own is None:
            return listing
        record = root_record(listing, own.mode, own.xattrs)
        oid = object_id(record)
        objects[oid] = record
        listed = tree or self._cache.get(listing)
        if listed is not None:
            self.remember(oid, listed._replace(own=own))
        return oid

    def listed(self, oid: ObjectId, objects: Mapping[ObjectId, bytes]) -> tuple[TreeEntry, ...]:
        """The entries of a tree just built: cached, in `objects` (not written yet), or
        in the store."""
        tree = self._cache.get(oid)
        if tree is not None:
            return tree.entries
        record = objects.get(oid)
        if record is None:
            return self.get(oid).entries
        if kind_of(record) == KIND_ROOT:
            return self.listed(decode_root(record).oid, objects)
        if kind_of(record) == KIND_PAGED:
            return tuple(e for page, _ in decode_paged(record) for e in self.listed(page, objects))
        return decode_tree(record).entries

    def build(
        self, entries: list[TreeEntry], objects: Objects, own: TreeEntry | None = None
    ) -> ObjectId:
        entries = sorted(entries, key=lambda e: e.name)
        return self.encode(entries, [encode_entry(e) for e in entries], objects, own=own)

    # -- lookup ---------------------------------------------------------------------

    def entry(self, root: ObjectId, path: bytes | str) -> TreeEntry | None:
        """The entry at `path` (None for the root itself). NotFound / NotADirectory."""
        parts = split_path(path)
        found: TreeEntry | None = None
        tree_oid = root
        for depth, name in enumerate(parts):
            if found is not None and not found.is_dir():
                raise NotADirectory(f"{show_path(b'/'.join(parts[:depth]))} is not a directory")
            found = find(self.get(tree_oid), name)
            if found is None:
                raise NotFound(f"no such path: {show_path(b'/'.join(parts))}")
            tree_oid = found.oid
        return found

    def listing(self, root: ObjectId, path: bytes | str) -> Tree:
        entry = self.entry(root, path)
        if entry is None:
            return self.get(root)
        if not entry.is_dir():
            raise NotADirectory(f"{show_path(entry.name)} is not a directory")
        return self.get(entry.oid)

    def file_entry(self, root: ObjectId, path: bytes | str) -> TreeEntry:
        entry = self.entry(root, path)
        if entry is None or entry.is_dir():
            raise IsADirectory(f"{show_path(entry.name if entry else b'/')} is a directory")
        return entry

    def walk(self, root: ObjectId, prefix: bytes = b"") -> Iterator[tuple[bytes, TreeEntry]]:
        """Every entry below `root`, depth first, with its full path."""
        for entry in self.get(root).entries:
            path = prefix + entry.name
            yield path, entry
            if entry.is_dir():
                yield from self.walk(entry.oid, path + b"/")

    # -- path copying -----------------------------------------------------------------

    def apply(
        self,
        root: ObjectId,
        changes: Mapping[bytes, Stored | TreeEntry | None],
        objects: Objects,
        mtime_ns: int | None = None,
        bases: dict[ObjectId, ObjectId] | None = None,
        replaced: list[TreeEntry] | None = None,
        patches: Patches | None = None,
    ) -> ObjectId:
        """The root id after writing/deleting `changes` (path -> content, a whole entry
        to put there, or None). `replaced` learns the entries the changed paths held
        (the walk finds them anyway: a commit asks them for their link groups).

        New tree records go to `objects`; cost is proportional to the changed paths.
        `bases` learns, per new file content, the one it replaces (a delta base hint);
        `patches`, per big folder record whose entries changed in place, the bytes it
        shares with the record it replaces (the store's `patches` hint, ADR 0095).
        """
        nested: Nested = {}
        for path, change in changes.items():
            parts = split_path(path)
            if not parts:
                what = "delete" if change is None else "write as a file"
                raise InvalidInput(f"cannot {what} the root directory")
            node = nested
            for depth, part in enumerate(parts[:-1]):
                sub = node.setdefault(part, {})
                if not isinstance(sub, dict):
                    raise InvalidInput(
                        f"{show_path(b'/'.join(parts[: depth + 1]))} is both a file and a "
                        "directory in one commit"
                    )
                node = sub
            if isinstance(node.get(parts[-1]), dict):
                raise InvalidInput(f"{show_path(path)} is both a file and a directory")
            if parts[-1] in node:  # `a` and `/a`, or a write and a delete: which wins?
                raise InvalidInput(f"{show_path(path)} is changed twice in one commit")
            node[parts[-1]] = change
        now = mtime_ns if mtime_ns is not None else time.time_ns()
        found = {} if bases is None else bases
        return self._apply(root, nested, objects, now, b"", found, replaced, patches)[0]

    def _apply(
        self,
        oid: ObjectId,
        nested: Nested,
        objects: Objects,
        now: int,
        prefix: bytes,
        bases: dict[ObjectId, ObjectId],
        replaced: list[TreeEntry] | None = None,
        patches: Patches | None = None,
    ) -> tuple[ObjectId, bool]:
        """Tree `oid` with `nested` applied: the new id, and whether its count of
        subfolders may differ (a delete, a change inside a folder it did not hold, a whole
        folder's entry put in or over a file), so the folder entry above counts them again."""
        tree = self.get(oid)
        # names change only by an insert or a delete: the tuple is shared until one does
        names: Sequence[bytes] = tree.names
        entries, raws = list(tree.entries), list(tree.raw)
        reshaped = False
        first = last = -1  # the span of entries replaced in place (for a patch)
        for name, change in nested.items():
            i = bisect.bisect_left(names, name)
            old = entries[i] if i < len(names) and names[i] == name else None
            path = prefix + name
            if change is None:
                if old is None:
                    raise NotFound(f"cannot delete {show_path(path)}: no such path")
                if replaced is not None:
                    replaced.append(old)
                names = names if isinstance(names, list) else list(names)
                del names[i], entries[i], raws[i]
                reshaped = True
                continue
            if isinstance(change, dict):
                reshaped = reshaped or old is None
            elif replaced is not None and old is not None:
                replaced.append(old)
            new = self._new_entry(name, old, change, objects, now, path, bases, replaced, patches)
            if isinstance(change, TreeEntry) and new.is_dir() != (old is not None and old.is_dir()):
                reshaped = True  # a whole folder's entry put where no folder was, or the reverse
            if old is None:
                names = names if isinstance(names, list) else list(names)
                names.insert(i, name)
                entries.insert(i, new)
                raws.insert(i, entry_bytes(new))  # its name passed split_path
            else:
                entries[i] = new
                raws[i] = entry_bytes(new)
                first = i if first < 0 else min(first, i)
                last = max(last, i)
        if tree.own is None and len(raws) <= FLAT_MAX:
            listing = self.encode_flat(tuple(entries), tuple(raws), tuple(names), objects)
        else:
            listing = self.encode(
                entries, raws, objects, names, previous=tree, changed=nested, own=tree.own
            )
        if patches is not None and first >= 0 and names is tree.names:
            patch_hint(patches, oid, tree, listing, raws, first, last, objects)
        return listing, reshaped

    def _new_entry(
        self,
        name: bytes,
        old: TreeEntry | None,
        change: Nested | Stored | TreeEntry,
        objects: Objects,
        now: int,
        path: bytes,
        bases: dict[ObjectId, ObjectId],
        replaced: list[TreeEntry] | None = None,
        patches: Patches | None = None,
    ) -> TreeEntry:
        if isinstance(change, TreeEntry):
            return change._replace(name=name)  # its records are stored already
        if isinstance(change, dict):
            if old is not None and not old.is_dir():
                raise NotADirectory(f"{show_path(path)} is a file, not a directory")
            base = old.oid if old else EMPTY_TREE_ID
            sub, reshaped = self._apply(
                base, change, objects, now, path + b"/", bases, replaced, patches
            )
            if old is not None and sub == old.oid:
                return old
            mode = old.mode if old else MODE_DIR
            made = TreeEntry(name, mode, sub, 0, now, old.xattrs if old else ())
            if old is not None and not reshaped:
                return made  # files written, folders it had changed: the same count
            return folder_entry(made, sub, self.listed(sub, objects))
        if old is not None and old.is_dir():
            # the reverse is refused above; a filesystem says EISDIR too
            raise IsADirectory(f"{show_path(path)} is a directory, not a file")
        objects.update(change.objects)
        if old is not None and old.is_file():
            if old.oid == change.oid:
                return old  # same content: keep the entry (and its mtime): the tree is equal
            if change.oid in change.objects:  # not a streamed file's index already stored
                bases[change.oid] = old.oid
        mode = old.mode if old is not None and old.is_file() else MODE_FILE
        xattrs = old.xattrs if old is not None and old.is_file() else ()
        return TreeEntry(name, mode, change.oid, change.size, now, xattrs)

    # -- diff -------------------------------------------------------------------------

    def diff(self, old: ObjectId, new: ObjectId, prefix: bytes = b"") -> Iterator[Change]:
        """Changed files between two trees, sorted by path; equal subtrees are skipped.
        A name moved to another file's node is a change (`M`), a new name is not a
        change of the names it joins (ADR 0043)."""
        return without_new_names(self._diff(old, new, prefix))

    def _diff(self, old: ObjectId, new: ObjectId, prefix: bytes) -> Iterator[Change]:
        if old == new:
            return
        a, b = self.get(old).entries, self.get(new).entries
        i = j = 0
        while i < len(a) or j < len(b):
            ea = a[i] if i < len(a) else None
            eb = b[j] if j < len(b) else None
            if eb is None or (ea is not None and ea.name < eb.name):
                yield from self._one_side("D", ea, prefix)  # type: ignore[arg-type]
                i += 1
            elif ea is None or eb.name < ea.name:
                yield from self._one_side("A", eb, prefix)
                j += 1
            else:
                yield from self._pair(ea, eb, prefix)
                i += 1
                j += 1

    def changed_paths(self, old: ObjectId, new: ObjectId, prefix: bytes = b"") -> Iterator[bytes]:
        """Every path whose entry differs in any way (mtimes too), outermost first: a
        directory added or removed is one path. Complete, so a commit's `changed` list
        built from it answers "did this commit touch X" without decoding trees."""
        if old == new:
            return
        a, b = self.get(old), self.get(new)
        if not prefix and _own_key(a) != _own_key(b):
            yield ROOT_PATH  # the root's own mode or owner (ADR 0044)
        for name in sorted(set(a.names) | set(b.names)):
            ea, eb = find(a, name), find(b, name)
            if ea == eb:
                continue
            path = prefix + name
            if ea is None or eb is None or ea.is_dir() != eb.is_dir() or not ea.is_dir():
                yield path
                continue
            if (ea.mode, ea.xattrs, ea.mtime_ns) != (eb.mode, eb.xattrs, eb.mtime_ns):
                yield path
            yield from self.changed_paths(ea.oid, eb.oid, path + b"/")

    def _pair(self, ea: TreeEntry, eb: TreeEntry, prefix: bytes) -> Iterator[Change]:
        path = prefix + ea.name
        if ea.is_dir() and eb.is_dir():
            yield from self._diff(ea.oid, eb.oid, path + b"/")
        elif ea.is_dir() or eb.is_dir():
            yield from self._one_side("D", ea, prefix)
            yield from self._one_side("A", eb, prefix)
        elif change_key(ea) != change_key(eb) or (ea.xattrs != eb.xattrs and relinked(ea, eb)):
            yield Change("M", path, ea, eb)

    def _one_side(self, status: str, entry: TreeEntry, prefix: bytes) -> Iterator[Change]:
        path = prefix + entry.name
        if not entry.is_dir():
            yield Change(
                status, path, entry if status == "D" else None, entry if status == "A" else None
            )
            return
        for sub_path, sub in self.walk(entry.oid, path + b"/"):
            if not sub.is_dir():
                yield Change(
                    status, sub_path, sub if status == "D" else None, sub if status == "A" else None
                )

    # -- ephemeral filtering ------------------------------------------------------------

    def forget_results(self) -> None:
        """gc deleted objects: a filtered tree memoised here may be among them, and a
        memo hit returns it without writing it again (ids that merely describe content,
        as `_clean` and the decoded trees do, stay true)."""
        self._filtered.clear()

    def mark_clean(self, oid: ObjectId, outer: Scope = NO_RULES) -> None:
        """`oid`, under the rules `outer` it inherits, holds nothing a commit leaves out
        (no editor temp name, nothing ignored), even below."""
        _keep(self._clean, (oid, outer.key), None, MEMO_KEPT)

    def rules_in(self, tree: Tree) -> Rules | None:
        """The ignore rules of a stored folder: its `.gitignore` and `.helixignore`
        (regular files only, as git reads them), compiled once per content."""
        if self.rule_files is None:
            return None
        ids = []
        for name in RULE_FILES:
            entry = find(tree, name)
            usable = entry is not None and stat.S_ISREG(entry.mode) and entry.size <= RULES_MAX
            ids.append(entry.oid if usable and entry is not None else None)
        return self.rule_files.rules(tuple(ids))

    def scope_in(self, tree: Tree, outer: Scope) -> Scope:
        """The rules in force for a stored folder's children, `outer` those it inherits:
        its own rule files', and when it is a repository's root (it holds `.git`, or it
        is the tree's root) that repository's exclude files (ADR 0061)."""
        rules = self.rules_in(tree)
        git = find(tree, GIT_DIR)
        if self.rule_files is None or (git is None and outer.base is not None):
            return outer.with_rules(rules)
        return outer.with_rules(rules, self.rule_files.repo(self._exclude_in(git)))

    def _exclude_in(self, git: TreeEntry | None) -> ObjectId | None:
        """The content id of `.git/info/exclude` below a `.git` entry, if a regular file."""
        entry = git
        for name in EXCLUDE_PATH:
            if entry is None or not entry.is_dir():
                return None
            entry = find(self.get(entry.oid), name)
        usable = entry is not None and stat.S_ISREG(entry.mode) and entry.size <= RULES_MAX
        return entry.oid if usable and entry is not None else None

    def without_ephemeral(
        self,
        oid: ObjectId,
        objects: Objects,
        tracked: ObjectId | None = None,
        outer: Scope = NO_RULES,
    ) -> ObjectId:
        """The same tree minus what a commit leaves out that `tracked` (the head
        commit's tree at this place) does not hold: editor temp files (ADR 0019) and
        paths the ignore rules match (ADR 0061: `outer`, the rules of the folders above,
        plus this folder's own). As with git, a committed file stays committed whatever
        its name. Memoised by ids and scope (they never change)."""
        if oid in (tracked, EMPTY_TREE_ID) or (oid, outer.key) in self._clean:
            return oid
        done = self._filtered.get((oid, tracked, outer.key))
        if done is not None:
            return done
        tree = self.get(oid)
        head = self.get(tracked) if tracked is not None else None
        scope = self.scope_in(tree, outer)
        entries, raws, changed = [], [], []
        for entry, raw in zip(tree.entries, tree.raw, strict=True):
            name = entry.name
            if entry.is_dir():
                inner = scope.below(name)
                there = subtree(head, name)
                if inner.everything and there is None:
                    changed.append(name)  # an ignored folder nothing of is committed
                    continue
                sub = self.without_ephemeral(entry.oid, objects, there, inner)
                if sub != entry.oid:  # its subfolder count too: ignored ones may be gone
                    entry = folder_entry(entry, sub, self.listed(sub, objects))
                    raw = encode_entry(entry)
                    changed.append(name)
            elif kept_out(scope, name) and not holds_file(head, name):
                changed.append(name)
                continue
            entries.append(entry)
            raws.append(raw)
        result = (
            self.encode(entries, raws, objects, previous=tree, changed=changed, own=tree.own)
            if changed
            else oid
        )
        _keep(self._filtered, (oid, tracked, outer.key), result, MEMO_KEPT)
        return result

    def carry_ephemeral(
        self, work: ObjectId, old: ObjectId, new: ObjectId, objects: Objects
    ) -> ObjectId:
        """`new` plus the files of the work tree `work` that no commit holds (editor
        temp names, ignored paths) and `old`, the commit tree `work` was based on, lacks
        (ADRs 0019, 0061).

        When a branch moves to another tree (reset, merge, a commit from outside), such
        files stay in its work tree as git keeps untracked files: no commit holds them,
        so dropping them would lose them. A directory `new` lacks is made again to hold
        them; a file or symlink of `new` in the way wins. Only directories where `work`
        and `old` differ are read; the rules are the work tree's.
        """
        carried = self._carry(work, old, new, objects, NO_RULES)
        return new if carried is None else carried

    def _carry(
        self,
        work: ObjectId,
        old: ObjectId | None,
        new: ObjectId | None,
        objects: Objects,
        outer: Scope,
    ) -> ObjectId | None:
        """The carried tree, or None when nothing below `work` needs carrying."""
        if work == old:
            return None
        old_tree = self.get(old) if old is not None else EMPTY_TREE
        new_tree = self.get(new) if new is not None else EMPTY_TREE
        work_tree = self.get(work)
        scope = self.scope_in(work_tree, outer)
        added: dict[bytes, TreeEntry] = {}
        for entry in work_tree.entries:
            before = find(old_tree, entry.name)
            there = find(new_tree, entry.name)
            if entry.is_dir():
                if there is not None and not there.is_dir():
                    continue
                inner = scope.below(entry.name)
                if inner.everything and before is None and there is None:
                    added[entry.name] = entry  # an ignored folder: carried whole
                    continue
                was = before.oid if before is not None and before.is_dir() else None
                sub = self._carry(entry.oid, was, there.oid if there else None, objects, inner)
                if sub is not None:
                    shown = (there or entry)._replace(name=entry.name)
                    added[entry.name] = folder_entry(shown, sub, self.listed(sub, objects))
            elif kept_out(scope, entry.name) and before is None and there is None:
                added[entry.name] = entry
        if not added:
            return None
        merged = [
            (e, r)
            for e, r in zip(new_tree.entries, new_tree.raw, strict=True)
            if e.name not in added
        ]
        merged += [(e, encode_entry(e)) for e in added.values()]
        merged.sort(key=lambda item: item[0].name)
        return self.encode(
            [e for e, _ in merged],
            [r for _, r in merged],
            objects,
            previous=new_tree if new is not None else None,
            changed=added,
            own=new_tree.own,
        )


def patch_hint(
    patches: Patches,
    old: ObjectId,
    tree: Tree,
    listing: ObjectId,
    raws: Sequence[bytes],
    first: int,
    last: int,
    objects: Objects,
) -> None:
    """Describe the new flat `listing` of folder `old` (`tree`, decoded) as a patch on
    it, its entries `first`..`last` replaced in place (no name added or removed: the
    count in its header stands). The trims come from the entries' lengths, exact by
    construction: the entries around the span are the old record's own bytes. A root
    with own attributes (its id is its `R` record's) or a paged one is not described."""
    record = objects.get(listing)  # first: most folders on a path are small
    if record is None or len(record) < PATCH_FROM or tree.own is not None or tree.pages:
        return
    if listing == old:
        return
    prefix = TREE_HEAD_BYTES + raw_bytes(raws[:first])
    patches[listing] = Patch(old, prefix, raw_bytes(raws[last + 1 :]))


def listing_patch(
    base: ObjectId,
    old: Sequence[bytes],
    raws: Sequence[bytes],
    changed: Iterable[bytes],
    names: Sequence[bytes],
) -> Patch | None:
    """A patch for the flat listing of `raws` (encoded entries, in the order of `names`)
    on `base`, the flat listing of `old` (ADR 0095, the work tree's saves and commits):
    `changed` names where they may differ, and the entries outside that span are then
    compared with the old ones (in C), so the trims are exact whatever `changed` missed:
    the record is `encode_tree_raw(raws)` and the base's `encode_tree_raw(old)`, and the
    same count gives the same header. None when the counts differ (an insert, a delete)
    or the entries around the span do not match. `old` and `raws` are lists both."""
    count = len(raws)
    if len(old) != count or not count:
        return None
    first, last = count, -1
    for name in changed:
        at = bisect.bisect_left(names, name)
        first = min(first, at)
        last = max(last, at)
    if last < 0:
        return None
    first = min(first, count - 1)
    last = min(last, count - 1)
    if raws[:first] != old[:first] or raws[last + 1 :] != old[last + 1 :]:
        return None
    return Patch(base, TREE_HEAD_BYTES + raw_bytes(old[:first]), raw_bytes(old[last + 1 :]))


def kept_out(scope: Scope, name: bytes) -> bool:
    """Whether a file (not a folder) of that name is left out of commits in `scope`."""
    return is_ephemeral(name) or scope.ignored(name, False)


def _own_key(tree: Tree) -> tuple[int, tuple[tuple[bytes, bytes], ...]] | None:
    return None if tree.own is None else (tree.own.mode, tree.own.xattrs)


def _itself(name: bytes) -> bytes:
    return name


def tree_bytes(tree: Tree) -> int:
    """About the memory a decoded tree holds: each entry's encoding, its name again (a
    bytes of its own), and the objects around them."""
    return raw_bytes(tree.raw) + raw_bytes(tree.names) + ENTRY_BYTES * len(tree.raw)


_FLAT_ENTRY_BYTES = ENTRY_BYTES - ENTRY_FIXED_BYTES  # flat_tree_bytes per entry


def flat_tree_bytes(record_size: int, count: int) -> int:
    """`tree_bytes` of a flat tree from its record's length, which holds each entry's
    encoding once, each name within it: every commit sizes the trees it makes, and
    summing their entries cost ~40k instructions a commit (a root of 100 entries)."""
    raw = record_size - TREE_HEAD_BYTES
    names = raw - count * ENTRY_FIXED_BYTES  # xattrs count as names: close enough
    return raw + names + ENTRY_BYTES * count


def raw_bytes(pieces: Sequence[bytes]) -> int:
    """Their summed length (a join is done in C, 2-3x quicker than sum(map(len, ...)))."""
    return len(b"".join(pieces))


def holds_file(tree: Tree | None, name: bytes) -> bool:
    """Whether `tree` has a non-directory entry `name` (a committed file or symlink)."""
    found = find(tree, name) if tree is not None else None
    return found is not None and not found.is_dir()


def subtree(tree: Tree | None, name: bytes) -> ObjectId | None:
    """The id of `tree`'s directory `name`, or None."""
    found = find(tree, name) if tree is not None else None
    return found.oid if found is not None and found.is_dir() else None


def find(tree: Tree, name: bytes) -> TreeEntry | None:
    i = bisect.bisect_left(tree.names, name)
    if i < len(tree.names) and tree.names[i] == name:
        return tree.entries[i]
    return None


def _keep(table: dict[K, V], key: K, value: V, limit: int) -> None:
    """Insert into a bounded table: a full one first drops its oldest quarter."""
    if len(table) >= limit:
        for stale in list(table)[: limit // 4]:
            del table[stale]
    table[key] = value
