"""Hard links (ADR 0043): in stored trees, a link group is a set of full entries that
carry the same hidden LINK key; in a live Worktree, it is one Node under several names.

The LINK value (vcs/attrs.py) holds the group's id, unique within a branch's tree, and
the number of names the tree holds for it (st_nlink, right without loading every folder
that holds one). Every name of a group is a whole entry (content, mode, times, xattrs),
so a reader that ignores links (an old HelixFS, `helix diff`) still sees each file whole.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from helixfs.ids import object_id
from helixfs.vcs import attrs
from helixfs.vcs.attrs import LINK, Xattrs

if TYPE_CHECKING:
    from helixfs.vcs.node import Node
    from helixfs.vcs.objects import TreeEntry
    from helixfs.vcs.treeops import Change

LINK_MAX = 65000
"""Names one file may have, as on ext4: a link past it fails with EMLINK."""
LINK_ENTRY_BYTES = 2 + len(LINK) + 4 + 12  # the key and its "<QI" in an encoded entry


Folders = dict["Node", int]  # folder -> how many names of linked nodes it holds


class LinkGroup:
    """The names of one hard-linked Node: `count` names in the tree, `places` the ones
    loaded as (folder, name). The Node's own `parent`/`name` are `places[0]`. `raws`:
    the encoded entry of each place (it holds the name), until the node changes."""

    __slots__ = ("id", "count", "places", "raws")

    def __init__(self, link_id: int, count: int) -> None:
        self.id = link_id
        self.count = count
        self.places: list[tuple[Node, bytes]] = []
        self.raws: dict[tuple[Node, bytes], bytes] = {}


def new_link_id() -> int:
    """A fresh group id: random, so the groups two branches make never meet in a merge."""
    return secrets.randbits(64) or 1


def link_of(xattrs: Xattrs) -> tuple[int, int] | None:
    """(link id, names) of an entry's xattrs, None when it is not hard-linked."""
    return attrs.link_of(attrs.lookup(xattrs, LINK))


def link_id_of(xattrs: Xattrs) -> int | None:
    found = link_of(xattrs)
    return None if found is None else found[0]


def without_link(xattrs: Xattrs) -> Xattrs:
    """`xattrs` without the LINK key: what an entry is apart from its names."""
    if not xattrs or xattrs[0][0][:1] != b"\x00":
        return xattrs
    return tuple(item for item in xattrs if item[0] != LINK)


def with_link(xattrs: Xattrs, link_id: int, count: int) -> Xattrs:
    """`xattrs` carrying the LINK key (still sorted by key)."""
    return attrs.with_key(xattrs, LINK, attrs.pack_link((link_id, count)))


def import_link_id(first_path: bytes, content: bytes) -> int:
    """A group's id in an imported folder: the same folder imported again gives the same
    tree, and two imports' groups differ unless their first name and content agree."""
    return int.from_bytes(object_id(b"link\x00" + first_path + b"\x00" + content)[:8], "little")


# -- the names of a live node -----------------------------------------------------------


def places_of(node: Node) -> list[tuple[Node | None, bytes]]:
    """Every (folder, name) a node is loaded under: one unless it is hard-linked."""
    group = node.group
    if group is None:
        return [(node.parent, node.name)]
    return list(group.places)


def add_place(node: Node, parent: Node, name: bytes, folders: Folders) -> None:
    assert node.group is not None
    node.group.places.append((parent, name))
    folders[parent] = folders.get(parent, 0) + 1
    _first_place(node)


def drop_place(node: Node, parent: Node, name: bytes, folders: Folders) -> None:
    group = node.group
    assert group is not None
    for at, (folder, held) in enumerate(group.places):
        if folder is parent and held == name:
            del group.places[at]
            group.raws.pop((parent, name), None)
            _uncount(folders, parent)
            break
    _first_place(node)


def dissolve(node: Node, folders: Folders) -> None:
    """A node down to one name is a plain node again (its entry loses the LINK key)."""
    group = node.group
    assert group is not None
    for folder, _ in group.places:
        _uncount(folders, folder)
    node.group = None
    node.raw = None


def _uncount(folders: Folders, folder: Node) -> None:
    left = folders.get(folder, 0) - 1
    if left > 0:
        folders[folder] = left
    else:
        folders.pop(folder, None)


def _first_place(node: Node) -> None:
    """A node's `parent` and `name` are its first place (None: no name links it)."""
    assert node.group is not None
    places = node.group.places
    if places:
        node.parent, node.name = places[0]
    else:
        node.parent = None


# -- stored trees ----------------------------------------------------------------------


def once_per_group(
    paths: list[bytes], entry_at: Callable[[bytes], TreeEntry | None]
) -> list[bytes]:
    """`paths` with one name per link group: a conflict in a linked file is reported
    once, under its first name, though each of its names was merged."""
    seen: set[int] = set()
    kept = []
    for path in paths:
        entry = entry_at(path)
        link_id = None if entry is None else link_id_of(entry.xattrs)
        if link_id is not None:
            if link_id in seen:
                continue
            seen.add(link_id)
        kept.append(path)
    return kept


# -- a name moved to another file's node ------------------------------------------------


def relinked(old: TreeEntry, new: TreeEntry) -> bool:
    """Whether a name that holds the same file now names another node: `rm b; ln a b`
    when `a` held b's bytes. A name left alone by the others (its group dissolved) is
    not: a removed name is the change, as in a diff of a disk."""
    new_id = link_id_of(new.xattrs)
    return new_id is not None and new_id != link_id_of(old.xattrs)


def without_new_names(changes: Iterable[Change]) -> Iterator[Change]:
    """A diff's changes less the link-only ones that are new names' doing: `ln a b`
    makes `a` a link too, yet only `b` is the change (ADR 0043). `a` changed if one of
    its group's other names was there before. Changes are held only from the first
    link-only one on (rare), so a diff streams as before."""
    held: list[Change] = []
    added: Counter[int] = Counter()  # link id -> names of it this diff adds
    for change in changes:
        if change.status == "A" and change.new is not None:
            link_id = link_id_of(change.new.xattrs)
            if link_id is not None:
                added[link_id] += 1
        if held or _link_only(change):
            held.append(change)
        else:
            yield change
    for change in held:
        if not _link_only(change) or not _joined_by_new_names(change, added):
            yield change


def _link_only(change: Change) -> bool:
    old, new = change.old, change.new
    return (
        change.status == "M"
        and old is not None
        and new is not None
        and attrs.change_key(old) == attrs.change_key(new)
        and relinked(old, new)
    )


def _joined_by_new_names(change: Change, added: Counter[int]) -> bool:
    assert change.new is not None
    found = link_of(change.new.xattrs)
    return found is not None and found[1] - 1 == added[found[0]]
