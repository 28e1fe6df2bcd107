"""`helix push --verify`: read back what the remote holds for pushed branches, and mend it.

A push trusts the remote to keep what it was sent; a disk or a bucket lifecycle rule
may not. This reads every object of each branch's history as the remote has it (each
checked against its id by the remote store's reads, in packs first, then loose), and
writes a good loose copy, from the local store, of every object whose remote copies are
all damaged or missing. A loose copy is what reads fall back to past a damaged packed
one (store/s3.py), and writing the right bytes under an id is safe whatever another
machine does meanwhile: no ref moves. An object neither side has whole is reported
(exit 1): a lazy clone lacks file contents it never read, so it cannot mend those.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from helixfs.errors import CorruptObject, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.vcs.objects import references
from helixfs.vcs.repo import Repository

BATCH = 256  # objects read from the remote per step


class VerifiedRemote(Protocol):
    """What verifying needs of a remote (S3Store has it)."""

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes: ...

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]: ...

    def put_again(self, objects: Iterable[tuple[ObjectId, bytes]]) -> int: ...


@dataclass
class Verified:
    """What a verify read and mended."""

    objects: int = 0  # read back and checked
    damaged: list[str] = field(default_factory=list)  # hex ids whose remote copy was bad
    missing: list[str] = field(default_factory=list)  # ... or absent
    repaired: int = 0  # of those, written again from the local store
    unmendable: list[str] = field(default_factory=list)  # bad there, and not here either

    def as_json(self) -> dict[str, object]:
        return {
            "objects": self.objects,
            "damaged": self.damaged,
            "missing": self.missing,
            "repaired": self.repaired,
            "unmendable": self.unmendable,
        }

    def summary(self) -> str:
        text = f"verified {self.objects} object(s) on the remote"
        bad = len(self.damaged) + len(self.missing)
        if bad:
            text += (
                f": {len(self.damaged)} damaged, {len(self.missing)} missing,"
                f" {self.repaired} written again from this store"
            )
        if self.unmendable:
            text += (
                f"; {len(self.unmendable)} this store lacks too (first {self.unmendable[0]}):"
                " push from a machine that has them"
            )
        return text


def verify(repo: Repository, remote: VerifiedRemote, tips: Iterable[CommitId]) -> Verified:
    """Every object the remote's `tips` reach, read back and checked; bad ones mended."""
    report = Verified()
    pending = list(dict.fromkeys(ObjectId(tip) for tip in tips))
    seen = set(pending)
    while pending:
        batch, pending = pending[:BATCH], pending[BATCH:]
        for record in _read(repo, remote, batch, report):
            fresh = [child for child in references(record) if child not in seen]
            seen.update(fresh)
            pending.extend(fresh)
    return report


def _read(
    repo: Repository, remote: VerifiedRemote, batch: list[ObjectId], report: Verified
) -> list[bytes]:
    """The records of `batch` (the remote's, else the local copy written back)."""
    report.objects += len(batch)
    try:
        return remote.get_run(batch)
    except (CorruptObject, NotFound):
        pass  # some object of the batch is bad: each is read on its own
    records, mend = [], []
    for oid in batch:
        try:
            records.append(remote.get(oid, keep=False))
            continue
        except CorruptObject:
            report.damaged.append(hex_id(oid))
        except NotFound:
            report.missing.append(hex_id(oid))
        local = _local(repo, oid)
        if local is None:
            report.unmendable.append(hex_id(oid))
            continue
        records.append(local)
        mend.append((oid, local))
    report.repaired += remote.put_again(mend) if mend else 0
    return records


def _local(repo: Repository, oid: ObjectId) -> bytes | None:
    try:
        return repo.store.get(oid, keep=False)
    except (NotFound, CorruptObject):
        return None
