"""Extended attributes: `user.*` stored in the tree entry; `user.helix.*` computed.

`user.helix.hash` (content BLAKE3) and `user.helix.commit` (last commit that changed
the path) are readable but never listed, so `cp -a`, `rsync -X` and `tar --xattrs` do
not copy them onto other files where they would lie. `user.helix.message` is write-only:
it sets the message of the branch's next commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helixfs.errors import NotPermitted, ReadOnly
from helixfs.fs.edge import NoAttr, NotSupported

if TYPE_CHECKING:
    from helixfs.vcs.worktree import Node, Worktree

HASH = b"user.helix.hash"
COMMIT = b"user.helix.commit"
MESSAGE = b"user.helix.message"
COMPUTED_PREFIX = b"user.helix."


def get(worktree: Worktree, node: Node, name: bytes) -> bytes:
    if name == HASH:
        oid = worktree.content_id(node)
        if oid is None:
            raise NoAttr()
        return oid.hex().encode()
    if name == COMMIT:
        cid = worktree.last_commit(worktree.path_of(node))
        if cid is None:
            raise NoAttr()
        return cid.hex().encode()
    value = node.xattrs.get(name)
    if value is None:
        raise NoAttr()
    return value


def listed(node: Node) -> list[bytes]:
    return sorted(node.xattrs)


def set_(worktree: Worktree, node: Node, name: bytes, value: bytes) -> bool:
    """Set `name`; True when the tree changed (a save), False for the message."""
    _check_writable(worktree, name)
    if name == MESSAGE:
        worktree.set_next_message(value.decode("utf-8", "replace"))
        return False
    if name.startswith(COMPUTED_PREFIX):
        raise NotPermitted(f"{name.decode(errors='replace')} is computed, not stored")
    worktree.set_xattr(node, name, value)
    return True


def remove(worktree: Worktree, node: Node, name: bytes) -> None:
    _check_writable(worktree, name)
    if name not in node.xattrs:
        raise NoAttr()
    worktree.remove_xattr(node, name)


def _check_writable(worktree: Worktree, name: bytes) -> None:
    if not name.startswith(b"user."):
        raise NotSupported()  # security.*, trusted.*, system.posix_acl_*: not stored
    if worktree.readonly:
        raise ReadOnly("snapshots and commits are read-only")
