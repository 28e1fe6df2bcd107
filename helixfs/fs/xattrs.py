"""Extended attributes: `user.*` stored in the tree entry; `user.helix.*` computed.

`user.helix.hash` (the BLAKE3 of the file's bytes: what `b3sum` prints, so an agent can
check a file against a hash it computed itself; not the id of the stored record, which
hashes a header too) and `user.helix.commit` (last commit that changed
the path) are readable but never listed, so `cp -a`, `rsync -X` and `tar --xattrs` do
not copy them onto other files where they would lie. `user.helix.message` is write-only:
it sets the message of the branch's next commit. The root of a tree (the mount root,
a branch folder) keeps its xattrs in its root record (ADR 0044), versioned as any
folder's are.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import blake3

from helixfs.errors import InvalidInput, NotPermitted, ReadOnly
from helixfs.fs.edge import NoAttr, NotSupported, XattrsFull
from helixfs.vcs.attrs import is_hidden, user_names
from helixfs.vcs.objects import XATTR_LIST_MAX, XATTR_TOTAL_MAX

if TYPE_CHECKING:
    from helixfs.vcs.worktree import Node, Worktree

HASH = b"user.helix.hash"
COMMIT = b"user.helix.commit"
MESSAGE = b"user.helix.message"
COMPUTED_PREFIX = b"user.helix."


HASH_BLOCK = 4 << 20
DIGESTS_KEPT = 4096


class ContentDigests:
    """BLAKE3 of file contents by content id: hashing a 1 GB file is done once."""

    def __init__(self) -> None:
        self._known: OrderedDict[bytes, bytes] = OrderedDict()

    def of(self, worktree: Worktree, node: Node) -> bytes:
        oid = worktree.content_id(node)
        if oid is None or node.is_dir():
            raise NoAttr()
        digest = self._known.get(oid)
        if digest is None:
            digest = self._compute(worktree, node)
            self._known[oid] = digest
            if len(self._known) > DIGESTS_KEPT:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(oid)
        return digest

    @staticmethod
    def _compute(worktree: Worktree, node: Node) -> bytes:
        if node.is_symlink():
            return blake3.blake3(worktree.readlink(node)).hexdigest().encode()
        hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
        for offset in range(0, node.size, HASH_BLOCK):
            hasher.update(worktree.read(node, offset, HASH_BLOCK))
        return str(hasher.hexdigest()).encode()


def get(worktree: Worktree, node: Node, name: bytes, digests: ContentDigests) -> bytes:
    if name == HASH:
        return digests.of(worktree, node)
    if name == COMMIT:
        if not worktree.holds(node):
            # unlinked while open, or in a removed folder: its path would name the root
            # (every commit), or another file that now has the folder-less name
            raise NoAttr()
        cid = worktree.last_commit(worktree.path_of(node))
        if cid is None:
            raise NoAttr()
        return cid.hex().encode()
    value = node.xattrs.get(name)
    if value is None or is_hidden(name):  # owners, times...: stat shows them (ADR 0042)
        raise NoAttr()
    return value


def listed(node: Node) -> list[bytes]:
    return user_names(node.xattrs)


def set_(worktree: Worktree, node: Node, name: bytes, value: bytes) -> bool:
    """Set `name`; True when the tree changed (a save), False for the message."""
    _check_writable(worktree, name)
    if name == MESSAGE:
        worktree.set_next_message(value.decode("utf-8", "replace"))
        return False
    if name.startswith(COMPUTED_PREFIX):
        raise NotPermitted(f"{name.decode(errors='replace')} is computed, not stored")
    _check_room(node, name, value)
    worktree.set_xattr(node, name, value)
    return True


def _check_room(node: Node, name: bytes, value: bytes) -> None:
    """Refuse a name that would make the list of names too long to list, or a value
    that would take the file's xattrs past XATTR_TOTAL_MAX (a replaced value counts at
    its new size)."""
    others = [
        (known, held)
        for known, held in node.xattrs.items()
        if known != name and not is_hidden(known)
    ]
    listed = sum(len(known) + 1 for known, _ in others) + len(name) + 1  # names end in NUL
    if listed > XATTR_LIST_MAX:
        raise XattrsFull(f"no room for another xattr name on this file ({XATTR_LIST_MAX} bytes)")
    total = sum(len(known) + len(held) for known, held in others) + len(name) + len(value)
    if total > XATTR_TOTAL_MAX:
        raise XattrsFull(
            f"the xattrs of one file are limited to {XATTR_TOTAL_MAX >> 10} KiB in all"
        )


def remove(worktree: Worktree, node: Node, name: bytes) -> None:
    _check_writable(worktree, name)
    if name not in node.xattrs or is_hidden(name):
        raise NoAttr()
    worktree.remove_xattr(node, name)


def _check_writable(worktree: Worktree, name: bytes) -> None:
    if not name.startswith(b"user."):
        raise NotSupported()  # security.*, trusted.*, system.posix_acl_*: not stored
    if name == b"user.":
        # Linux's own filesystems refuse a name that is only its namespace: one stored
        # here could not be copied out (rsync -X onto ext4 fails on it)
        raise InvalidInput("an xattr name needs a name after 'user.'")
    if worktree.readonly:
        raise ReadOnly("snapshots and commits are read-only")
