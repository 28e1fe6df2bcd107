"""Link groups kept whole in trees made outside a live Worktree: a merge (each name is
merged by its path) and a commit of path changes (`helix commit a=FILE` writes one name)
can leave the names of a group holding different files. Those are split, never joined
(joining would hide one name's content): names that still agree keep a group, each with
its own count (ADR 0043)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from helixfs.errors import NotADirectory, NotFound
from helixfs.ids import ObjectId
from helixfs.vcs.attrs import change_key
from helixfs.vcs.links import import_link_id, link_id_of, with_link, without_link

if TYPE_CHECKING:
    from helixfs.vcs.objects import TreeEntry
    from helixfs.vcs.treeops import Change, Trees


def touched_groups(changes: Iterable[Change]) -> set[int]:
    """The link ids of the entries a diff changed, on either side."""
    found = set()
    for change in changes:
        for entry in (change.old, change.new):
            link_id = None if entry is None else link_id_of(entry.xattrs)
            if link_id is not None:
                found.add(link_id)
    return found


def groups_of(entries: Iterable[TreeEntry]) -> set[int]:
    """The link ids of these entries (those a commit's changed paths held)."""
    found = set()
    for entry in entries:
        link_id = link_id_of(entry.xattrs)
        if link_id is not None:
            found.add(link_id)
    return found


def groups_at(trees: Trees, root: ObjectId, paths: Iterable[bytes]) -> set[int]:
    """The link ids of the entries at `paths` of `root` (a path not there: none)."""
    found = set()
    for path in paths:
        try:
            entry = trees.entry(root, path)
        except (NotFound, NotADirectory):
            continue
        link_id = None if entry is None else link_id_of(entry.xattrs)
        if link_id is not None:
            found.add(link_id)
    return found


def spread_edits(
    trees: Trees,
    sides: Iterable[tuple[ObjectId, list[Change]]],
    merged: ObjectId,
    objects: dict[ObjectId, bytes],
) -> tuple[ObjectId, list[bytes]]:
    """A link one side made or changed, whose file the other side edited under one of
    its names: merged by path, that name holds the edit and the others do not. The edit
    then reaches every name (the link is kept, as `ln f g` then an edit of f would on a
    disk). Two different edits of one group are a conflict, reported once under its
    first name (the names are left as merged: settle_groups splits them). Returns the
    merged tree and those conflicts."""
    fixed: dict[bytes, TreeEntry] = {}
    conflicts: list[bytes] = []
    for side, changes in sides:
        touched = touched_groups(changes)
        for link_id, group in _names(trees, side, touched).items():
            edits = _edits(trees, merged, group)
            if len(edits) > 1:
                conflicts.append(group[0][0])
            elif edits:
                (edit,) = edits.values()
                xattrs = with_link(without_link(edit.xattrs), link_id, len(group))
                for path, _ in group:  # a name the other side removed stays removed
                    if _entry(trees, merged, path) is not None:
                        fixed[path] = edit._replace(xattrs=xattrs)
    tree = trees.apply(merged, fixed, objects) if fixed else merged
    return tree, conflicts


def link_conflicts(
    trees: Trees, ours: ObjectId, theirs: ObjectId, relinked: list[bytes]
) -> list[bytes]:
    """The names both sides moved to another node whose groups differ: linked to other
    names on each side (`ln a b` on both sides makes two ids for one group: no conflict).
    Walks each side's tree once, only when a name was moved on both."""
    if not relinked:
        return []
    mine, yours = _groups_of(trees, ours, relinked), _groups_of(trees, theirs, relinked)
    return [path for path in relinked if mine.get(path) != yours.get(path)]


def _groups_of(trees: Trees, root: ObjectId, paths: list[bytes]) -> dict[bytes, frozenset[bytes]]:
    """Each path's group in `root`: the set of its names."""
    link_ids = groups_at(trees, root, paths)
    groups = {
        link_id: frozenset(path for path, _ in names)
        for link_id, names in _names(trees, root, link_ids).items()
    }
    found = {}
    for path in paths:
        entry = _entry(trees, root, path)
        link_id = None if entry is None else link_id_of(entry.xattrs)
        if link_id in groups:
            found[path] = groups[link_id]
    return found


def _names(
    trees: Trees, root: ObjectId, link_ids: set[int]
) -> dict[int, list[tuple[bytes, TreeEntry]]]:
    """Each group's names (path, entry) in `root`, for the groups among `link_ids`."""
    names: dict[int, list[tuple[bytes, TreeEntry]]] = {}
    if not link_ids:
        return names
    for path, entry in trees.walk(root):
        link_id = None if entry.is_dir() else link_id_of(entry.xattrs)
        if link_id in link_ids:
            names.setdefault(link_id, []).append((path, entry))
    return names


def _edits(
    trees: Trees, merged: ObjectId, group: list[tuple[bytes, TreeEntry]]
) -> dict[object, TreeEntry]:
    """The files the merge put under a group's names other than the group's own, by
    what they hold."""
    mine = change_key(group[0][1])
    found: dict[object, TreeEntry] = {}
    for path, _ in group:
        entry = _entry(trees, merged, path)
        if entry is not None and entry.is_file() and change_key(entry) != mine:
            found.setdefault(change_key(entry), entry)
    return found


def _entry(trees: Trees, root: ObjectId, path: bytes) -> TreeEntry | None:
    try:
        return trees.entry(root, path)
    except (NotFound, NotADirectory):
        return None


def settle_groups(
    trees: Trees, root: ObjectId, link_ids: set[int], objects: dict[ObjectId, bytes]
) -> ObjectId:
    """`root` with every group among `link_ids` whole: one file under each name, and
    each name counting the names of its group. A walk of the tree, only when asked."""
    if not link_ids:
        return root
    names: dict[int, list[tuple[bytes, TreeEntry]]] = {}
    for path, entry in trees.walk(root):
        link_id = None if entry.is_dir() else link_id_of(entry.xattrs)
        if link_id in link_ids:
            names.setdefault(link_id, []).append((path, entry))
    fixed: dict[bytes, TreeEntry] = {}
    for link_id, group in names.items():
        fixed.update(_whole(link_id, group))
    return trees.apply(root, fixed, objects) if fixed else root


def _whole(link_id: int, group: list[tuple[bytes, TreeEntry]]) -> dict[bytes, TreeEntry]:
    """The entries to rewrite so that each run of names holding the same file is a group
    of its own: the largest keeps the id, the others get ids of their own, and a name
    left alone is a plain file."""
    runs: dict[tuple[object, ...], list[bytes]] = {}
    entries = dict(group)
    for path, entry in group:  # all that a loaded node takes from its first name
        same = (entry.oid, entry.mode, entry.size, entry.mtime_ns, without_link(entry.xattrs))
        runs.setdefault(same, []).append(path)
    ordered = sorted(runs.values(), key=lambda paths: (-len(paths), paths[0]))
    fixed = {}
    for rank, paths in enumerate(ordered):
        first = entries[paths[0]]
        run_id = link_id if rank == 0 else import_link_id(paths[0], first.oid)
        for path in paths:
            entry = entries[path]
            xattrs = without_link(entry.xattrs)
            if len(paths) > 1:
                xattrs = with_link(xattrs, run_id, len(paths))
            if xattrs != entry.xattrs:
                fixed[path] = entry._replace(xattrs=xattrs)
    return fixed
