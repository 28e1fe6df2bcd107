"""Nodes of a live work tree, and the small rules about names and messages they follow.

A Node is one file, directory or symlink. Identity matters: the filesystem maps inode
numbers to Node objects, so a rename moves the object and never copies it.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from helixfs.errors import InvalidName, NameTooLong
from helixfs.ids import ObjectId
from helixfs.vcs import attrs
from helixfs.vcs.ephemeral import is_ephemeral
from helixfs.vcs.links import LinkGroup, with_link
from helixfs.vcs.objects import TreeEntry, valid_name
from helixfs.vcs.pages import Page
from helixfs.vcs.treeops import show_path

NAME_MAX = 255  # bytes in one file name, as on Linux
# The xattrs of every node that has none (nearly all): one shared read-only mapping
# instead of an empty dict (64 bytes) per node. A change replaces a node's mapping.
NO_XATTRS: Mapping[bytes, bytes] = MappingProxyType({})


class Node:
    """One file, directory or symlink of a live branch state."""

    __slots__ = (
        "name",
        "parent",
        "mode",
        "size",
        "mtime_ns",
        "ctime_ns",
        "xattrs",
        "subdirs",
        "oid",
        "children",
        "dirty",
        "pure",
        "raw",
        "recheck",
        "listing",
        "pages",
        "stale",
        "journal",
        "pieces",
        "redo",
        "group",
    )  # no __weakref__: nothing takes a weak reference to a node, 8 bytes each

    def __init__(
        self,
        name: bytes,
        parent: Node | None,
        mode: int,
        oid: ObjectId | None,
        size: int = 0,
        mtime_ns: int = 0,
        xattrs: Mapping[bytes, bytes] = NO_XATTRS,
    ) -> None:
        self.name = name
        self.parent = parent
        self.mode = mode
        self.size = size
        self.mtime_ns = mtime_ns
        # A loaded node's ctime is its stored one (attrs.CTIME), else its mtime, unless
        # that is in the future (`touch -d 2100`), where ctime, the time of a change,
        # cannot be.
        self.ctime_ns = min(mtime_ns, time.time_ns())
        # user xattrs and the hidden attribute keys but CTIME and SUBDIRS (ADR 0042),
        # which live in ctime_ns and subdirs
        self.xattrs = xattrs
        self.subdirs = 0  # a directory's subdirectories: st_nlink is 2 + this
        self.oid = oid  # content id; for a directory, its tree id when not dirty
        self.children: dict[bytes, Node] | None = None  # None: not loaded yet
        self.dirty = False  # directory whose listing must be re-encoded
        self.pure = False  # directory known to hold no ephemeral file anywhere below
        self.raw: bytes | None = None  # cached encoding of this node's tree entry
        self.listing: Listing | None = None  # children sorted by name
        self.recheck = False  # a child left: purity must be re-derived from all children
        self.pages: list[Page] | None = None  # a paged directory's stored pages
        self.stale: set[bytes] | None = None  # names of children changed since the last save
        # A dirty directory's journal (vcs/journal.py), kept between saves: its body while
        # nothing below changed, its changed names' pieces (entry, nested directory; None:
        # gone), and the names whose pieces must be made again.
        self.journal: bytes | None = None
        self.pieces: dict[bytes, tuple[bytes, Node | None] | None] | None = None
        self.redo: set[bytes] | None = None
        # a hard-linked node's names (vcs/links.py): it is in several folders at once
        self.group: LinkGroup | None = None

    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    def is_file(self) -> bool:
        return stat.S_ISREG(self.mode)

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.mode)

    def entry(self, name: bytes | None = None) -> TreeEntry:
        """The tree entry of this node under `name` (a hard-linked node has several;
        its first by default)."""
        assert self.oid is not None, "a dirty directory has no entry until it is encoded"
        size = 0 if self.is_dir() else self.size
        xattrs = stored_xattrs(self)
        group = self.group
        if group is not None:
            xattrs = with_link(xattrs, group.id, group.count)
        entry_name = self.name if name is None else name
        return TreeEntry(entry_name, self.mode, self.oid, size, self.mtime_ns, xattrs)

    def __repr__(self) -> str:
        return f"<Node {self.name!r} mode={self.mode:o} size={self.size}>"


class Listing:
    """A directory's children in name order, as two parallel lists: a (name, node)
    pair per child cost a tuple (~64 bytes) per file of every listed directory.

    `names` are the names the children were listed under (a rename changes a node's
    name before its old place in the listing is patched).
    """

    __slots__ = ("names", "nodes")

    def __init__(self, names: list[bytes], nodes: list[Node]) -> None:
        self.names = names
        self.nodes = nodes

    @classmethod
    def of(cls, children: Mapping[bytes, Node], *, ordered: bool = False) -> Listing:
        """The listing of `children`, sorted unless they are `ordered` by name already."""
        names = list(children) if ordered else sorted(children)
        return cls(names, [children[name] for name in names])

    def __iter__(self) -> Iterator[tuple[bytes, Node]]:
        return zip(self.names, self.nodes, strict=True)


def node_from_entry(
    entry: TreeEntry, parent: Node, raw: bytes | None, oid: ObjectId | None = None
) -> Node:
    """A node of a stored entry (with `oid` for its id when given: a replayed folder's)."""
    node = Node(
        entry.name,
        parent,
        entry.mode,
        entry.oid if oid is None else oid,
        entry.size,
        entry.mtime_ns,
    )
    if entry.xattrs:
        load_xattrs(node, entry.xattrs)
    node.raw = raw
    node.pure = parent.pure
    return node


def same_kind(node: Node, entry: TreeEntry) -> bool:
    """Whether a stored name may join `node`'s link group: never a folder, and the same
    kind of file (a store merged badly could say otherwise; then it stands alone)."""
    return not entry.is_dir() and stat.S_IFMT(node.mode) == stat.S_IFMT(entry.mode)


def take_entry(node: Node, entry: TreeEntry) -> None:
    """A newer state of a loaded node (a journal's entry for it)."""
    node.mode, node.oid, node.size = entry.mode, entry.oid, entry.size
    node.mtime_ns = entry.mtime_ns
    node.ctime_ns = min(entry.mtime_ns, time.time_ns())
    node.xattrs = NO_XATTRS
    if entry.xattrs:
        load_xattrs(node, entry.xattrs)
    node.raw = None


def load_xattrs(node: Node, xattrs: attrs.Xattrs) -> None:
    """A stored entry's xattrs onto its node: CTIME and SUBDIRS go to their fields."""
    kept = dict(xattrs)
    ctime = kept.pop(attrs.CTIME, None)
    if ctime is not None:
        node.ctime_ns = attrs.time_of(ctime, node.mtime_ns)
    subdirs = kept.pop(attrs.SUBDIRS, None)
    if subdirs is not None:
        node.subdirs = attrs.count_of(subdirs)
    node.xattrs = kept or NO_XATTRS


def stored_xattrs(node: Node, subdirs: int | None = None) -> attrs.Xattrs:
    """A node's xattrs as its tree entry stores them: with CTIME unless it is the mtime,
    and a directory's SUBDIRS (`subdirs`, else its own count) unless it has none."""
    items = sorted(node.xattrs.items()) if node.xattrs else []
    ctime = attrs.pack_time(node.ctime_ns, node.mtime_ns)
    if ctime is not None:
        items.append((attrs.CTIME, ctime))
    count = node.subdirs if subdirs is None else subdirs
    if count and node.is_dir():
        items.append((attrs.SUBDIRS, attrs.count_bytes(count)))
    if len(items) > 1 and (ctime is not None or count):
        items.sort()
    return tuple(items)


def stored_xattrs_bound(node: Node) -> int:
    """Bytes the xattrs of a node's entry take, at most (CTIME counted when it is kept)."""
    held = sum(4 + len(key) + 2 + len(value) for key, value in node.xattrs.items())
    return held + (
        2 * attrs.HIDDEN_ENTRY_MAX if node.ctime_ns != node.mtime_ns or node.subdirs else 0
    )


def mark_stale(directory: Node | None, name: bytes) -> None:
    """A child's entry changed (or the child came or went): its page must be rewritten,
    and the journal bodies of the directory and of those above it (which nest it)."""
    if directory is None:
        return
    if directory.stale is None:
        directory.stale = {name}
    else:
        directory.stale.add(name)
    if directory.redo is None:
        directory.redo = {name}
    else:
        directory.redo.add(name)
    above: Node | None = directory
    while above is not None:
        above.journal = None
        above = above.parent


def check_name_length(name: bytes) -> None:
    """ENAMETOOLONG past NAME_MAX (the kernel leaves name lengths to the filesystem)."""
    if len(name) > NAME_MAX:
        raise NameTooLong(f"file name of {len(name)} bytes: at most {NAME_MAX} ({name!r:.80})")


def check_entry_name(name: object) -> bytes:
    if not isinstance(name, bytes):
        raise InvalidName(f"a file name must be bytes, got {type(name).__name__}")
    check_name_length(name)
    if not valid_name(name):
        raise InvalidName(f"invalid file name {name!r:.80}")
    return name


def bump(directory: Node, name: bytes) -> int:
    """A directory's mtime and ctime follow its listing, except for editor temp files:
    their coming and going must not make a commit of its own. Returns its ctime."""
    if not is_ephemeral(name):
        directory.mtime_ns = directory.ctime_ns = time.time_ns()
    return directory.ctime_ns


def auto_message(changed: list[bytes], meta: Mapping[str, Any]) -> str:
    """The subject of a save: it counts the paths its `meta.changed` lists."""
    what = show_path(changed[0]) if len(changed) == 1 else f"{len(changed)} paths"
    names = list(dict.fromkeys(n for n, _ in savers_of(meta) if n is not None))
    return f"{', '.join(names)}: save {what}" if names else f"save {what}"


SAVERS_KEPT = 8  # processes a commit names; more are counted (`savers_more`)


class Savers:
    """The processes whose saves one commit folds, in the order they first saved. A
    quiet window folds `echo >> f` with the `git status` run right after it: the commit
    must not say that git wrote f."""

    def __init__(self) -> None:
        self._keys: set[tuple[Any, Any]] = set()
        self._kept: list[dict[str, Any]] = []

    def add(self, meta: Mapping[str, Any]) -> None:
        key = (meta.get("process"), meta.get("pid"))
        if key not in self._keys:
            self._keys.add(key)
            if len(self._kept) < SAVERS_KEPT:
                self._kept.append({k: meta[k] for k in ("process", "pid") if k in meta})

    def record(self, info: dict[str, Any]) -> None:
        """Name them in a commit's metadata, if there were several."""
        if len(self._keys) > 1:
            info["savers"] = list(self._kept)
            if len(self._keys) > len(self._kept):
                info["savers_more"] = len(self._keys) - len(self._kept)

    def clear(self) -> None:
        self._keys.clear()
        self._kept.clear()


def saved_by(meta: Mapping[str, Any]) -> str:
    """` [process pid]` for the process a commit's saves came from, one for each when it
    folds several; "" when the commit records none (not made by a mount)."""
    shown = [
        f"{show_path(name.encode('utf-8', 'replace'))} {pid}".rstrip()
        if name is not None
        else f"pid {pid}"
        for name, pid in savers_of(meta)
    ]
    more = meta.get("savers_more")
    tail = f" +{more}" if isinstance(more, int) and not isinstance(more, bool) and more > 0 else ""
    return f" [{', '.join(shown)}{tail}]" if shown else ""


def savers_of(meta: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """(name, pid text) of each process named, from `savers` or else `process`/`pid`;
    a value of the wrong type (metadata from the API is free-form) is left out."""
    listed = meta.get("savers")
    entries = listed if isinstance(listed, list) and listed else [meta]
    found = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name, pid = entry.get("process"), entry.get("pid")
        name = name if isinstance(name, str) and name else None
        pid_text = str(pid) if isinstance(pid, int) and not isinstance(pid, bool) and pid else ""
        if name is not None or pid_text:
            found.append((name, pid_text))
    return found
