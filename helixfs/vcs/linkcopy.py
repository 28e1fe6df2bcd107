"""Hard links in and out of the store: `helix import DIR` keeps a file's names inside
the folder as one link group, `helix export` writes a group as hard links (ADR 0043)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from helixfs.vcs.links import import_link_id, link_id_of, with_link

if TYPE_CHECKING:
    from helixfs.vcs.attrs import Xattrs
    from helixfs.vcs.content import Stored
    from helixfs.vcs.objects import TreeEntry

FileKey = tuple[int, int]  # (st_dev, st_ino)


class ImportLinks:
    """The names each multiply-linked file has inside an imported folder. Counted by a
    walk of the whole folder when the first such file is met: a folder without hard
    links (nearly all) pays nothing."""

    def __init__(self, root: bytes, skipped: Callable[[os.DirEntry[bytes]], bool]) -> None:
        self._root = root
        self._skipped = skipped  # the folders the import leaves out
        self._names: dict[FileKey, int] | None = None
        self._groups: dict[FileKey, tuple[int, Stored]] = {}

    def stored(self, st: os.stat_result) -> Stored | None:
        """The content stored for an earlier name of this file, if it had one."""
        found = self._groups.get((st.st_dev, st.st_ino))
        return None if found is None else found[1]

    def xattrs(self, path: bytes, st: os.stat_result, stored: Stored, xattrs: Xattrs) -> Xattrs:
        """An entry's xattrs, with the LINK key when the file has several names here."""
        if st.st_nlink < 2:
            return xattrs
        key = (st.st_dev, st.st_ino)
        count = self._count().get(key, 1)
        if count < 2:
            return xattrs  # its other names are outside the folder
        group = self._groups.get(key)
        if group is None:
            relative = os.path.relpath(path, self._root)
            group = self._groups[key] = (import_link_id(relative, stored.oid), stored)
        return with_link(xattrs, group[0], count)

    def _count(self) -> dict[FileKey, int]:
        if self._names is None:
            self._names = {}
            self._walk(self._root)
        return self._names

    def _walk(self, folder: bytes) -> None:
        assert self._names is not None
        with os.scandir(folder) as listing:
            for item in listing:
                if item.is_dir(follow_symlinks=False):
                    if not self._skipped(item):
                        self._walk(item.path)
                    continue
                st = item.stat(follow_symlinks=False)
                if st.st_nlink > 1:
                    key = (st.st_dev, st.st_ino)
                    self._names[key] = self._names.get(key, 0) + 1


class ExportLinks:
    """The first name written of each link group: its other names link to it."""

    def __init__(self) -> None:
        self._first: dict[int, bytes] = {}

    def linked(self, entry: TreeEntry, target: bytes) -> bool:
        """Make `target` a hard link to its group's first name, if one is written."""
        link_id = link_id_of(entry.xattrs)
        first = None if link_id is None else self._first.get(link_id)
        if first is None:
            return False
        os.link(first, target, follow_symlinks=False)
        return True

    def written(self, entry: TreeEntry, target: bytes) -> None:
        link_id = link_id_of(entry.xattrs)
        if link_id is not None:
            self._first.setdefault(link_id, target)
