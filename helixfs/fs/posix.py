"""Owners, new nodes' owners and explicit atimes, as a local disk (ext4) has them.

The kernel checks permissions itself (`default_permissions`) against the owner and mode
that getattr shows; this module decides what is stored: the owner a new node gets from
its request, the owner and atime a setattr sets (ADR 0042). An owner equal to the
mounting user (`default`) is stored as no owner at all, so an old store reads as before.
"""

from __future__ import annotations

import stat
from typing import Any

from helixfs.vcs import attrs
from helixfs.vcs.node import Node

Owner = tuple[int, int]


def owner_of(node: Node, default: Owner) -> Owner:
    return attrs.owner_of(node.xattrs.get(attrs.OWNER), default) if node.xattrs else default


def new_node_owner(parent: Node, ctx: Any, default: Owner) -> dict[bytes, bytes]:
    """The hidden keys of a node made by request `ctx` in `parent`: the caller's uid and
    gid, or the folder's gid when the folder is setgid (as on ext4)."""
    gid = owner_of(parent, default)[1] if parent.mode & stat.S_ISGID else ctx.gid
    packed = attrs.pack_owner((ctx.uid, gid), default)
    return {} if packed is None else {attrs.OWNER: packed}


def chown_changes(
    node: Node, uid: int | None, gid: int | None, default: Owner
) -> dict[bytes, bytes | None]:
    """The OWNER change of a chown; None for an id that stays (chown's -1)."""
    owner = chowned(owner_of(node, default), uid, gid)
    return {attrs.OWNER: attrs.pack_owner(owner, default)}


def chowned(owner: Owner, uid: int | None, gid: int | None) -> Owner:
    """`owner` after a chown to `uid` and `gid` (None: that id stays)."""
    return (owner[0] if uid is None else uid, owner[1] if gid is None else gid)


def atime_change(atime_ns: int, mtime_ns: int) -> dict[bytes, bytes | None]:
    """The ATIME change of an explicit atime (utimensat, `touch -a`): none kept when it
    is the mtime, which an absent atime shows."""
    return {attrs.ATIME: attrs.pack_time(atime_ns, mtime_ns)}


def may_write(node: Node, ctx: Any, default: Owner) -> bool:
    """Whether the caller may write `node`, by its mode bits for owner, group, others
    (the supplementary groups are not in a request: a member by one of those alone is
    judged as others). Root may always."""
    if ctx.uid == 0:
        return True
    uid, gid = owner_of(node, default)
    if ctx.uid == uid:
        return bool(node.mode & stat.S_IWUSR)
    if ctx.gid == gid:
        return bool(node.mode & stat.S_IWGRP)
    return bool(node.mode & stat.S_IWOTH)
