"""The blame cache: a file's blame at a commit, kept so the next blame walks only the
commits made since (ADR 0066).

A commit never changes, so the blame of (path, commit) is true forever: nothing ever
invalidates an entry. `blame` reads the path's entries (one prefix scan) and, at each
commit of its walk that changed the path, looks for that commit among them; at a hit the
lines still waiting take their owners from it and the walk ends.
After a walk, the result is stored under the newest commit that changed the path (the
blame of every commit up to the next change is the same), and the entry the walk hit,
which the new one supersedes on this line of history, is dropped: one entry per line
of work that blames the file, not one per blame.

An entry is a ref `blame/<BLAKE3(path), 32 hex>/<commit hex>` (refs are the store's one
mutable table; it is never a gc root, never pushed, and gc drops the entries of the
commits it deletes). Its value:

    b"HXB" + version 2 + blob id (32) + lines (u32) + commits (u32) + labels' size (u32)
      + commit ids (32 each) + labels (UTF-8, NUL between) + runs (u32 length, u32
      commit index; little-endian)

Each commit's label is how blame's text shows it (`blame.label`), kept so that a cached
blame reads no commit record (ADR 0085); version 1 entries, without labels, are still
read, and replaced by version 2 ones. The blob id and line count must match the version
the walk is at, or the entry is not used. A cache that cannot be read (an unknown
version, a damaged value) is a miss and is rewritten; a cache that cannot be written
(a full disk) is skipped: blame's answer never depends on it.
"""

from __future__ import annotations

import logging
import struct
import sys
from array import array
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING

import blake3

from helixfs.errors import HelixError
from helixfs.ids import ID_SIZE, CommitId, ObjectId
from helixfs.store import RefUpdate

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

BLAME = "blame/"
MAGIC = b"HXB"
VERSION = 2
_HEAD_V1 = struct.Struct("<3sB32sII")
_HEAD = struct.Struct("<3sB32sIII")
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Cached:
    owners: list[CommitId]  # of each line
    labels: dict[CommitId, str]  # of each owner; empty from a version 1 entry
    current: bool  # written by this version: no need to write it again


def ref_name(path: bytes, commit: CommitId) -> str:
    return f"{BLAME}{blake3.blake3(path).hexdigest()[:32]}/{commit.hex()}"


def encode(blob: ObjectId, owners: Sequence[CommitId], labels: Mapping[CommitId, str]) -> bytes:
    index: dict[CommitId, int] = {}
    runs = array("I")
    for owner, group in groupby(owners):
        runs.append(sum(1 for _ in group))
        runs.append(index.setdefault(owner, len(index)))
    if sys.byteorder != "little":
        runs.byteswap()
    # a label holding a NUL reads back as too many labels: a miss, never a wrong answer
    names = "\0".join(labels[owner] for owner in index).encode("utf-8", "surrogatepass")
    head = _HEAD.pack(MAGIC, VERSION, blob, len(owners), len(index), len(names))
    return head + b"".join(index) + names + runs.tobytes()


def decode(value: bytes, blob: ObjectId, lines: int) -> Cached | None:
    """The owner of each line, if `value` is an entry for this version of the file."""
    if len(value) < _HEAD_V1.size:
        return None
    magic, version, stored_blob, count, ncommits = _HEAD_V1.unpack_from(value)
    if magic != MAGIC or version not in (1, VERSION) or stored_blob != blob or count != lines:
        return None
    if version == 1:
        ids_at, names_size = _HEAD_V1.size, 0
    elif len(value) < _HEAD.size:
        return None
    else:
        ids_at, names_size = _HEAD.size, _HEAD.unpack_from(value)[5]
    names_at = ids_at + ncommits * ID_SIZE
    runs_at = names_at + names_size
    if len(value) < runs_at or (len(value) - runs_at) % 8:
        return None
    commits = [CommitId(value[at : at + ID_SIZE]) for at in range(ids_at, names_at, ID_SIZE)]
    labels: dict[CommitId, str] = {}
    if version != 1:
        try:
            text = value[names_at:runs_at].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None
        names = text.split("\0") if ncommits else []
        if len(names) != ncommits:
            return None
        labels = dict(zip(commits, names, strict=True))
    owners = _owners(value[runs_at:], commits)
    if owners is None or len(owners) != lines:
        return None
    return Cached(owners, labels, current=version == VERSION)


def _owners(body: bytes, commits: list[CommitId]) -> list[CommitId] | None:
    runs = array("I")
    runs.frombytes(body)
    if sys.byteorder != "little":
        runs.byteswap()
    owners: list[CommitId] = []
    for at in range(0, len(runs), 2):
        if runs[at + 1] >= len(commits):
            return None
        owners += [commits[runs[at + 1]]] * runs[at]
    return owners


def entries(repo: Repository, path: bytes) -> dict[bytes, bytes]:
    """The entries of `path`, by commit: one scan, not a lookup at each commit walked
    (there are few: one per line of work that blamed the file)."""
    prefix = ref_name(path, CommitId(b""))
    try:
        return {bytes.fromhex(name[len(prefix) :]): v for name, v in repo.store.refs(prefix)}
    except (HelixError, ValueError) as exc:  # a damaged table block: walk without them
        log.info("blame cache of %s unreadable: %s", path[:80], exc)
        return {}


def save(
    repo: Repository,
    path: bytes,
    commit: CommitId,
    blob: ObjectId,
    owners: Sequence[CommitId],
    labels: Mapping[CommitId, str],
    superseded: CommitId | None,
) -> None:
    """Store the blame at `commit`, dropping the entry at `superseded` (its ancestor on
    the same first-parent line, the one the walk stopped at)."""
    updates = [RefUpdate(ref_name(path, commit), encode(blob, owners, labels))]
    if superseded is not None and superseded != commit:
        updates.append(RefUpdate(ref_name(path, superseded), None))
    try:
        repo.store.write({}, updates)
    except HelixError as exc:  # a full disk, a closed store: the answer stands without it
        log.info("blame cache not written: %s", exc)


def forget(repo: Repository, gone: Collection[bytes]) -> int:
    """Drop the entries of commits gc deleted; how many."""
    if not gone:
        return 0
    stale = [
        RefUpdate(name, None) for name, _ in repo.store.refs(BLAME) if _commit_of(name) in gone
    ]
    if stale:
        repo.store.write({}, stale)
    return len(stale)


def _commit_of(name: str) -> bytes | None:
    try:
        return bytes.fromhex(name.rsplit("/", 1)[1])
    except ValueError:
        return None
