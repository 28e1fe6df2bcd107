"""A save as a journal of what changed, not as re-encoded trees (docs/decisions/0032).

`work/BRANCH` holds the tree id of the branch's saved state (32 bytes), optionally
followed by a journal: the changes made on top of that tree since it was written. A
save writes the journal instead of the trees on the changed path; a commit, or a journal
grown past `JOURNAL_MAX`, writes the trees (a fold) and the plain tree id again (but a
commit whose folders hold ignored paths may journal too: ADR 0061).

The journal is state, not a log: it holds, for each directory changed since the fold,
the current entries of the names changed in it, and it replaces the previous journal
whole. So replaying it needs no order and no history, only the tree it sits on.

Layout after the 32-byte tree id: `MAGIC`, then the root's directory body:

- a tree record (u32 length + `T` record) of the current entries of the changed names
  that exist; a directory that itself changed has the id `NESTED` (32 zero bytes);
- the changed names that are gone: u32 count, then u16 length + name each;
- per `NESTED` entry, in name order: the id of the tree it was last stored as (32 bytes,
  `NESTED` for a new directory) and its own directory body.

Or, written by a commit whose work tree holds ignored paths and stays unfolded (ADR
0086): after the commit's tree id, `OVERLAY`, the id of the overlay (vcs/overlay.py: the
entries the commit tree lacks, a tree of parts) and the id of the tree the live work
tree journals on (`base`: kept for its next save, a gc root). The work tree is the commit
tree with the overlay grafted on; no journal follows. The tree id is `HEAD_TREE` (32
zero bytes) when written with the commit it belongs to, in its batch: the tree of the
branch's head then, whichever commit that is, so the next commit that leaves the same
things out writes no work ref at all. Every other move of the branch writes the work ref
too (`Repository.work_follows`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from helixfs.errors import CorruptObject
from helixfs.ids import ID_SIZE, ObjectId
from helixfs.vcs.objects import TreeEntry, decode_tree, encode_tree_raw

MAGIC = b"HXJ\x01"
OVERLAY = b"HXO\x01"
NESTED = ObjectId(bytes(ID_SIZE))
HEAD_TREE = NESTED  # an overlay's tree: the branch head's (ADR 0086)
# A journal past this many bytes (~30 files' entries) is folded into trees: a save
# re-sends the whole journal, so its cost grows with the changes since the last fold.
# 2-16 KiB measured alike within the noise of a loaded host (tar-x-like saves).
JOURNAL_MAX = 2 * 1024

_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")


@dataclass
class DirChanges:
    """What changed in one directory since its tree `base` (None: a new directory)."""

    base: ObjectId | None
    entries: list[TreeEntry]  # current entries of changed names; NESTED id: see `nested`
    gone: list[bytes]
    nested: dict[bytes, DirChanges]


def encode_dir(
    raws: list[bytes], gone: list[bytes], nested: list[tuple[ObjectId | None, bytes]]
) -> bytes:
    """One directory's body: `raws` are the encoded entries in name order, `nested` the
    (base, body) of each NESTED entry among them, in the same order."""
    tree = encode_tree_raw(raws)
    parts = [_U32.pack(len(tree)), tree, _U32.pack(len(gone))]
    parts += [_U16.pack(len(name)) + name for name in gone]
    for base, body in nested:
        parts += [base or NESTED, body]
    return b"".join(parts)


@dataclass(frozen=True)
class Saved:
    """A saved work state: its tree, with the changes journaled on it or an overlay."""

    tree: ObjectId
    changes: DirChanges | None = None
    overlay: ObjectId | None = None  # the overlay grafted on `tree` (ADR 0086)
    base: ObjectId | None = None  # with an overlay: the tree the live work tree journals on

    @property
    def on_head(self) -> bool:
        """The tree is the branch head's (`HEAD_TREE`)."""
        return self.tree == HEAD_TREE


def work_value(tree: ObjectId, root_body: bytes | None) -> bytes:
    return tree if root_body is None else tree + MAGIC + root_body


def overlay_value(tree: ObjectId, overlay: ObjectId, base: ObjectId) -> bytes:
    return tree + OVERLAY + overlay + base


_OVERLAY_SIZE = 3 * ID_SIZE + len(OVERLAY)


def parse(value: bytes) -> Saved:
    """A `work/BRANCH` value: the tree, a journal or an overlay on it."""
    if value[ID_SIZE : ID_SIZE + len(OVERLAY)] == OVERLAY:
        if len(value) != _OVERLAY_SIZE:
            raise CorruptObject("saved work state: an overlay of the wrong length")
        at = ID_SIZE + len(OVERLAY)
        tree, overlay, base = value[:ID_SIZE], value[at : at + ID_SIZE], value[at + ID_SIZE :]
        return Saved(ObjectId(tree), None, ObjectId(overlay), ObjectId(base))
    tree, changes = split(value)
    return Saved(tree, changes)


def split(value: bytes) -> tuple[ObjectId, DirChanges | None]:
    """The saved tree and the changes journaled on top of it (None: none). A value with
    an overlay is refused: `parse` reads it."""
    tree = ObjectId(value[:ID_SIZE])
    if len(value) == ID_SIZE:
        return tree, None
    if value[ID_SIZE : ID_SIZE + len(MAGIC)] != MAGIC:
        raise CorruptObject("saved work state: unknown journal format")
    try:
        changes, end = _decode_dir(value, ID_SIZE + len(MAGIC), tree)
    except (struct.error, IndexError, ValueError) as exc:
        raise CorruptObject(f"saved work state: truncated journal: {exc}") from None
    if end != len(value):
        raise CorruptObject("saved work state: journal has trailing bytes")
    return tree, changes


def tree_of(value: bytes) -> ObjectId:
    """The saved tree id (`HEAD_TREE` for an overlay on the branch head's tree)."""
    return ObjectId(value[:ID_SIZE])


def has_journal(value: bytes | None) -> bool:
    """Whether a saved state is more than a plain tree id (a journal or an overlay on
    it): a fold writes it as trees."""
    return value is not None and len(value) > ID_SIZE


def referenced_by(saved: Saved) -> Iterator[tuple[ObjectId, bool]]:
    """`referenced` of a whole saved state beyond its tree: an overlay's tree of parts
    (a directory) and the journal base (a root)."""
    if saved.changes is not None:
        yield from referenced(saved.changes)
    if saved.overlay is not None and saved.base is not None:
        yield saved.overlay, True
        yield saved.base, False  # a root record or a tree: any of ROOT_KINDS


def _decode_dir(value: bytes, pos: int, base: ObjectId | None) -> tuple[DirChanges, int]:
    (size,) = _U32.unpack_from(value, pos)
    pos += 4
    tree = decode_tree(value[pos : pos + size])
    pos += size
    (count,) = _U32.unpack_from(value, pos)
    pos += 4
    gone = []
    for _ in range(count):
        (length,) = _U16.unpack_from(value, pos)
        gone.append(value[pos + 2 : pos + 2 + length])
        pos += 2 + length
    nested = {}
    for entry in tree.entries:
        if entry.oid == NESTED:
            sub_base = ObjectId(value[pos : pos + ID_SIZE])
            if len(sub_base) != ID_SIZE:
                raise ValueError("nested directory base cut short")
            sub, pos = _decode_dir(value, pos + ID_SIZE, None if sub_base == NESTED else sub_base)
            nested[entry.name] = sub
    return DirChanges(base, list(tree.entries), gone, nested), pos


def referenced(changes: DirChanges) -> Iterator[tuple[ObjectId, bool]]:
    """Every object the journal names, with whether it must be a directory: gc keeps
    them (a file written since the fold lives only here), fsck checks them."""
    if changes.base is not None:
        yield changes.base, True
    for entry in changes.entries:
        if entry.oid != NESTED:
            yield entry.oid, entry.mode & 0o170000 == 0o040000
    for sub in changes.nested.values():
        yield from referenced(sub)
