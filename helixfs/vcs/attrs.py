"""POSIX attributes kept as hidden keys among a tree entry's xattrs (ADR 0042).

A user xattr name is a C string, so it never holds NUL: a key starting with b"\\x00" can
never clash with one, and sorts before every user key. Each attribute is one key, present
only when its value differs from its default, so an entry written before these keys
existed (or one that keeps every default) encodes to the same bytes, and its tree keeps
its id and its dedup with every other store.

| key      | value (little-endian)  | default when absent                       |
|----------|------------------------|-------------------------------------------|
| OWNER    | "<II" uid, gid         | the mounting user                         |
| ATIME    | "<q" atime_ns          | the entry's mtime_ns                      |
| CTIME    | "<q" ctime_ns          | the entry's mtime_ns                      |
| RDEV     | "<Q" rdev (os.makedev) | 0 (only block and character devices)      |
| SUBDIRS  | "<I" subfolder count   | 0 (folders only: st_nlink = 2 + count)    |
| LINK     | "<QI" link id, names   | none: not hard-linked (ADR 0043)          |
| GRAFT    | empty                  | absent; only in an overlay's parts: the entry names |
|          |                        | a nested part (vcs/overlay.py, ADR 0086)  |

Everything that shows, counts or copies xattrs to a user (listxattr, getxattr, the size
bounds, export) goes through `user_xattrs`; the hidden keys travel with the entry
wherever the entry goes (branches, merges, snapshots).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId
from helixfs.vcs.objects import TreeEntry

HIDDEN = 0  # the first byte of every hidden key
OWNER = b"\x00o"
ATIME = b"\x00a"
CTIME = b"\x00c"
RDEV = b"\x00r"
SUBDIRS = b"\x00n"
LINK = b"\x00l"
GRAFT = b"\x00g"

_OWNER = struct.Struct("<II")
_TIME = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_LINK = struct.Struct("<QI")

Xattrs = tuple[tuple[bytes, bytes], ...]

HIDDEN_ENTRY_MAX = 2 + 2 + 4 + 8  # an encoded hidden key: lengths, key, widest value


def is_hidden(key: bytes) -> bool:
    return bool(key) and key[0] == HIDDEN


def user_xattrs(xattrs: Iterable[tuple[bytes, bytes]]) -> Xattrs:
    """The xattrs a user sees: every key but the hidden ones, in the order given."""
    return tuple((key, value) for key, value in xattrs if not is_hidden(key))


def user_names(xattrs: Mapping[bytes, bytes]) -> list[bytes]:
    """The user xattr names of a mapping, sorted (what listxattr answers)."""
    return sorted(key for key in xattrs if not is_hidden(key))


def hidden_xattrs(xattrs: Iterable[tuple[bytes, bytes]]) -> Xattrs:
    return tuple((key, value) for key, value in xattrs if is_hidden(key))


def lookup(xattrs: Xattrs, key: bytes) -> bytes | None:
    """A hidden key's value in a sorted tuple: they come first, so stop at a user key."""
    for found, value in xattrs:
        if found == key:
            return value
        if not is_hidden(found):
            return None
    return None


def with_key(xattrs: Xattrs, key: bytes, value: bytes | None) -> Xattrs:
    """`xattrs` with `key` set to `value` (None: removed), still sorted by key."""
    kept = [(found, held) for found, held in xattrs if found != key]
    if value is not None:
        kept.append((key, value))
        kept.sort()
    return tuple(kept)


def with_keys(xattrs: Xattrs, changes: Mapping[bytes, bytes | None]) -> Xattrs:
    """`xattrs` with several keys set or removed at once (one sort)."""
    kept = [(found, held) for found, held in xattrs if found not in changes]
    kept.extend((key, value) for key, value in changes.items() if value is not None)
    kept.sort()
    return tuple(kept)


# -- values ---------------------------------------------------------------------------


def _unpack(layout: struct.Struct, value: bytes, what: str) -> tuple[int, ...]:
    if len(value) != layout.size:
        raise CorruptObject(f"stored {what} has {len(value)} bytes, not {layout.size}")
    return layout.unpack(value)


def pack_owner(owner: tuple[int, int], default: tuple[int, int]) -> bytes | None:
    """The OWNER value of `owner`, or None when it is the default (nothing stored)."""
    return None if owner == default else _OWNER.pack(*owner)


def owner_of(value: bytes | None, default: tuple[int, int]) -> tuple[int, int]:
    if value is None:
        return default
    uid, gid = _unpack(_OWNER, value, "owner")
    return uid, gid


def pack_time(time_ns: int, mtime_ns: int) -> bytes | None:
    """An ATIME or CTIME value, or None when it equals the mtime (its default)."""
    return None if time_ns == mtime_ns else _TIME.pack(time_ns)


def time_of(value: bytes | None, mtime_ns: int) -> int:
    return mtime_ns if value is None else _unpack(_TIME, value, "time")[0]


def pack_rdev(rdev: int) -> bytes | None:
    return _U64.pack(rdev) if rdev else None


def rdev_of(value: bytes | None) -> int:
    return 0 if value is None else _unpack(_U64, value, "device number")[0]


def pack_count(count: int) -> bytes | None:
    return _U32.pack(count) if count else None


def count_bytes(count: int) -> bytes:
    return _U32.pack(count)


def count_of(value: bytes | None) -> int:
    return 0 if value is None else _unpack(_U32, value, "subfolder count")[0]


def pack_link(link: tuple[int, int] | None) -> bytes | None:
    """A LINK value: a hard-link group's id (unique within a branch's tree) and how
    many names the tree holds for it (st_nlink, known without loading them all)."""
    return None if link is None else _LINK.pack(*link)


def link_of(value: bytes | None) -> tuple[int, int] | None:
    if value is None:
        return None
    link_id, names = _unpack(_LINK, value, "link")
    return link_id, names


# -- whole entries --------------------------------------------------------------------


def subdirs_of(xattrs: Xattrs) -> int:
    return count_of(lookup(xattrs, SUBDIRS))


def with_subdirs(xattrs: Xattrs, count: int) -> Xattrs:
    """A folder entry's xattrs carrying the count of folders its tree lists."""
    return with_key(xattrs, SUBDIRS, pack_count(count))


def folder_entry(entry: TreeEntry, sub: ObjectId, listed: Iterable[TreeEntry]) -> TreeEntry:
    """`entry` as a folder holding tree `sub`, whose entries are `listed`: its SUBDIRS
    counted from them (every builder of a folder entry comes here, so st_nlink is right
    without listing the folder)."""
    count = sum(1 for child in listed if child.is_dir())
    return TreeEntry(
        entry.name, entry.mode, sub, 0, entry.mtime_ns, with_subdirs(entry.xattrs, count)
    )


def entry_owner(xattrs: Xattrs, default: tuple[int, int]) -> tuple[int, int]:
    return owner_of(lookup(xattrs, OWNER), default)


def owner_text(xattrs: Xattrs) -> str:
    """`uid:gid`, or `mounting user` where none is stored (what a mount shows then)."""
    value = lookup(xattrs, OWNER)
    if value is None:
        return "mounting user"
    uid, gid = owner_of(value, (0, 0))
    return f"{uid}:{gid}"


def metadata_changes(old: TreeEntry, new: TreeEntry) -> list[str]:
    """What changed besides the content between two entries of a path: `mode`,
    `owner`, `device`, `link` (the name now shares another file's node: ADR 0043),
    `xattrs` (the times are not changes, as the mtime is not)."""
    changed = []
    if old.mode != new.mode:
        changed.append("mode")
    for key, what in ((OWNER, "owner"), (RDEV, "device")):
        if lookup(old.xattrs, key) != lookup(new.xattrs, key):
            changed.append(what)
    old_link, new_link = link_of(lookup(old.xattrs, LINK)), link_of(lookup(new.xattrs, LINK))
    if new_link is not None and (old_link is None or old_link[0] != new_link[0]):
        changed.append("link")
    if user_xattrs(old.xattrs) != user_xattrs(new.xattrs):
        changed.append("xattrs")
    return changed


# Keys that are times or derived from the tree itself: like the mtime, a change of them
# alone is no change of the path (diff, log, merge, `user.helix.commit`). A link's
# count changes with every new name of it: that name is the change (ADR 0043).
_UNCOMPARED = frozenset({ATIME, CTIME, SUBDIRS, LINK})
EntryKey = tuple[bytes, int, Xattrs]


def compared(xattrs: Xattrs) -> Xattrs:
    """The xattrs a change is judged by: all but the times, the subfolder count, the
    link."""
    if not xattrs or not is_hidden(xattrs[0][0]):
        return xattrs
    return tuple(item for item in xattrs if item[0] not in _UNCOMPARED)


def change_key(entry: TreeEntry | None) -> EntryKey | None:
    """What a path's entry is compared by to tell whether it changed."""
    return None if entry is None else (entry.oid, entry.mode, compared(entry.xattrs))
