"""How long snapshots live: when each was made, which are pinned, which gc removes.

A snapshot ref holds only its commit id, so its label's own facts sit in a ref beside
it, `snapshot-info/NAME`: `b"HSI"` + version (1) + flags (1: bit 0 = pinned) +
the time it was made (8, big-endian ns). One that arrives through `move_refs` (a git
tag imported, a salvage) is made then; one from before this existed counts as made
when its commit was. No gc root and no fsck check reads this namespace: it names no
object.

`gc.snapshot_ttl` (or `helix gc --before`) removes snapshots older than that, unless
pinned; `--keep-last N` keeps the N newest whatever their age. Removing one is
`Repository.delete_snapshot`: a mount's view of it goes as when a user removes it.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from helixfs.errors import HelixError, NotFound
from helixfs.store import ANY, RefUpdate
from helixfs.vcs.refs import SNAPSHOTS, check_name, snapshot_ref

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

INFO = "snapshot-info/"
_MAGIC = b"HSI\x01"
_LAYOUT = struct.Struct(">BQ")  # flags, made_ns
_PINNED = 1


@dataclass(frozen=True)
class SnapshotAge:
    name: str
    made_ns: int  # when the snapshot was made (or its commit, for an older one)
    pinned: bool


def info_ref(name: str) -> str:
    return INFO + name


def encode(made_ns: int, pinned: bool) -> bytes:
    return _MAGIC + _LAYOUT.pack(_PINNED if pinned else 0, made_ns)


def decode(value: bytes) -> tuple[int, bool] | None:
    """(made_ns, pinned), or None for a value this version cannot read."""
    if len(value) != len(_MAGIC) + _LAYOUT.size or not value.startswith(_MAGIC):
        return None
    flags, made_ns = _LAYOUT.unpack_from(value, len(_MAGIC))
    return made_ns, bool(flags & _PINNED)


def made_now(name: str) -> RefUpdate:
    """The info of a snapshot made now: written with its ref."""
    return RefUpdate(info_ref(name), encode(time.time_ns(), False), expected=ANY)


def renamed(repo: Repository, old: str, new: str) -> list[RefUpdate]:
    """The info's move with a rename (none if the old name had none)."""
    value = repo.store.ref(info_ref(old))
    if value is None:
        return []
    return [RefUpdate(info_ref(old), None, expected=ANY), RefUpdate(info_ref(new), value)]


def dropped(name: str) -> RefUpdate:
    return RefUpdate(info_ref(name), None, expected=ANY)


def ages(repo: Repository) -> list[SnapshotAge]:
    """Every snapshot's age and pin, newest first."""
    found = []
    for info in repo.snapshots():
        value = repo.store.ref(info_ref(info.name))
        known = decode(value) if value is not None else None
        if known is None:
            try:
                known = (repo.commit_info(info.commit).time_ns, False)
            except HelixError:
                known = (0, False)  # unreadable: as old as can be, fsck names it
        found.append(SnapshotAge(info.name, known[0], known[1]))
    return sorted(found, key=lambda age: (age.made_ns, age.name), reverse=True)


def pin(repo: Repository, name: str, pinned: bool = True) -> SnapshotAge:
    """Mark a snapshot kept (or not) whatever its age; its made time is kept."""
    with repo.lock:
        if repo.store.ref(snapshot_ref(check_name(name, "snapshot"))) is None:
            raise NotFound(f"no snapshot named {name!r}")
        age = next(a for a in ages(repo) if a.name == name)
        repo.store.write({}, [RefUpdate(info_ref(name), encode(age.made_ns, pinned))])
        return SnapshotAge(name, age.made_ns, pinned)


def expired(
    repo: Repository, older_than_s: float = 0, keep_last: int | None = None
) -> list[SnapshotAge]:
    """The snapshots gc removes: not pinned, not among the `keep_last` newest of those,
    and made longer ago than `older_than_s` (0: any age when `keep_last` is given;
    neither given: none)."""
    if older_than_s <= 0 and keep_last is None:
        return []
    cutoff = time.time_ns() - int(older_than_s * 1e9) if older_than_s > 0 else None
    unpinned = [age for age in ages(repo) if not age.pinned]
    past_kept = unpinned[keep_last:] if keep_last is not None else unpinned
    return [age for age in past_kept if cutoff is None or age.made_ns < cutoff]


def expire_snapshots(
    repo: Repository,
    older_than_s: float = 0,
    keep_last: int | None = None,
    *,
    dry_run: bool = False,
) -> list[SnapshotAge]:
    """Remove the expired snapshots (see `expired`); the ones removed (or, dry, that
    would be)."""
    with repo.lock:
        doomed = expired(repo, older_than_s, keep_last)
        if not dry_run:
            for age in doomed:
                repo.delete_snapshot(age.name)
        return doomed


__all__ = ["INFO", "SNAPSHOTS", "SnapshotAge", "ages", "expire_snapshots", "expired", "pin"]
