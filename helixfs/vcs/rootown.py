"""A root folder's own mode, owner and user xattrs, which no tree entry can hold (ADR 0044).

A folder's attributes live in its parent's entry; the root has no parent, so a commit
whose root is not 0755 and the mounting user's, or has user xattrs, names a root record
(objects.KIND_ROOT) holding them beside its listing. A root that keeps the defaults names
its listing alone, as before: an old store, and every tree with such a root, keep their
ids.
"""

from __future__ import annotations

from collections.abc import Mapping

from helixfs.vcs import attrs
from helixfs.vcs.objects import MODE_DIR, TreeEntry
from helixfs.vcs.treeops import EMPTY_TREE_ID, ROOT_PATH

ROOT_KEYS = frozenset({attrs.OWNER})
"""The hidden keys a root keeps (beside every user xattr). Its times are not versioned
(ADR 0030), and its subfolder count is counted whenever it is loaded."""

__all__ = ["ROOT_KEYS", "ROOT_PATH", "OwnKey", "keeps", "merge_own", "own_key", "own_of"]

OwnKey = tuple[int, attrs.Xattrs] | None


def own_of(mode: int, xattrs: Mapping[bytes, bytes]) -> TreeEntry | None:
    """What a root record holds for a root of this mode and these keys; None: nothing."""
    kept = tuple(sorted((k, v) for k, v in xattrs.items() if keeps(k)))
    if mode == MODE_DIR and not kept:
        return None
    return TreeEntry(b"", mode, EMPTY_TREE_ID, 0, 0, kept)


def keeps(key: bytes) -> bool:
    """Whether a root stores this xattr key: its owner and every user xattr."""
    return key in ROOT_KEYS or not attrs.is_hidden(key)


def own_key(own: TreeEntry | None) -> OwnKey:
    """What two roots are compared by: their mode and keys (not the listing)."""
    return None if own is None else (own.mode, own.xattrs)


def merge_own(
    base: TreeEntry | None, ours: TreeEntry | None, theirs: TreeEntry | None
) -> tuple[TreeEntry | None, bool]:
    """A three-way merge of roots' own attributes: (merged, clean). Changed on both
    sides differently is a conflict: ours is kept."""
    b, o, t = own_key(base), own_key(ours), own_key(theirs)
    if o == t or b == t:
        return ours, True
    if b == o:
        return theirs, True
    return ours, False
