"""The L0 live state of a branch: a tree of Nodes, loaded lazily, mutated in place.

Only directories on the path of a change are ever materialised, and a save re-encodes
only the dirty ones (a dirty directory's ancestors are always dirty too, so the walk
stops at the first clean node). Clean nodes keep the encoded tree entry they were
loaded from, so re-encoding a directory with one changed child costs one entry encode
plus a join. Node objects keep their identity for the life of the Worktree (rename
moves the same object): the filesystem maps inodes to them.

Contents are written to the store as soon as they are set (so a closed file is in the
store even before the save that links it); a save writes `work/BRANCH` in that batch:
the tree last written plus a journal of the entries changed since (vcs/journal.py),
or, once that journal is long, the dirty trees and their new root id (a fold); a
commit is a fold plus a commit object and a CAS of `branches/BRANCH`. Editor temp files
(vcs/ephemeral.py) and ignored paths (vcs/ignore.py, vcs/keptout.py) stay in the work
tree but are filtered out of commit trees; where the work tree holds some, a commit saves
it as its commit tree plus an overlay of what that lacks (vcs/overlay.py, ADR 0086).
"""

from __future__ import annotations

import bisect
import io
import itertools
import logging
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar, cast

from helixfs.errors import (
    AlreadyExists,
    CorruptObject,
    DirectoryNotEmpty,
    HelixError,
    InvalidInput,
    IsADirectory,
    NotADirectory,
    NotFound,
    NotPermitted,
    ReadOnly,
    RefConflict,
    TooManyLinks,
)
from helixfs.ids import CommitId, ObjectId, object_id
from helixfs.store import Patch, RefUpdate
from helixfs.store.validate import BYTES_LIKE
from helixfs.vcs import attrs, fallback, history, journal, overlay
from helixfs.vcs.content import (
    CHUNK_THRESHOLD,
    EMPTY,
    ContentReader,
    Holes,
    Stored,
    pack_bytes,
    store_edited,
    store_stream,
)
from helixfs.vcs.damage import DAMAGE_LOG
from helixfs.vcs.ephemeral import is_ephemeral
from helixfs.vcs.ignore import NO_RULES, Scope
from helixfs.vcs.keptout import LiveScopes, ignored_paths, left_out, patch_tree
from helixfs.vcs.links import (
    LINK_ENTRY_BYTES,
    LINK_MAX,
    Folders,
    LinkGroup,
    add_place,
    dissolve,
    drop_place,
    link_of,
    new_link_id,
    places_of,
    without_link,
)
from helixfs.vcs.node import (
    NO_XATTRS,
    Listing,
    Node,
    Savers,
    auto_message,
    bump,
    check_entry_name,
    mark_stale,
    node_from_entry,
    same_kind,
    stored_xattrs,
    stored_xattrs_bound,
    take_entry,
)
from helixfs.vcs.objects import (
    EMPTY_KINDS,
    ENTRY_FIXED_BYTES,
    FLAT_MAX,
    MODE_DIR,
    NUL,
    TREE_HEAD_BYTES,
    Tree,
    TreeEntry,
    encode_entry,
    encode_paged,
    encode_tree_raw,
    uncompressed,
)
from helixfs.vcs.overlay import Part
from helixfs.vcs.pages import Page, pages_of, repage, write_pages
from helixfs.vcs.prestore import Prestore
from helixfs.vcs.refs import work_ref
from helixfs.vcs.rootown import ROOT_PATH, OwnKey, keeps, own_key, own_of
from helixfs.vcs.treeops import (
    PATCH_FROM,
    Patches,
    holds_file,
    kept_out,
    listing_patch,
    show_path,
    subtree,
)

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)
Objects = dict[ObjectId, bytes]
T = TypeVar("T")
_PERM = 0o7777
_V = TypeVar("_V")
_CHANGED_LIMIT = 1000
DAMAGED_HEAD = "its head commit cannot be read: it shows an older one, see `helix fsck`"
XATTR_NAME_MAX = 255
XATTR_SIZE_MAX = 65536
# A commit record beside its changed paths: ids, times, author, message, the meta of
# the saving process. A list cut short (or not known: state from before a reload) is
# counted as _CHANGED_LIMIT paths of PATH_JSON_BYTES each.
COMMIT_RECORD_BYTES = 16 << 10
PATH_JSON_BYTES = 1 << 10
PAGE_BYTES = 64  # a page's own header and its reference in the paged record
# Big flat folders whose last listing is kept, to write the next one as a patch on it
# (ADR 0095): a full table is dropped (only patches are lost: those records go RAW).
LISTINGS_KEPT = 1024


class Worktree:
    """A branch's live, mutable state (or a read-only view of a snapshot or commit)."""

    def __init__(self, repo: Repository, branch: str, *, commit: CommitId | None = None) -> None:
        self.repo = repo
        self.branch = branch
        self.readonly = commit is not None
        self.retired = False  # its branch was deleted: see retire()
        self._fixed = commit
        self._lock = repo.lock
        # `user.helix.message`: for the branch's next commit, whatever moves its ref
        # before that (a reload replaces the nodes, not what the user asked for)
        self._next_message: str | None = None
        # who made the saves not committed yet (`note_meta`): a commit cut by someone
        # else (the settle before a reset or merge) still names them
        self._pending_meta: dict[str, Any] = {}
        self._savers = Savers()  # and each process that saved, if they were several
        self._linkless: set[ObjectId] = set()  # stored trees with no hard link below
        self._last_changes = history.LastChanges()  # user.helix.commit's answers
        self._fold_all = False  # a commit under way met a paged folder (_folds_now)
        self.reload()
        if not self.readonly and not repo.store.contains(EMPTY.oid):
            repo.store.write(EMPTY.objects)

    # -- state --------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read the branch head (after an out-of-band ref move). Nodes are replaced."""
        with self._lock:
            store = self.repo.store
            head = self._fixed if self._fixed is not None else self.repo.branch_head(self.branch)
            shown = self._shown(head)
            head_tree = shown.tree
            work = None if self.readonly else store.ref(work_ref(self.branch))
            self._head = head
            self._work_value = work  # the saved state: a tree id, maybe with a journal
            saved = journal.parse(work) if work is not None else None
            changes = saved.changes if saved is not None else None
            root_tree = head_tree if saved is None or saved.on_head else saved.tree
            # a tree records no time for its root: show the head commit's; its mode and
            # owner are in its root record, if any (ADR 0044)
            own = self._stored_root_own(root_tree)
            self._stored_own = own_key(own)  # the root's as its stored record holds them
            self._head_own = own_key(self.repo.trees.get(head_tree).own)  # read: cached
            mode, xattrs = (own.mode, dict(own.xattrs)) if own is not None else (MODE_DIR, {})
            self.root = Node(b"", None, mode, root_tree, mtime_ns=shown.time_ns)
            self.root.xattrs = xattrs or NO_XATTRS
            self.root.pure = root_tree == head_tree
            self._changed: set[bytes] = set()  # recorded up to _CHANGED_LIMIT paths
            self._renamed: set[bytes] = set()  # where directories moved since the commit
            self._linked = False  # a hard link made since the commit: a re-link to list
            self._unsaved = False
            # Saved state that is not committed yet (after a lost CAS, or an open that
            # skipped recovery): the next commit must include it.
            self._pending = root_tree != head_tree or changes is not None
            # Trees encoded but not yet in the store: a failed write (a lost CAS) must
            # not lose them, since the nodes that produced them are no longer dirty.
            self._unwritten: Objects = {}
            self._bases: dict[ObjectId, ObjectId] = {}
            # per queued folder record, the one it is a patch on (ADR 0095), and per big
            # flat folder, its last listing: its id and encoded entries (a list)
            self._patches: Patches = {}
            self._listings: dict[Node, tuple[ObjectId, list[bytes]]] = {}
            self._reader = ContentReader(
                self.repo.content_source,
                pending=self._unwritten,
                records=self.repo.contents.records,
            )
            self._groups: dict[int, Node] = {}  # link id -> its node (vcs/links.py)
            self._link_folders: Folders = {}  # folders holding names of linked nodes
            self._links_whole = False  # every name of every group is loaded
            self._scopes = LiveScopes(self.repo.trees.rule_files, self._reader.read, self._children)
            if changes is not None:
                self._replay(self.root, changes)
            if saved is not None and saved.overlay is not None:
                self._graft(self.root, saved.overlay)

    def _shown(self, head: CommitId) -> fallback.Shown:
        """What the head shows; a head that cannot be read shows an ancestor, read-only
        (vcs/fallback.py) until a reload finds it readable again."""
        commit = fallback.readable(self.repo, head)
        self.readonly = self._fixed is not None or commit is None
        if commit is not None:
            return fallback.Shown(head, commit.tree, commit.time_ns)
        return fallback.fallback(self.repo, self.branch, head)

    def _stored_root_own(self, root_tree: ObjectId) -> TreeEntry | None:
        """The saved root's mode and owner; a saved tree that cannot be read shows the
        defaults, and its listing gives EIO where it is read (ADR 0046)."""
        try:
            return self.repo.trees.get(root_tree).own
        except fallback.Unreadable:
            return None

    def _replay(self, node: Node, changes: journal.DirChanges) -> None:
        """Rebuild a directory changed since its stored tree from the saved journal: it
        is left dirty, as it was when saved, for the next fold to encode."""
        children = self._children(node)
        node.dirty = node.recheck = True
        node.pure = False  # purity is derived again at the fold, from every child
        node.listing = None
        for name in changes.gone:
            self._unplace(node, children.pop(name, None), name)
        for entry in changes.entries:
            nested = changes.nested.get(entry.name)
            self._unplace(node, children.get(entry.name), entry.name)
            if nested is None:
                children[entry.name] = self._node_of(entry, node, None, newer=True)
                continue
            child = node_from_entry(entry, node, None, nested.base)
            child.pure = False
            if nested.base is None:
                child.children = {}
            children[entry.name] = child
            self._replay(child, nested)
        for name in itertools.chain(changes.gone, (entry.name for entry in changes.entries)):
            mark_stale(node, name)
        node.subdirs = sum(1 for child in children.values() if child.is_dir())

    def _graft(self, node: Node, part: ObjectId) -> None:
        """Put back on a folder loaded from its commit tree what that lacks: its overlay
        part (vcs/overlay.py, ADR 0086). It is left dirty, over the commit tree, as a
        replayed folder is over its stored one."""
        listing = self.repo.trees.get(part)
        if not listing.entries:
            return
        node.pure = False  # before its children load: they take it
        children = self._children(node)
        node.dirty = node.recheck = True
        node.listing = None
        node.raw = None
        for entry in listing.entries:
            if overlay.is_grafted(entry):
                child = children.get(entry.name)
                if child is None or not child.is_dir():  # not written so: shown without
                    log.warning(
                        "%s: the saved overlay names a folder %s its tree lacks",
                        self.branch,
                        show_path(self._join(node, entry.name)),
                    )
                    continue
                self._graft(child, entry.oid)
            else:
                self._unplace(node, children.get(entry.name), entry.name)
                children[entry.name] = self._node_of(entry, node, None, newer=True)
            mark_stale(node, entry.name)
        node.subdirs = sum(1 for child in children.values() if child.is_dir())

    @property
    def dirty(self) -> bool:
        return bool(self._changed) or self._unsaved or self._pending

    @property
    def head(self) -> CommitId:
        return self._head

    def _writable(self) -> None:
        if self.readonly:
            why = "a snapshot or commit view" if self._fixed is not None else DAMAGED_HEAD
            raise ReadOnly(f"{self.branch!r} is read-only ({why})")

    def _children(self, node: Node) -> dict[bytes, Node]:
        if not node.is_dir():
            raise NotADirectory(f"{show_path(self.path_of(node))} is not a directory")
        if node.children is None:
            assert node.oid is not None
            tree = self._damage_noted(node, self.repo.trees.get, node.oid)
            node.children = {
                entry.name: self._node_of(entry, node, raw)
                for entry, raw in zip(tree.entries, tree.raw, strict=True)
            }
            # counted again from the listing: a tree written without its count (an old
            # store, a builder that left it out) heals at the first load
            node.subdirs = sum(1 for entry in tree.entries if entry.is_dir())
            node.listing = Listing.of(node.children, ordered=True)  # trees are in name order
            node.pages = pages_of(tree, node.pure)
        return node.children

    def _touch(
        self,
        node: Node,
        *paths: bytes,
        relisted: bytes | None = None,
        subject: Node | None = None,
        ctime_ns: int | None = None,
    ) -> None:
        """Record a change to `node` (to its listing too if `relisted`, the name of a child
        added, removed or replaced: then `paths` are where `subject`, that child, came or
        went) and mark its ancestors for re-encoding. Editor temp files are not recorded:
        commits leave them out."""
        node.raw = None
        node.ctime_ns = time.time_ns() if ctime_ns is None else ctime_ns
        if relisted is not None:
            _relist(node, relisted)
            mark_stale(node, relisted)
            self._scopes.changed(node, relisted)
        if node is self.root:
            node.dirty = True  # its mode or owner may have changed: its record holds them
        elif node.parent is None:
            return  # detached (unlinked but still open): nothing in the tree changes
        self._scopes.touched(node, relisted, subject)
        self._unsaved = True
        if len(self._changed) < _CHANGED_LIMIT:
            what = subject or node
            for path in paths or self._paths_of(node):
                if what.is_dir() or not is_ephemeral(path.rsplit(b"/", 1)[-1]):
                    self._changed.add(path)
        if relisted is not None:
            node.dirty = True
        self._mark_places(node)

    def _bump(self, parent: Node, name: bytes, child: Node) -> int:
        """`bump` but for an ignored name: its coming and going is no change either."""
        if self._scopes.ignores(parent, name, child):
            return parent.ctime_ns
        return bump(parent, name)

    def _mark_places(self, node: Node) -> None:
        """Mark every name of `node` for re-encoding, with the folders above each."""
        if node.group is not None:
            self._load_links()  # a name not loaded would keep the old entry
            node.group.raws.clear()
        for parent, name in places_of(node):
            mark_stale(parent, name)
            self._scopes.changed(parent, name)
            while parent is not None and not parent.dirty:
                parent.dirty = True
                parent.raw = None
                mark_stale(parent.parent, parent.name)
                parent = parent.parent

    def _paths_of(self, node: Node) -> list[bytes]:
        if node.group is None:
            return [self.path_of(node)]
        return [self._join(parent, name) for parent, name in node.group.places]

    # -- reading ------------------------------------------------------------------------

    def lookup(self, parent: Node, name: bytes) -> Node:
        with self._lock:
            node = self._children(parent).get(name)
            if node is None:
                raise NotFound(f"no such file: {show_path(self._join(parent, name))}")
            return node

    def find(self, parent: Node, name: bytes) -> Node | None:
        """`lookup`, None for a name that is not there: a `tar x` or a compiler asks
        for more names that are missing than that exist, and an error costs its message."""
        with self._lock:
            return self._children(parent).get(name)

    def listdir(self, parent: Node) -> list[tuple[bytes, Node]]:
        with self._lock:
            return list(self._sorted(parent))

    def listed(self, parent: Node) -> tuple[list[bytes], list[Node]]:
        """`listdir` as names and nodes, copies of the directory's listing."""
        with self._lock:
            listing = self._sorted(parent)
            return list(listing.names), list(listing.nodes)

    def _sorted(self, node: Node) -> Listing:
        """Children in name order, cached until the listing changes (readdir is called
        once per chunk of a big directory, and every save walks dirty listings)."""
        if node.listing is None:
            children = self._children(node)  # loading a directory sets its listing
            if node.listing is None:
                node.listing = Listing.of(children)
        return node.listing

    def read(self, node: Node, offset: int, size: int) -> bytes:
        if node.is_dir():
            raise IsADirectory(f"{show_path(self.path_of(node))} is a directory")
        if size < 0 or offset < 0:
            raise InvalidInput("read offset and size must not be negative")
        if offset >= node.size or size == 0:
            return b""
        assert node.oid is not None
        return self._damage_noted(
            node, self._reader.read, node.oid, offset, min(size, node.size - offset)
        )

    def _damage_noted(self, node: Node, read: Callable[..., T], *args: Any) -> T:
        """`read(*args)` of `node`'s object; unreadable (a damaged store), it is logged
        once with the path, and the caller (a mount: EIO) sees the error (ADR 0046)."""
        try:
            return read(*args)
        except CorruptObject as exc:
            DAMAGE_LOG.note(self.branch, self.path_of(node), exc)
            raise

    def readlink(self, node: Node) -> bytes:
        if not node.is_symlink():
            raise InvalidInput(f"{show_path(self.path_of(node))} is not a symlink")
        assert node.oid is not None
        return self._damage_noted(node, self._reader.read, node.oid)

    def data_bytes(self, node: Node) -> int:
        """The bytes of a file the store holds as data, its holes left out (st_blocks).
        A blob, hence every file up to CHUNK_THRESHOLD, is all data: only a chunked
        content's index is looked at, once per content."""
        if node.size <= CHUNK_THRESHOLD or node.oid is None or not node.is_file():
            return node.size
        try:
            return node.size - self._reader.hole_bytes(node.oid)
        except HelixError:  # a stat must not fail for it: reads do, and fsck names it
            return node.size

    def zero_ranges(self, node: Node) -> list[tuple[int, int]]:
        """A file's holes as stored (runs of ZERO_CHUNK), for a spool to keep knowing
        them while the file is written again."""
        if node.size <= CHUNK_THRESHOLD or node.oid is None or not node.is_file():
            return []
        return self._reader.zero_ranges(node.oid)

    def content_id(self, node: Node) -> ObjectId | None:
        if node.is_dir() and node.dirty:
            return None
        return node.oid

    def holds(self, node: Node) -> bool:
        """Whether `node` is part of this tree's current state: not unlinked, not in a
        removed folder, not from before a reload that replaced every node."""
        top = node
        while top.parent is not None:
            top = top.parent
        return top is self.root

    def path_of(self, node: Node) -> bytes:
        parts = []
        while node.parent is not None:
            parts.append(node.name)
            node = node.parent
        return b"/".join(reversed(parts))

    def _join(self, parent: Node, name: bytes) -> bytes:
        base = self.path_of(parent)
        return base + b"/" + name if base else name

    def last_commit(self, path: bytes, limit: int = 1000) -> CommitId | None:
        """The newest first-parent commit that changed `path` (None if never committed)."""
        return history.last_change(self.repo, self._head, path, limit, self._last_changes)

    # -- namespace mutations --------------------------------------------------------------

    def _new_child(self, parent: Node, name: bytes, node: Node) -> Node:
        children = self._children(parent)
        if name in children:
            raise AlreadyExists(f"{show_path(self._join(parent, name))} already exists")
        children[name] = node
        if node.is_dir():
            parent.subdirs += 1
        when = self._bump(parent, name, node)
        self._touch(parent, self._join(parent, name), relisted=name, subject=node, ctime_ns=when)
        node.raw = None
        return node

    def create(
        self,
        parent: Node,
        name: bytes,
        mode: int = 0o644,
        *,
        rdev: int = 0,
        hidden: Mapping[bytes, bytes] = NO_XATTRS,
    ) -> Node:
        """An empty regular file, or a pipe, socket or device when `mode` says so
        (EMPTY_KINDS; `rdev` is a device's number). `hidden`: its attribute keys
        (attrs.OWNER...), set before it is first saved."""
        kind = stat.S_IFMT(mode) or stat.S_IFREG
        if kind != stat.S_IFREG and kind not in EMPTY_KINDS:
            raise NotPermitted("only files, directories, symlinks, pipes, sockets and devices")
        device = attrs.pack_rdev(rdev) if kind in (stat.S_IFCHR, stat.S_IFBLK) else None
        if device is not None:
            hidden = {**hidden, attrs.RDEV: device}
        with self._lock:
            self._writable()
            node = Node(
                check_entry_name(name),
                parent,
                kind | (mode & _PERM),
                EMPTY.oid,
                0,
                time.time_ns(),
                dict(_hidden_only(hidden)) or NO_XATTRS,
            )
            return self._new_child(parent, name, node)

    def mkdir(
        self,
        parent: Node,
        name: bytes,
        mode: int = 0o755,
        *,
        hidden: Mapping[bytes, bytes] = NO_XATTRS,
    ) -> Node:
        with self._lock:
            self._writable()
            node = Node(
                check_entry_name(name),
                parent,
                stat.S_IFDIR | (mode & _PERM),
                None,
                0,
                time.time_ns(),
                dict(_hidden_only(hidden)) or NO_XATTRS,
            )
            node.children = {}
            node.dirty = True
            node.pure = True
            return self._new_child(parent, name, node)

    def symlink(
        self,
        parent: Node,
        name: bytes,
        target: bytes,
        *,
        hidden: Mapping[bytes, bytes] = NO_XATTRS,
    ) -> Node:
        with self._lock:
            self._writable()
            if not isinstance(target, bytes) or not target or NUL in target:
                raise InvalidInput("a symlink target must be non-empty bytes without NUL")
            stored = self._write_content(pack_bytes(target), None)
            node = Node(
                check_entry_name(name),
                parent,
                stat.S_IFLNK | 0o777,
                stored.oid,
                len(target),
                time.time_ns(),
                dict(_hidden_only(hidden)) or NO_XATTRS,
            )
            return self._new_child(parent, name, node)

    def unlink(self, parent: Node, name: bytes) -> Node:
        with self._lock:
            self._writable()
            node = self._children(parent).get(name)  # `lookup`, under the lock held here
            if node is None:
                raise NotFound(f"no such file: {show_path(self._join(parent, name))}")
            if node.is_dir():
                raise IsADirectory(f"{show_path(self._join(parent, name))} is a directory")
            self._detach(parent, name)
            return node

    def link(self, node: Node, parent: Node, name: bytes) -> Node:
        """A new name for `node` in `parent` (a hard link): the same node, so a write
        through one name is seen through every other at once."""
        with self._lock:
            self._writable()
            check_entry_name(name)
            if node.is_dir():
                raise NotPermitted(f"{show_path(self.path_of(node))} is a folder: no hard links")
            if not self.holds(node):
                raise NotFound("the file to link was removed (no name links it)")
            children = self._children(parent)
            if name in children:
                raise AlreadyExists(f"{show_path(self._join(parent, name))} already exists")
            self._load_links()
            group = node.group
            if group is None:
                assert node.parent is not None
                group = node.group = LinkGroup(new_link_id(), 1)
                add_place(node, node.parent, node.name, self._link_folders)
                self._groups[group.id] = node
            if group.count >= LINK_MAX:
                raise TooManyLinks(f"{show_path(self.path_of(node))} has {LINK_MAX} names")
            group.count += 1
            node.raw = None  # an entry's encoding holds its name: one per name now
            add_place(node, parent, name, self._link_folders)
            children[name] = node
            self._bump(parent, name, node)
            self._touch(parent, self._join(parent, name), relisted=name, subject=node)
            self._linked = True
            node.ctime_ns = time.time_ns()
            self._mark_places(node)  # every name's entry carries the count
            return node

    def rmdir(self, parent: Node, name: bytes) -> None:
        with self._lock:
            self._writable()
            node = self.lookup(parent, name)
            if not node.is_dir():
                raise NotADirectory(f"{show_path(self._join(parent, name))} is not a directory")
            if self._children(node):
                raise DirectoryNotEmpty(f"{show_path(self._join(parent, name))} is not empty")
            self._detach(parent, name)

    def _detach(self, parent: Node, name: bytes, *, moving: bool = False) -> Node:
        children = self._children(parent)
        node = children.pop(name)
        if node.is_dir():
            parent.subdirs -= 1
        parent.recheck = True
        path = self._join(parent, name)
        if node.group is None:
            node.parent = None
        else:
            self._unname(node, parent, name, moving)
        self.mark_changed(node)  # its link count changed: an open descriptor sees it
        when = self._bump(parent, name, node)
        self._touch(parent, path, relisted=name, subject=node, ctime_ns=when)
        return node

    def _unname(self, node: Node, parent: Node, name: bytes, moving: bool) -> None:
        """One name of a hard-linked node goes (to come back elsewhere if `moving`): the
        others keep it. Down to one name, it is a plain file again."""
        group = node.group
        assert group is not None
        self._load_links()
        drop_place(node, parent, name, self._link_folders)
        if moving:
            return
        group.count = len(group.places)
        if group.count <= 1:
            dissolve(node, self._link_folders)
            del self._groups[group.id]
        if group.count:
            self._mark_places(node)

    def _unplace(self, parent: Node, node: Node | None, name: bytes) -> None:
        """A journal replaces (or removes) what the stored tree had at `name`."""
        if node is not None and node.group is not None:
            drop_place(node, parent, name, self._link_folders)

    def _node_of(
        self, entry: TreeEntry, parent: Node, raw: bytes | None, *, newer: bool = False
    ) -> Node:
        """The node of a loaded entry. A hard-linked one joins its group's node if a name
        of it is loaded already; a journal's entry (`newer`) then gives it its state."""
        found = link_of(entry.xattrs) if entry.xattrs else None  # nearly all have none
        if found is None:
            return node_from_entry(entry, parent, raw)
        link_id, count = found
        entry = entry._replace(xattrs=without_link(entry.xattrs))
        node = self._groups.get(link_id)
        if node is None or node.group is None or not same_kind(node, entry):
            node = node_from_entry(entry, parent, None)  # its raw holds its name: not kept
            node.group = LinkGroup(link_id, count)
            add_place(node, parent, entry.name, self._link_folders)
            self._groups[link_id] = node
            return node
        if newer:
            take_entry(node, entry)
            node.group.count = count
        add_place(node, parent, entry.name, self._link_folders)
        return node

    def _load_links(self) -> None:
        """Load every name of every hard-linked node, once per tree state: a change
        through one name must reach the stored entry of each (ADR 0043)."""
        if self._links_whole or self.readonly:
            return
        self._links_whole = True
        self._find_links(self.root)
        for node in self._groups.values():
            assert node.group is not None
            node.group.count = len(node.group.places)

    def _find_links(self, folder: Node) -> None:
        if folder.children is None:
            assert folder.oid is not None
            if not self._holds_links(folder.oid):
                return
        for child in list(self._children(folder).values()):
            if child.is_dir():
                self._find_links(child)

    def _holds_links(self, tree: ObjectId) -> bool:
        """Whether a stored tree has a hard-linked entry anywhere below."""
        if tree in self._linkless:
            return False
        for entry in self.repo.trees.get(tree).entries:
            if link_of(entry.xattrs) is not None:
                return True
            if entry.is_dir() and self._holds_links(entry.oid):
                return True
        self._linkless.add(tree)
        return False

    def rename(
        self,
        old_parent: Node,
        old_name: bytes,
        new_parent: Node,
        new_name: bytes,
        *,
        noreplace: bool = False,
        exchange: bool = False,
    ) -> Node | None:
        """Move a node (the same object) to a new name; returns the node it replaced."""
        with self._lock:
            self._writable()
            check_entry_name(new_name)
            if noreplace and exchange:
                raise InvalidInput("rename: noreplace and exchange exclude each other")
            src = self.lookup(old_parent, old_name)
            dst = self._children(new_parent).get(new_name)
            if exchange:
                self._exchange(old_parent, old_name, src, new_parent, new_name, dst)
                return None
            if dst is src:
                return None
            self._check_replace(src, dst, new_parent, new_name, noreplace)
            self._check_not_inside(src, new_parent)
            old_path = self._join(old_parent, old_name)
            self._detach(old_parent, old_name, moving=True)
            if dst is not None:
                self._detach(new_parent, new_name)
            self._attach(src, new_parent, new_name, old_path)
            return dst

    def _check_replace(
        self, src: Node, dst: Node | None, parent: Node, name: bytes, noreplace: bool
    ) -> None:
        if dst is None:
            return
        where = show_path(self._join(parent, name))
        if noreplace:
            raise AlreadyExists(f"{where} already exists")
        if src.is_dir() and not dst.is_dir():
            raise NotADirectory(f"cannot replace the file {where} with a directory")
        if not src.is_dir() and dst.is_dir():
            raise IsADirectory(f"cannot replace the directory {where} with a file")
        if dst.is_dir() and self._children(dst):
            raise DirectoryNotEmpty(f"{where} is not empty")

    def _check_not_inside(self, node: Node, target: Node) -> None:
        """A directory cannot move into itself or one of its descendants."""
        probe: Node | None = target
        while probe is not None:
            if probe is node:
                raise InvalidInput("cannot move a directory inside itself")
            probe = probe.parent

    def _attach(self, node: Node, parent: Node, name: bytes, old_path: bytes) -> None:
        if node.group is None:
            node.name = name
            node.parent = parent
        else:
            add_place(node, parent, name, self._link_folders)
        self._children(parent)[name] = node
        if node.is_dir():
            parent.subdirs += 1
        when = self._bump(parent, name, node)
        node.raw = None
        node.ctime_ns = time.time_ns()
        self._touch(
            parent, old_path, self._join(parent, name), relisted=name, subject=node, ctime_ns=when
        )
        if node.is_dir():
            self._renamed.add(self._join(parent, name))
        elif node.group is not None:
            self._mark_places(node)  # its ctime is in every name's entry

    def _exchange(
        self, op: Node, on: bytes, src: Node, np: Node, nn: bytes, dst: Node | None
    ) -> None:
        if dst is None:
            raise NotFound(f"cannot exchange with {show_path(self._join(np, nn))}: no such file")
        if dst is src:
            return
        self._check_not_inside(src, np)
        self._check_not_inside(dst, op)
        path_a, path_b = self._join(op, on), self._join(np, nn)
        self._children(op)[on] = dst
        self._children(np)[nn] = src
        op.recheck = np.recheck = True
        _rehome(src, op, on, np, nn, self._link_folders)
        _rehome(dst, np, nn, op, on, self._link_folders)
        if src.is_dir() != dst.is_dir():  # a folder changes places with a file
            moved = 1 if src.is_dir() else -1
            np.subdirs += moved
            op.subdirs -= moved
        src.name, src.parent, dst.name, dst.parent = nn, np, on, op
        src.raw = dst.raw = None
        # As a create, unlink or rename does: an editor temp file's name coming or going
        # moves no folder's times, or the commit's tree changes where its list says not
        when_a, when_b = self._bump(op, on, dst), self._bump(np, nn, src)
        self._touch(op, path_a, path_b, relisted=on, subject=src, ctime_ns=when_a)
        self._touch(np, path_a, path_b, relisted=nn, subject=dst, ctime_ns=when_b)
        self._renamed.update(path for path, node in ((path_a, dst), (path_b, src)) if node.is_dir())

    # -- content and attributes -------------------------------------------------------------

    def _write_content(self, stored: Stored, previous: ObjectId | None) -> Stored:
        """Queue a content's records for the next save's batch (one write per save, not
        two); streamed chunks of big files went to the store already. Reads see the
        queue, and the filesystem saves before a close returns."""
        self._unwritten.update(stored.objects)
        self._bases.update(stored.bases)
        if previous is not None and previous != stored.oid and stored.oid in stored.objects:
            self._bases[stored.oid] = previous
        return stored

    def _regular(self, node: Node) -> None:
        """Content belongs to regular files: EISDIR for a directory, EINVAL otherwise."""
        if node.is_dir():
            raise IsADirectory(f"{show_path(self.path_of(node))} is a directory")
        if not node.is_file():
            raise InvalidInput(f"{show_path(self.path_of(node))} is not a regular file")

    def set_content(
        self,
        node: Node,
        source: BinaryIO | bytes,
        *,
        edited: tuple[ObjectId, list[tuple[int, int]]] | None = None,
        holes: Holes = (),
        head: tuple[int, list[tuple[ObjectId, int]]] | None = None,
        mtime_ns: int | None = None,
        ctime_ns: int | None = None,
    ) -> None:
        """Store the file's full new content; large sources are streamed in chunks.
        mtime and ctime are now, unless `mtime_ns` / `ctime_ns` say (a close stores the
        times its writes showed: one change recorded, not a second for set_attrs).

        `edited` = (content id, byte ranges) promises that `source` differs from that
        content only in those ranges: a big file is then re-cut around them only.
        `holes` = byte ranges promised to be zeros: they are not read (a sparse file).
        `head` = (a cut, its chunks) promises that the source's bytes before that cut
        are those chunks, stored already (a Prestore's): cutting starts there.
        """
        with self._lock:
            self._writable()
            self._regular(node)
            stored = None if head is not None else self._store_edited(node, source, edited, holes)
            if stored is None:
                if isinstance(source, BYTES_LIKE):
                    stored = pack_bytes(source)
                else:
                    stored = store_stream(source, self._bulk_sink, holes, head)
            self._write_content(stored, node.oid)
            node.oid, node.size = stored.oid, stored.size
            now = time.time_ns()
            node.mtime_ns = now if mtime_ns is None else _in_range(mtime_ns, "mtime")
            self._touch(node, ctime_ns=now if ctime_ns is None else _in_range(ctime_ns, "ctime"))

    def _store_edited(
        self,
        node: Node,
        source: BinaryIO | bytes,
        edited: tuple[ObjectId, list[tuple[int, int]]] | None,
        holes: Holes,
    ) -> Stored | None:
        """The content stored by re-cutting only the edited ranges, when it can be."""
        if edited is None or edited[0] != node.oid:
            return None
        if isinstance(source, bytes) and len(source) <= CHUNK_THRESHOLD:
            return None  # one blob: nothing to keep
        readable = io.BytesIO(source) if isinstance(source, bytes) else source
        size = readable.seek(0, io.SEEK_END)
        index = self._reader.chunks(edited[0]) if size > CHUNK_THRESHOLD else None
        if index is None:
            return None  # small, or the old content was one blob: nothing to keep
        return store_edited(readable, size, index, edited[1], self._bulk_sink, holes)

    def _bulk_sink(self, objects: Mapping[ObjectId, bytes]) -> None:
        self.repo.store.write(objects, bulk=True)

    def prestore(self) -> Prestore:
        """A Prestore of a file being written into this tree (any thread may feed it:
        the store takes its own lock; chunks alone change no state of the tree)."""
        self._writable()
        return Prestore(self._bulk_sink, self._reader.read_chunks)

    def set_attrs(
        self,
        node: Node,
        *,
        mode: int | None = None,
        mtime_ns: int | None = None,
        size: int | None = None,
        ctime_ns: int | None = None,
    ) -> None:
        """New attributes; ctime is now (a truncate's mtime) unless `ctime_ns` says."""
        with self._lock:
            self._writable()
            for what, value in (("mtime", mtime_ns), ("ctime", ctime_ns)):
                if value is not None:
                    _in_range(value, what)
            now = time.time_ns()
            if size is not None:
                self._resize(node, size, now)
            if mode is not None:
                node.mode = stat.S_IFMT(node.mode) | (mode & _PERM)
            if mtime_ns is not None:
                node.mtime_ns = mtime_ns
            self._touch(node, ctime_ns=now if ctime_ns is None else ctime_ns)

    def mark_changed(self, node: Node, when_ns: int | None = None) -> None:
        """Set ctime alone (now by default): a change that stores nothing (chmod to the
        mode it has) still sets it, as on Linux. It is stored with the node's next save
        (attrs.CTIME), not made a save of its own."""
        node.ctime_ns = time.time_ns() if when_ns is None else when_ns

    def set_hidden(self, node: Node, changes: Mapping[bytes, bytes | None]) -> bool:
        """Set (or with None remove) hidden attribute keys: an owner, an atime (ADR
        0042). True when the entry changed (a save); ctime moves either way. A tree's
        root keeps only its owner of them (in its root record, ADR 0044)."""
        with self._lock:
            self._writable()
            held = node.xattrs
            if all(held.get(key) == value for key, value in _hidden_only(changes).items()):
                self.mark_changed(node)  # `tar x` chowns every file to the owner it has
                return False
            kept = dict(held)
            for key, value in changes.items():
                if value is None:
                    kept.pop(key, None)
                else:
                    kept[key] = value
            if node is self.root:
                kept = {key: value for key, value in kept.items() if keeps(key)}
            if kept == node.xattrs:
                self.mark_changed(node)
                return False
            node.xattrs = kept or NO_XATTRS
            self._touch(node)
            return True

    def _resize(self, node: Node, size: int, now: int) -> None:
        """A truncate is a write: it sets mtime even when the size stays (as Linux does for
        truncate(2), and ftruncate and O_TRUNC always did here)."""
        self._regular(node)
        if size != node.size:
            assert node.oid is not None
            stored = self._reader.resize(node.oid, node.size, size)
            self._write_content(stored, node.oid)
            node.oid, node.size = stored.oid, stored.size
        node.mtime_ns = now

    def set_xattr(self, node: Node, name: bytes, value: bytes) -> None:
        with self._lock:
            self._writable()
            if not isinstance(name, bytes) or not name or not isinstance(value, bytes):
                raise InvalidInput("xattr name and value must be bytes (name non-empty)")
            if len(name) > XATTR_NAME_MAX or len(value) > XATTR_SIZE_MAX or NUL in name:
                raise InvalidInput(
                    f"xattr {name[:40]!r}: names are at most {XATTR_NAME_MAX} bytes without "
                    f"NUL, values at most {XATTR_SIZE_MAX} bytes (the Linux limits)"
                )
            node.xattrs = {**node.xattrs, name: value}
            self._touch(node)

    def remove_xattr(self, node: Node, name: bytes) -> None:
        with self._lock:
            self._writable()
            if name not in node.xattrs:
                raise NotFound(f"no attribute {name!r} on {show_path(self.path_of(node))}")
            kept = {key: value for key, value in node.xattrs.items() if key != name}
            node.xattrs = kept or NO_XATTRS
            self._touch(node)

    def set_next_message(self, message: str) -> None:
        if not isinstance(message, str):
            raise InvalidInput("a commit message must be text")
        self._next_message = message

    def note_meta(self, meta: Mapping[str, Any]) -> None:
        """Metadata for the next commit, whoever cuts it (the saving process, its pid):
        `commit(meta=...)` adds to it and overrides it. The latest save's replaces an
        earlier one's whole, so that a process name and a pid never come from two
        different saves; an empty one (a caller unknown) keeps what is there. When
        several processes saved, the commit names each (`savers`)."""
        if meta and meta != self._pending_meta:  # the same again (a tar x): nothing new
            self._pending_meta = dict(meta)
            self._savers.add(meta)

    @property
    def next_message(self) -> str | None:
        """The message set for the next commit (`set_next_message`), if any."""
        return self._next_message

    # -- persistence ------------------------------------------------------------------

    def _encode(self, node: Node, objects: Objects) -> ObjectId:
        """Encode a dirty directory and its dirty descendants; returns its tree id."""
        if not node.dirty:
            assert node.oid is not None
            return node.oid
        listing = self._sorted(node)
        scope = self._scopes.inner(node)
        if len(listing.nodes) > FLAT_MAX:
            record, pure = self._encode_paged(node, listing, objects, scope)
            oid = object_id(record)
            if self._listings:
                self._listings.pop(node, None)
        else:
            node.pages = None
            # Purity is re-derived from every child only when it may be regained (a
            # child left, the rules changed); otherwise only the changed children can
            # spoil it: a save in a folder holding ignored files stays O(changed).
            if node.recheck:
                raws, pure = self._encode_all(node, listing, objects, scope)
            else:
                raws, pure = self._encode_changed(node, listing, objects, scope)
            record = encode_tree_raw(raws)
            oid = object_id(record)
            if len(record) >= PATCH_FROM:
                patch = self._listing_patch(node, raws, listing.names, oid)
                if patch is not None:
                    self._patches[oid] = patch
        self._scopes.encoded(node)
        node.stale = node.journal = node.pieces = node.redo = None
        node.oid = oid
        objects[oid] = record
        if node is self.root:
            own = self._own()
            node.oid = self.repo.trees.rooted(node.oid, own, objects)
            self._stored_own = own_key(own)
        node.dirty = False
        node.recheck = False
        node.pure = pure
        if pure:
            self.repo.trees.mark_clean(node.oid, self._scopes.outer(node))
        return node.oid

    def _listing_patch(
        self, node: Node, raws: list[bytes], names: list[bytes], listing: ObjectId
    ) -> Patch | None:
        """The new flat `listing` of a big folder (its entries `raws`, before `_encode`
        forgets its `stale` names) as a patch on its last one, kept from its last encode
        or, the first time, the cached tree it was loaded from (ADR 0095). The trims are
        checked against the old entries (`listing_patch`), so they are exact. Its listing
        is kept for the next time."""
        last = self._listings.get(node)
        if last is None and node.oid is not None:
            tree = self.repo.trees.cached(node.oid)
            if tree is not None and tree.own is None and not tree.pages:
                last = (node.oid, list(tree.raw))  # a root's own: its id is its R record's
        if len(self._listings) >= LISTINGS_KEPT:
            self._listings.clear()
        self._listings[node] = (listing, raws)  # raws is the encode's own list: not changed
        if last is None or last[0] == listing or not node.stale:
            return None
        return listing_patch(last[0], last[1], raws, node.stale, names)

    def _encode_all(
        self, node: Node, listing: Listing, objects: Objects, scope: Scope
    ) -> tuple[list[bytes], bool]:
        raws = []
        pure = True
        for name, child in listing:
            raw = child.raw if child.group is None else child.group.raws.get((node, name))
            raws.append(raw if raw is not None else self._entry_raw(child, objects, name, node))
            pure = pure and _keeps_pure(name, child, scope)
        return raws, pure

    def _encode_changed(
        self, node: Node, listing: Listing, objects: Objects, scope: Scope
    ) -> tuple[list[bytes], bool]:
        """Clean children keep their encoded entries; the changed ones (no entry) are
        found by `list.index`, in C: a one-file save stays O(changed) in Python, even in
        a directory of 20,000 entries. Only the changed names (`stale`: a journaled save
        may have encoded their entries already) can spoil the purity."""
        raws = self._raws(node, listing)
        at = -1
        while True:
            try:
                at = raws.index(None, at + 1)
            except ValueError:
                break  # no None is left
            raws[at] = self._entry_raw(listing.nodes[at], objects, listing.names[at], node)
        assert node.children is not None
        changed = ((name, node.children.get(name)) for name in node.stale or ())
        pure = node.pure and all(
            _keeps_pure(name, child, scope) for name, child in changed if child is not None
        )
        return cast(list[bytes], raws), pure

    def _encode_paged(
        self, node: Node, listing: Listing, objects: Objects, scope: Scope
    ) -> tuple[bytes, bool]:
        """A big directory's paged record, rewriting only the pages that changed."""
        names, nodes = listing.names, listing.nodes
        pages = repage(
            node.pages,
            names,
            _itself,
            node.stale or (),
            lambda start, stop: self._write_pages(
                node, names[start:stop], nodes[start:stop], objects
            ),
        )
        node.pages = pages
        at = 0
        for page in pages:  # new pages, and pages loaded under an impure parent
            if not page.pure:
                run = zip(names[at : at + page.count], nodes[at : at + page.count], strict=True)
                page.pure = all(_keeps_pure(name, c, scope) for name, c in run)
            at += page.count
        record = encode_paged([(page.oid, page.count) for page in pages])
        return record, all(page.pure for page in pages)

    def _write_pages(
        self, folder: Node, names: list[bytes], nodes: list[Node], objects: Objects
    ) -> list[Page]:
        """Encode a run of children that starts and ends at page cuts, as pages."""
        raws = []
        for name, child in zip(names, nodes, strict=True):
            raw = child.raw if child.group is None else child.group.raws.get((folder, name))
            raws.append(raw if raw is not None else self._entry_raw(child, objects, name, folder))
        return write_pages(names, raws, objects)

    def _raws(self, node: Node, listing: Listing) -> list[bytes | None]:
        """The encoded entries of a folder's children kept from before (None: encode)."""
        if node not in self._link_folders:
            return [child.raw for child in listing.nodes]  # the common case: no link
        return [
            child.raw if child.group is None else child.group.raws.get((node, name))
            for name, child in listing
        ]

    def _entry_raw(self, child: Node, objects: Objects, name: bytes, folder: Node) -> bytes:
        """A child's encoded entry, kept as its `raw` (a linked node's: by place)."""
        if child.dirty:
            self._encode(child, objects)
        if child.group is not None:
            raw = child.group.raws[(folder, name)] = encode_entry(child.entry(name))
            return raw
        child.raw = encode_entry(child.entry())
        return child.raw

    def _unfolded(self, own: TreeEntry | None) -> bool:
        """Whether a commit may leave the work trees of the dirty folders that hold
        ignored paths unfolded: the work tree is saved as the commit tree plus an overlay
        of what it lacks (ADR 0086), so a commit encodes and writes only the commit
        trees, not both, and no journal either (the dirty folders whose work tree is
        their commit tree are folded on the way: `_folds_now`). `own`: the root's own
        attributes now (`_own`); the saves journal on the root's stored record."""
        root = self.root
        return not root.pure and root.dirty and own_key(own) == self._stored_own

    def _folds_now(self, node: Node, scope: Scope) -> bool:
        """Whether a dirty folder's work tree is its commit tree (`Node.pure`, as
        `_encode` derives it), its children's commit trees made (and the pure ones among
        them folded). A paged folder is not told: the commit folds the whole work tree
        then (`_fold_all`)."""
        children = node.children
        assert children is not None, "a dirty directory is loaded"
        if len(children) > FLAT_MAX:
            self._fold_all = True
            return False
        if not (node.recheck or node.pure):
            return False  # impure at its last encode, and no child left: impure still
        if node.recheck:
            pairs: Iterable[tuple[bytes, Node | None]] = children.items()
        else:
            pairs = ((name, children.get(name)) for name in node.stale or ())
        if all(_keeps_pure(name, child, scope) for name, child in pairs if child is not None):
            return True
        node.pure = False
        return False

    def _commit_tree(
        self,
        node: Node,
        objects: Objects,
        tracked: ObjectId | None,
        outer: Scope = NO_RULES,
        own: TreeEntry | None = None,
    ) -> tuple[ObjectId, Part]:
        """The tree a commit records: the work tree without the editor temp files and
        the ignored paths that `tracked` (the head commit's tree at this place) does not
        hold; and what it leaves out, as an overlay part (vcs/overlay.py). `outer`: the
        rules `node` inherits; `own`: the root's own attributes (for the root). A folder
        the last commit walked is the head's tree there with the names changed since
        made again, and its part the last one's with those names made again (ADR 0061)."""
        trees, scopes = self.repo.trees, self._scopes
        if node.pure and not node.dirty:
            assert node.oid is not None
            scopes.walked(node, overlay.EMPTY)
            return node.oid, overlay.EMPTY
        if node.children is None:
            assert node.oid is not None
            made = trees.without_ephemeral(node.oid, objects, tracked, outer)
            return made, overlay.stored_part(trees, node.oid, made)
        head = trees.get(tracked) if tracked is not None else None
        since, last = scopes.last(node)
        if since is not None and tracked is not None and head is not None and last is not None:
            entries, left, known = self._commit_entries(node, since, head, last, objects)
            if node.dirty and _may_fold(node) and self._folds_now(node, scopes.inner(node)):
                return self._folded_here(node, objects), overlay.EMPTY
            tree = patch_tree(trees, head, tracked, entries, objects, own, known, self._patches)
            part = last.patched(left) if left else last
        else:
            scope = scopes.inner(node)
            kept: dict[bytes, TreeEntry] = {}
            nested: dict[bytes, Part] = {}
            made_entries = []
            for name, child in self._sorted(node):
                entry, out = self._commit_entry(name, child, scope, head, objects)
                if entry is not None:
                    made_entries.append(entry)
                if isinstance(out, Part):
                    if out:
                        nested[name] = out
                elif out is not None:
                    kept[name] = out
            if node.dirty and _may_fold(node) and self._folds_now(node, scope):
                return self._folded_here(node, objects), overlay.EMPTY
            tree = trees.build(made_entries, objects, own)
            part = overlay.of(kept, nested)
        scopes.walked(node, part)
        return tree, part

    def _folded_here(self, node: Node, objects: Objects) -> ObjectId:
        """Fold a dirty folder whose work tree is its commit tree: its tree is both."""
        tree = self._encode(node, objects)
        mark_stale(node.parent, node.name)  # its journal piece is its entry now
        self._scopes.walked(node, overlay.EMPTY)
        return tree

    def _commit_entries(
        self, node: Node, names: Iterable[bytes], head: Tree, last: Part, objects: Objects
    ) -> tuple[
        dict[bytes, TreeEntry | None], dict[bytes, TreeEntry | Part | None], dict[bytes, bytes]
    ]:
        """`_commit_entry` of each of `names` (changed since the last commit), what each
        leaves out (a file committed now and by the last commit, `last`: not listed), and
        the encodings of the files' entries (kept as their `raw`: the next save's journal
        takes them too). The files inline: a save's commit changes one, mostly."""
        assert node.children is not None
        children = node.children
        entries: dict[bytes, TreeEntry | None] = {}
        left: dict[bytes, TreeEntry | Part | None] = {}
        known: dict[bytes, bytes] = {}
        for name in names:
            child = children.get(name)
            if child is None:
                entries[name] = left[name] = None
            elif child.is_dir():
                entries[name], left[name] = self._commit_folder(name, child, head, objects)
            elif kept_out(self._scopes.inner(node), name) and not holds_file(head, name):
                entries[name], left[name] = None, child.entry(name)
            else:
                entries[name] = entry = child.entry(name)
                if name in last.kept or name in last.nested:  # committed now, as a file
                    left[name] = None
                if child.group is None and child.name == name:  # its raw is this entry's
                    raw = child.raw
                    if raw is None:
                        raw = child.raw = encode_entry(entry)
                    known[name] = raw
        return entries, left, known

    def _commit_entry(
        self, name: bytes, child: Node | None, scope: Scope, head: Tree | None, objects: Objects
    ) -> tuple[TreeEntry | None, TreeEntry | Part | None]:
        """`child`'s entry in the commit tree (None when the commit leaves it out), and
        what of it the commit leaves out: its whole entry, or a folder's part."""
        if child is None:
            return None, None
        if not child.is_dir():
            if kept_out(scope, name) and not holds_file(head, name):
                return None, child.entry(name)
            return child.entry(name), None
        return self._commit_folder(name, child, head, objects)

    def _commit_folder(
        self, name: bytes, child: Node, head: Tree | None, objects: Objects
    ) -> tuple[TreeEntry | None, TreeEntry | Part | None]:
        """`_commit_entry` of a folder: its rules are its own (`LiveScopes.outer`)."""
        inner = self._scopes.outer(child)  # scope.below(name), memoised
        there = subtree(head, name)
        if inner.everything and there is None:  # an ignored folder nothing of is committed
            return None, self._left_folder(name, child, objects)
        sub, part = self._commit_tree(child, objects, there, inner)
        if child.dirty:  # not folded: no work tree id, its commit tree's is the one
            # its subfolders but those the commit leaves out whole (a part's kept ones)
            count = child.subdirs - part.left_folders
            xattrs = stored_xattrs(child, count)
            return TreeEntry(name, child.mode, sub, 0, child.mtime_ns, xattrs), part
        entry = child.entry(name)
        if sub == entry.oid:
            return entry, part
        return attrs.folder_entry(entry, sub, self.repo.trees.listed(sub, objects)), part

    def _left_folder(self, name: bytes, child: Node, objects: Objects) -> TreeEntry:
        """The work tree's entry of a folder a commit leaves out whole (an overlay holds
        it): a dirty one is folded first, its entry then its journal piece."""
        if child.dirty:
            self._encode(child, objects)
            mark_stale(child.parent, name)
        return child.entry(name)

    def _root_changed(self, own: OwnKey) -> list[bytes]:
        """["."] when the root's own mode or owner (`own`) differs from the head's: a
        commit lists what it changes, and no path of the tree names the root."""
        return [ROOT_PATH] if own != self._head_own else []

    def _own(self) -> TreeEntry | None:
        """The root's mode and owner as its root record holds them (None: the defaults)."""
        return own_of(self.root.mode, self.root.xattrs)

    def _live(self, path: bytes) -> Node | bool | None:
        """The live node at `path`, None if there is none, True if a directory on the way
        is not loaded (then it cannot be told cheaply)."""
        node = self.root
        for part in path.split(b"/"):
            if not node.is_dir():
                return None
            if node.children is None:
                return True
            found = node.children.get(part)
            if found is None:
                return None
            node = found
        return node

    def _in_either(self, path: bytes, head_tree: ObjectId) -> bool:
        """False for a path in neither the last commit nor the live tree: a temp file
        written and renamed away within one save, or a path inside a new directory that
        was renamed later, changed nothing a commit records."""
        live = self._live(path)
        if live is not None:
            return True  # live, or not loaded: keep it (lists may over-cover, never under)
        try:
            return self.repo.trees.entry(head_tree, path) is not None
        except (NotFound, NotADirectory):
            return False

    def _standing(self, path: bytes, head_tree: ObjectId) -> bytes | None:
        """The nearest folder of `path`, a name that came and went within one save (git's
        index.lock), that is in the last commit or the live tree. Its listing, so its
        mtime, changed: a commit made of that lists the folder, never nothing (a path
        below it that changed implies it). None at the root, whose mtime is not
        versioned (ADR 0030)."""
        path = path.rpartition(b"/")[0]
        while path:
            if self._in_either(path, head_tree):
                return path
            path = path.rpartition(b"/")[0]
        return None

    def _changed_paths(self, head_tree: ObjectId, part: Part | None = None) -> list[bytes]:
        """The paths this commit changes: the recorded ones that exist on either side,
        plus the paths inside directories that were renamed (their files were recorded
        under the old names). A directory that is not loaded stands for all below it.
        `part`: what the commit leaves out (its overlay), which tells the paths it
        leaves out without asking the rules again."""
        changed = {p for p in self._changed if self._in_either(p, head_tree)}
        for gone in sorted(self._changed.difference(changed)):
            folder = self._standing(gone, head_tree)
            if folder is not None and not _has_below(changed, folder):
                changed.add(folder)
        for path in sorted(self._renamed):
            node = self._live(path)
            if isinstance(node, Node) and node.is_dir():
                self._add_below(node, path, changed)
        trees, scopes = self.repo.trees, self._scopes
        return sorted(
            p
            for p in changed
            # a path the commit leaves out is one its overlay holds: most are not
            if (part is not None and not overlay.holds(part, p))
            or not left_out(self.root, scopes, trees, p, head_tree)
        )

    def _with_relinked(
        self, head_tree: ObjectId, tree: ObjectId, paths: list[bytes]
    ) -> list[bytes]:
        """`paths` and the names a re-link changed beside the recorded one: `rm b; ln a b`
        moves b to a's file and makes a a link too, which the diff shows (ADR 0043);
        `log a` reads this list before any tree."""
        diff = self.repo.trees.diff(head_tree, tree)
        return sorted({*paths, *(change.path for change in diff)})

    def _add_below(self, node: Node, path: bytes, changed: set[bytes]) -> None:
        for name, child in self._sorted(node) if node.children is not None else ():
            if len(changed) >= _CHANGED_LIMIT:
                return
            if child.is_dir() or not is_ephemeral(name):
                changed.add(path + b"/" + name)
            if child.is_dir():
                self._add_below(child, path + b"/" + name, changed)

    def retire(self) -> None:
        """The branch was deleted: what is still written here (a file held open in its
        folder) is dropped at close, as in a removed folder on a local disk. A later save
        would write work/BRANCH again, and a new branch of that name would show it."""
        with self._lock:
            self.retired = True

    def save(self, *, sync: bool = False) -> None:
        """Persist the live state now: after this returns, kill -9 loses nothing. What
        changed since the last fold is written as a journal, not as trees
        (vcs/journal.py), until the journal grows past JOURNAL_MAX."""
        with self._lock:
            self._writable()
            if self.retired:
                return
            if not self._unsaved:
                if sync:
                    self.repo.store.sync()
                return
            # a journal sits on the root's stored record: one whose mode or owner
            # changed since is written whole
            journaled = self.root.dirty and own_key(self._own()) == self._stored_own
            value = self._journaled() if journaled else None
            if value is None:
                value = self._encode(self.root, self._unwritten)
            self._persist(value, sync)

    def fold(self) -> None:
        """Persist the live state as trees, without a journal (before a close: a store
        at rest holds plain trees)."""
        with self._lock:
            self._writable()
            if self.retired:
                return
            if self._unsaved or journal.has_journal(self._work_value):
                self._persist(self._encode(self.root, self._unwritten))

    def _journaled(self) -> bytes | None:
        """The saved state as the root's stored tree plus a journal of what changed in
        the dirty directories since; None when that journal is too long to be worth it."""
        assert self.root.oid is not None
        body = self._journal_body(self.root)
        if len(body) > journal.JOURNAL_MAX:
            return None
        return journal.work_value(self.root.oid, body)

    def _journal_body(self, node: Node) -> bytes:
        """A dirty directory's journal: its changed names (`stale`), current entries or
        gone, with the changed directories among them nested. Kept between saves: a
        save makes again only the pieces of the names changed since (`redo`) and joins
        the bodies on the changed path."""
        if node.journal is not None:
            return node.journal
        assert node.children is not None, "a dirty directory is loaded"
        if node.pieces is None:
            node.pieces = {}
        for name in node.redo or ():
            node.pieces[name] = self._journal_piece(node.children.get(name), name)
        node.redo = None
        raws: list[bytes] = []
        gone: list[bytes] = []
        nested: list[tuple[ObjectId | None, bytes]] = []
        for name, piece in sorted(node.pieces.items()):  # one pass: a commit makes three
            if piece is None:
                gone.append(name)
                continue
            raws.append(piece[0])
            sub = piece[1]
            if sub is not None:  # a nested body unchanged since is kept on its folder
                body = sub.journal if sub.journal is not None else self._journal_body(sub)
                nested.append((sub.oid, body))
        node.journal = journal.encode_dir(raws, gone, nested)
        return node.journal

    def _journal_piece(self, child: Node | None, name: bytes) -> tuple[bytes, Node | None] | None:
        """A changed name's journal piece: its entry (a changed directory's with the id
        NESTED, and the directory to nest), None when it is gone."""
        if child is None:
            return None
        if child.is_dir() and child.dirty:
            xattrs = stored_xattrs(child)
            entry = TreeEntry(name, child.mode, journal.NESTED, 0, child.mtime_ns, xattrs)
            return encode_entry(entry), child
        if child.group is not None:
            return encode_entry(child.entry(name)), None
        if child.raw is None:
            child.raw = encode_entry(child.entry())
        return child.raw, None

    def _persist(self, value: bytes, sync: bool = False) -> None:
        self.repo.store.write(
            self._unwritten,
            [RefUpdate(work_ref(self.branch), value, expected=self._work_value)],
            delta_bases=self._bases or None,
            uncompressed=uncompressed(self._unwritten),
            patches=self._queued_patches(),
            sync=sync,
        )
        self._work_value = value
        self._unsaved = False
        self._written()

    def _written(self) -> None:
        """The queued records are in the store: start a new queue (the reader follows)."""
        self._unwritten.clear()
        self._bases.clear()
        self._patches.clear()

    def _queued_patches(self) -> Patches | None:
        """The patches of the queued records (a store refuses one for a record its
        write does not hold: none should be missing, but a save must not fail for it)."""
        patches = self._patches
        if not patches:
            return None
        queued = self._unwritten
        if all(oid in queued for oid in patches):
            return patches
        return {oid: patch for oid, patch in patches.items() if oid in queued}

    def commit_bound(self) -> int:
        """Bytes `commit()` would write now, at most: what a room check must cover
        before a change that commits first (a HEAD switch, refused at write(): its
        close's error is ignored by a shell). The records queued, each dirty
        directory's whole tree twice (the commit tree leaves editor temp files out),
        the commit record with its list of changed paths."""
        with self._lock:
            if self.readonly or not self.dirty:
                return 0
            queued = sum(map(len, self._unwritten.values()))
            return queued + 2 * self._tree_bound(self.root) + self._record_bound()

    def _tree_bound(self, node: Node) -> int:
        if not node.dirty:
            return 0
        listing = self._sorted(node)
        paged = len(listing.nodes) > FLAT_MAX  # at worst a page per entry: cut by CRC
        size = TREE_HEAD_BYTES + (len(listing.nodes) * PAGE_BYTES if paged else 0)
        for name, child in listing:
            size += len(child.raw) if child.raw is not None else _entry_bound(name, child)
            if child.is_dir():
                size += self._tree_bound(child)
        return size

    def _record_bound(self) -> int:
        if self._pending or len(self._changed) >= _CHANGED_LIMIT:
            paths = _CHANGED_LIMIT * PATH_JSON_BYTES
        else:  # JSON escapes a byte that is not UTF-8 as 6 characters: \udcXX
            paths = sum(6 * len(path) + 4 for path in self._changed)
        message = 4 * len(self._next_message or "")
        return COMMIT_RECORD_BYTES + paths + message

    def pending_paths(self) -> list[bytes] | None:
        """The paths saved since the last commit, which the next one will take (`helix
        status`); [] when there are none; None when there are some but no list says
        which (state from before a reload, or more than the commit lists): only that
        commit's diff would tell."""
        with self._lock:
            if not self.dirty:
                return []
            if self._pending or len(self._changed) >= _CHANGED_LIMIT:
                return None
            head_tree = self.repo.commit_info(self._head).tree
            return self._root_changed(own_key(self._own())) + self._changed_paths(head_tree)

    def ignored_paths(self) -> list[bytes]:
        """The topmost paths here that commits leave out (editor temp files, ignored
        paths; a folder as `name/`): `helix status`."""
        with self._lock:
            head_tree = self.repo.commit_info(self._head).tree
            return ignored_paths(self.root, self._scopes, self.repo.trees, head_tree)

    def commit(
        self, message: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> CommitId | None:
        """Save and commit; None when the commit tree equals the head's."""
        with self._lock:
            self._writable()
            if not self.dirty or self.retired:
                return None
            started = time.perf_counter_ns()
            objects = self._unwritten
            own = self._own()
            self._fold_all = False
            # folded: the work trees are encoded and written too, the root's is the value
            folded = None if self._unfolded(own) else self._encode(self.root, objects)
            head_tree = self.repo.commit_info(self._head).tree
            self._scopes.begin()
            tree, part = self._commit_tree(self.root, objects, head_tree, own=own)
            if folded is None and (self._fold_all or not self.root.dirty):
                folded = self._encode(self.root, objects)  # a paged folder, or all pure
            # root: the saved state until the commit lands; landed: once it has
            root: bytes
            landed: bytes
            if folded is None:  # the commit tree and what it leaves out (ADR 0086)
                assert self.root.oid is not None  # the tree the live journal is on
                left = overlay.store(part, self.repo.trees, objects)
                root = journal.overlay_value(tree, left, self.root.oid)
                # the same over the branch head's tree: a value the next commit keeps
                # as it is (no ref written) while nothing it leaves out changes
                landed = journal.overlay_value(journal.HEAD_TREE, left, self.root.oid)
            else:
                root = landed = folded
            if tree == head_tree:
                self._scopes.confirm()
                self._persist(landed)
                self._changed.clear()
                self._renamed.clear()
                self._linked = False
                self._pending = False
                self._pending_meta.clear()
                self._savers.clear()
                return None
            info = {**self._pending_meta, **(meta or {})}
            self._savers.record(info)
            if self._pending or not self._changed or len(self._changed) >= _CHANGED_LIMIT:
                # state from before a reload, or a list cut short (it could still end
                # under the limit once the temp names renamed away are dropped, and look
                # complete to last_commit): only a diff knows what it changed (and the
                # diff reads trees, so they must be stored first)
                self._persist(root)
                diff = self.repo.trees.changed_paths(head_tree, tree)
                changed = list(itertools.islice(diff, _CHANGED_LIMIT))
            else:  # the root's own mode and owner as encoded above, then the paths
                paths = self._changed_paths(head_tree, part)
                if self._linked:  # only a link() moves a name to another node
                    self._persist(root)  # the diff reads trees
                    paths = self._with_relinked(head_tree, tree, paths)
                changed = self._root_changed(self._stored_own) + paths
            # complete (fewer than 1000) lists let last_commit() skip decoding trees
            info["changed"] = [p.decode("utf-8", "surrogateescape") for p in changed]
            text = message or self._next_message or auto_message(changed, info)
            try:
                cid = self.repo.write_commit(
                    self.branch,
                    tree,
                    [self._head],
                    text,
                    info,
                    objects,
                    self._bases,
                    started=started,
                    work=landed,
                    patches=self._queued_patches(),
                )
            except RefConflict:
                # Someone else moved the branch: keep our state saved (nothing lost), let
                # the caller reload; the reload shows the saved state over the new head.
                self._persist(root)
                self._scopes.forget_walks()  # the head is not the tree just walked
                raise
            self._head = cid
            self._head_own = self._stored_own
            self._scopes.confirm()  # the trees walked are the head's now
            self._written()
            self._work_value = landed if landed != tree else None
            self._changed.clear()
            self._renamed.clear()
            self._linked = False
            self._unsaved = self._pending = False
            self._next_message = None
            self._pending_meta.clear()
            self._savers.clear()
            return cid


def _rehome(
    node: Node, old_parent: Node, old_name: bytes, parent: Node, name: bytes, folders: Folders
) -> None:
    if node.group is None:
        node.name, node.parent = name, parent
    else:
        drop_place(node, old_parent, old_name, folders)
        add_place(node, parent, name, folders)


def _hidden_only(changes: Mapping[bytes, _V]) -> Mapping[bytes, _V]:
    """Attribute keys only: a user xattr name here is a caller's mistake."""
    if changes and any(not attrs.is_hidden(key) for key in changes):
        raise InvalidInput("only hidden attribute keys (attrs.OWNER...) may be set this way")
    return changes


def _has_below(paths: set[bytes], folder: bytes) -> bool:
    prefix = folder + b"/"
    return folder in paths or any(path.startswith(prefix) for path in paths)


def _entry_bound(name: bytes, child: Node) -> int:
    """The size of a node's encoded tree entry (encode_entry), without encoding it."""
    linked = LINK_ENTRY_BYTES if child.group is not None else 0
    return ENTRY_FIXED_BYTES + len(name) + stored_xattrs_bound(child) + linked


def _may_fold(node: Node) -> bool:
    """Whether `_folds_now` has a question to ask of a dirty folder: most are impure at
    their last encode with no child gone since (impure still), and flat."""
    return node.recheck or node.pure or len(node.children or ()) > FLAT_MAX


def _keeps_pure(name: bytes, child: Node, scope: Scope) -> bool:
    """Whether a child leaves its directory's tree equal to its commit tree: editor temp
    files and ignored paths are kept out of commits (`_commit_tree`)."""
    if scope.ignored(name, child.is_dir()):
        return False
    return child.pure if child.is_dir() else not is_ephemeral(name)


def _itself(name: bytes) -> bytes:
    return name


def _relist(node: Node, name: bytes) -> None:
    """Patch a directory's sorted listing for one child added, removed or replaced: a
    save in a big directory must not sort it again (20,000 entries: ~1.5 ms a sort)."""
    listing = node.listing
    if listing is None:
        return
    assert node.children is not None
    child = node.children.get(name)
    names, nodes = listing.names, listing.nodes
    at = bisect.bisect_left(names, name)
    present = at < len(names) and names[at] == name
    if child is None:
        if present:
            del names[at], nodes[at]
    elif present:
        nodes[at] = child
    else:
        names.insert(at, name)
        nodes.insert(at, child)


__all__ = ["Node", "Worktree", "check_entry_name"]


def _in_range(value: int, what: str) -> int:
    """A time in ns that a tree entry can hold (a signed 64-bit count)."""
    if not -(2**63) <= value < 2**63:
        raise InvalidInput(f"{what} {value} ns is out of range")
    return value
