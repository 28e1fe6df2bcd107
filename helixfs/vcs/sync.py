"""Push, fetch and pull between a Repository and a remote ObjectStore (store/s3.py).

Two rules make many machines safe on one remote (ADR 0056):

- Objects go up before the ref that reaches them, and a ref moves only by conditional
  write from the value this machine last saw: a remote ref always names a commit whose
  every object is there, and a push never overwrites a commit it has not merged.
- What this machine knows to be on the remote is its tracking refs, `remotes/NAME/B`
  (local refs, gc roots): a push sends the objects of the commits no tracking ref
  reaches, less those of the trees it builds on. A push cut short leaves a marker
  (`remotes/NAME/.pushing/B`), and the next one asks the remote which objects it has.

Fetched objects are verified (the remote store's get checks every id) and written to
the local store children first, so a fetch cut short never leaves a commit whose tree
is missing. Nothing here holds the repository's lock over the network: a mount's saves
go on while a push or fetch waits on S3.
"""

from __future__ import annotations

import contextlib
import random
import socket
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from helixfs import config
from helixfs.errors import MergeConflict, NotFound, RefConflict
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.store import RefUpdate
from helixfs.vcs.ancestry import merge_bases, only_reached
from helixfs.vcs.objects import is_structure, references, structure_references, uncompressed
from helixfs.vcs.outgoing import new_objects
from helixfs.vcs.refs import BRANCHES, HEAD, REMOTES, check_name
from helixfs.vcs.repo import Repository

TRACKING = REMOTES
PUSHING = ".pushing/"  # under remotes/NAME/: a push of that branch under way
BATCH = 256  # objects read, sent or written per step
ROUNDS = 50  # a push retried this often against a ref that keeps moving gives up
KEEP_AFTER = 6  # with keep: lost this often, the work is pushed as BRANCH@HOST instead
LARGE = 16 * 1024  # objects this big are asked about before being sent again


class RemoteMoved(RefConflict):
    """The remote's branch holds commits this machine has not merged: push refused."""


class RemoteStore(Protocol):
    """What sync needs of a remote (S3Store has it)."""

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]: ...

    def ref(self, name: str) -> bytes | None: ...

    def refs(self, prefix: str = "") -> Iterator[tuple[str, bytes]]: ...

    def write(self, objects: Mapping[ObjectId, bytes], refs: Sequence[RefUpdate] = ()) -> None: ...

    def missing(self, oids: Iterable[ObjectId]) -> list[ObjectId]: ...

    def upload(
        self,
        objects: Iterable[tuple[ObjectId, bytes]],
        *,
        apart: Callable[[bytes], bool] | None = None,
    ) -> tuple[int, int]: ...


@dataclass
class BranchSync:
    """What a push, fetch or pull did to one branch (the CLI prints these)."""

    branch: str
    # up-to-date, created, pushed, merged, kept; new, fast-forward, ahead, diverged, conflict
    status: str
    commit: str | None = None  # hex: the branch's commit after the operation
    remote_was: str | None = None
    kept_as: str | None = None  # the remote branch that holds this machine's work instead
    objects: int = 0  # objects sent or received
    bytes: int = 0
    conflicts: list[str] = field(default_factory=list)


_notices: weakref.WeakKeyDictionary[Repository, list[str]] = weakref.WeakKeyDictionary()
NOTICES = 20  # the latest this many are kept


def notice(repo: Repository, text: str) -> None:
    """Something a live sync did that its user must hear of (a conflict kept apart):
    `.helix/log` shows the latest first, above the history."""
    kept = _notices.setdefault(repo, [])
    kept.append(text)
    del kept[:-NOTICES]


def notices(repo: Repository) -> list[str]:
    return list(reversed(_notices.get(repo, [])))


def host_name(settings: config.Settings | None = None) -> str:
    """This machine's name in `BRANCH@HOST`: `remote.host` ($HELIX_HOST), else the
    hostname."""
    raw = (settings or config.load(None))["remote.host"] or socket.gethostname() or "host"
    cleaned = "".join(c if c.isalnum() or c in "-_." else "-" for c in raw).strip(".-")
    return cleaned[:60] or "host"


class Sync:
    """One remote of one repository: `name` is the remote's local name."""

    def __init__(
        self, repo: Repository, remote: RemoteStore, name: str, host: str, *, lazy: bool = False
    ) -> None:
        """`lazy`: fetch commits and folders only; file contents come when read
        (a lazy clone: vcs/ondemand.py)."""
        self.repo = repo
        self.remote = remote
        self.name = name
        self.host = host
        self.lazy = lazy

    # ------------------------------------------------------------ tracking refs

    def _tracking_ref(self, branch: str) -> str:
        return f"{TRACKING}{self.name}/{branch}"

    def tracked(self) -> dict[str, CommitId]:
        return tracked(self.repo, self.name)

    def track(self, branch: str, cid: CommitId, *, clear_push: bool = False) -> None:
        updates = [RefUpdate(self._tracking_ref(branch), cid)]
        if clear_push:
            updates.append(RefUpdate(self._tracking_ref(PUSHING + branch), None))
        self.repo.store.write({}, updates)

    def _remote_branch(self, branch: str) -> CommitId | None:
        value = self.remote.ref(BRANCHES + branch)
        return CommitId(value) if value is not None else None

    # ------------------------------------------------------------ history questions

    def _descends(self, tip: CommitId, ancestor: CommitId) -> bool:
        """Whether `ancestor` is in the local history of `tip`."""
        if tip == ancestor:
            return True
        if not self.repo.store.contains(ObjectId(ancestor)):
            return False
        return ancestor in merge_bases(self.repo, tip, ancestor)

    def _known_tips(self) -> list[CommitId]:
        """The local commits tracking refs name: they and their history are on the
        remote. A remote with no HEAD was never pushed to (or was emptied since): then
        what tracking says is about another remote of that name, and nothing is known."""
        if self.remote.ref(HEAD) is None:
            return []
        tips = set(self.tracked().values())
        return [cid for cid in tips if self.repo.store.contains(ObjectId(cid))]

    def outgoing(self, tip: CommitId) -> list[ObjectId]:
        """The objects of `tip`'s history the remote lacks, as far as tracking says: the
        commits no tracking ref reaches, and what their trees add to their parents'
        (vcs/outgoing.py: read where the trees differ, not whole)."""
        return new_objects(self.repo, only_reached(self.repo, tip, self._known_tips()))

    # ------------------------------------------------------------ sending

    def _send(self, branch: str, tip: CommitId, result: BranchSync) -> None:
        """Upload what `tip` needs, streamed (the remote packs it); after a push cut
        short, ask before sending."""
        marker = self._tracking_ref(PUSHING + branch)
        resumed = self.repo.store.ref(marker) is not None
        self.repo.store.write({}, [RefUpdate(marker, tip)])
        objects, nbytes = self.remote.upload(
            self._records(self.outgoing(tip), resumed), apart=is_structure
        )  # commits and folders in packs of their own: what a lazy clone reads (ADR 0081)
        result.objects += objects
        result.bytes += nbytes

    def _records(self, wanted: list[ObjectId], resumed: bool) -> Iterator[tuple[ObjectId, bytes]]:
        """The local records of `wanted`, less those the remote is known to have: large
        ones are asked about first, and every one after a push cut short."""
        for start in range(0, len(wanted), BATCH):
            batch = {
                oid: self.repo.store.get(oid, keep=False) for oid in wanted[start : start + BATCH]
            }
            ask = [oid for oid, record in batch.items() if resumed or len(record) >= LARGE]
            absent = set(self.remote.missing(ask)) if ask else set()
            yield from ((o, r) for o, r in batch.items() if o not in ask or o in absent)

    # ------------------------------------------------------------ push

    def push(
        self, branches: Sequence[str], *, merge: bool = False, keep: bool = False
    ) -> list[BranchSync]:
        results = [self.push_branch(b, merge=merge, keep=keep) for b in branches]
        self._offer_head(branches)
        return results

    def push_branch(self, branch: str, *, merge: bool = False, keep: bool = False) -> BranchSync:
        """Move the remote's `branch` to ours. If it moved to commits we lack: refuse
        (RemoteMoved), or `merge` them in locally and push the merge, or (`keep`, or a
        merge that conflicts with `keep`) push ours as `branch@HOST` instead."""
        check_name(branch)
        return self._push(branch, branch, self.repo.branch_head(branch), merge=merge, keep=keep)

    def _push(
        self, branch: str, target: str, local: CommitId, *, merge: bool, keep: bool
    ) -> BranchSync:
        """Local `branch` (at `local`) to the remote's `target` (itself, or its @HOST)."""
        result = BranchSync(target, "up-to-date")
        losses = 0
        for _ in range(ROUNDS):
            if keep and losses >= KEEP_AFTER and target == branch:
                return self._push_kept(branch, local, result)  # starved: ours apart
            remote_tip = self._remote_branch(target)
            result.remote_was = hex_id(remote_tip) if remote_tip else None
            if remote_tip == local:
                self.track(target, local, clear_push=True)
                result.commit = hex_id(local)
                return result
            if remote_tip is not None and not self._descends(local, remote_tip):
                merged = self._reconcile(target, local, remote_tip, merge=merge, keep=keep)
                if merged is None:
                    return self._push_kept(branch, local, result)
                local = merged
                result.status = "merged"
                continue
            self._send(target, local, result)
            try:
                self.remote.write({}, [RefUpdate(BRANCHES + target, local, expected=remote_tip)])
            except RefConflict:
                losses += 1
                _back_off(losses)
                continue  # moved while we sent: look again
            self.track(target, local, clear_push=True)
            if result.status != "merged":
                result.status = "created" if remote_tip is None else "pushed"
            result.commit = hex_id(local)
            return result
        raise RefConflict(f"branch {target!r} kept moving on the remote {self.name!r}: try again")

    def _reconcile(
        self, branch: str, local: CommitId, remote_tip: CommitId, *, merge: bool, keep: bool
    ) -> CommitId | None:
        """The local merge of the remote's new commits, or None: keep ours apart."""
        if not (merge or keep):
            raise RemoteMoved(
                f"the remote {self.name!r} has commits on {branch!r} that this store has "
                f"not merged (it is at {hex_id(remote_tip)[:12]}): nothing was pushed; "
                f"`helix pull {self.name} {branch}` then push, or `helix push --merge`"
            )
        self.download(remote_tip)
        self.track(branch, remote_tip)
        if not merge:
            return None
        try:
            result = self.repo.merge(
                hex_id(remote_tip), into=branch, message=f"merge {self.name}/{branch} into {branch}"
            )
        except MergeConflict as err:
            if keep:
                return None
            raise MergeConflict(
                f"pushing {branch!r}: merging the remote's commits conflicts ({err}); "
                "nothing was pushed"
            ) from None
        return result.commit or local

    def _push_kept(self, branch: str, local: CommitId, result: BranchSync) -> BranchSync:
        """Our work on the remote as `branch@HOST`, a branch only this machine moves."""
        kept = check_name(f"{branch}@{self.host}")
        inner = self._push(branch, kept, local, merge=False, keep=False)
        result.branch = branch
        result.status, result.kept_as, result.commit = "kept", kept, hex_id(local)
        result.objects += inner.objects
        result.bytes += inner.bytes
        return result

    def _offer_head(self, pushed: Sequence[str]) -> None:
        """The remote's HEAD (the branch a clone shows) is set by the first push: this
        store's HEAD branch if the remote has it, else the first branch pushed."""
        if self.remote.ref(HEAD) is None:
            head = self.repo.head_branch()
            if self.remote.ref(BRANCHES + head) is None and pushed:
                head = pushed[0]
            if self.remote.ref(BRANCHES + head) is not None:
                with contextlib.suppress(RefConflict):  # another machine's came first
                    self.remote.write({}, [RefUpdate(HEAD, head.encode(), expected=None)])

    # ------------------------------------------------------------ receiving

    def download(self, tip: CommitId) -> int:
        """Fetch every object of `tip`'s history the local store lacks (but file
        contents, when lazy); how many."""
        follow = structure_references if self.lazy else references
        root = ObjectId(tip)
        if self.repo.store.contains(root):
            return 0
        records: dict[ObjectId, bytes] = {}
        children: dict[ObjectId, list[ObjectId]] = {}  # each record's, decoded once
        here: set[ObjectId] = set()  # found local: the next commits' trees share them
        frontier: list[ObjectId] = [root]
        while frontier:
            want = []
            for oid in dict.fromkeys(frontier):
                if oid in records or oid in here:
                    continue
                if self.repo.store.contains(oid):
                    here.add(oid)
                else:
                    want.append(oid)
            frontier = []
            for start in range(0, len(want), BATCH):
                batch = want[start : start + BATCH]
                for oid, record in zip(batch, self.remote.get_run(batch), strict=True):
                    records[oid] = record
                    children[oid] = follow(record)
                    frontier.extend(children[oid])
        order = _children_first(children, root)
        for start in range(0, len(order), BATCH):
            batch_objects = {oid: records[oid] for oid in order[start : start + BATCH]}
            self.repo.store.write(batch_objects, uncompressed=uncompressed(batch_objects))
        return len(records)

    def remote_branches(self, only: Sequence[str] | None = None) -> dict[str, CommitId]:
        if only:
            found = {b: self._remote_branch(b) for b in only}
            missing = [b for b, tip in found.items() if tip is None]
            if missing:
                raise NotFound(f"the remote {self.name!r} has no branch {missing[0]!r}")
            return {b: tip for b, tip in found.items() if tip is not None}
        return {
            name[len(BRANCHES) :]: CommitId(value) for name, value in self.remote.refs(BRANCHES)
        }

    def fetch(self, only: Sequence[str] | None = None) -> list[BranchSync]:
        """Bring the remote's branches here: new ones become local branches, those we
        have not moved since are fast-forwarded; diverged ones are left (pull merges)."""
        results = []
        for branch, tip in self.remote_branches(only).items():
            results.append(self.fetch_branch(branch, tip))
        return results

    def fetch_branch(self, branch: str, tip: CommitId) -> BranchSync:
        result = BranchSync(branch, "up-to-date", hex_id(tip), hex_id(tip))
        result.objects = self.download(tip)
        self.track(branch, tip)
        local = self._local_head(branch)
        if local is None:
            self.repo.create_branch(branch, hex_id(tip))
            result.status = "new"
        elif local == tip:
            pass
        elif self._descends(tip, local):
            self.repo.move_refs({BRANCHES + branch: tip})
            result.status = "fast-forward"
        else:
            result.status = "ahead" if self._descends(local, tip) else "diverged"
            result.commit = hex_id(local)
        return result

    def _local_head(self, branch: str) -> CommitId | None:
        value = self.repo.store.ref(BRANCHES + branch)
        return CommitId(value) if value is not None else None

    def pull(self, only: Sequence[str] | None = None) -> list[BranchSync]:
        """Fetch, then merge the remote's commits into each branch that diverged."""
        results = self.fetch(only)
        for result in results:
            if result.status == "diverged":
                self._merge_in(result)
        return results

    def _merge_in(self, result: BranchSync) -> None:
        assert result.remote_was is not None
        try:
            merged = self.repo.merge(
                result.remote_was,
                into=result.branch,
                message=f"merge {self.name}/{result.branch} into {result.branch}",
            )
        except MergeConflict as err:
            result.status = "conflict"
            result.conflicts = [
                p.decode("utf-8", "surrogateescape") for p in getattr(err, "conflicts", [])
            ]
            return
        result.status = "merged"
        result.commit = hex_id(merged.commit) if merged.commit else result.commit


def tracked(repo: Repository, name: str) -> dict[str, CommitId]:
    """Remote `name`'s branches as this store last saw them (its tracking refs)."""
    prefix = f"{TRACKING}{name}/"
    return {
        ref[len(prefix) :]: CommitId(value)
        for ref, value in repo.store.refs(prefix)
        if not ref[len(prefix) :].startswith(".")
    }


def forget_tracking(repo: Repository, name: str) -> None:
    """Drop every tracking ref of remote `name` (removed: a later one may be another)."""
    gone = [RefUpdate(ref, None) for ref, _ in repo.store.refs(f"{TRACKING}{name}/")]
    if gone:
        repo.store.write({}, gone)


def _back_off(lost: int) -> None:
    """A random pause, longer with each lost round: two machines that keep meeting on
    one ref stop meeting in step."""
    time.sleep(random.uniform(0, min(1.0, 0.02 * 2**lost)))


def _children_first(children: Mapping[ObjectId, list[ObjectId]], root: ObjectId) -> list[ObjectId]:
    """The fetched objects (`children`: each one's fetched references, the others are
    here already or, in a lazy fetch, file contents left behind) in an order where each
    comes after all it references."""
    order: list[ObjectId] = []
    done: set[ObjectId] = set()
    stack: list[tuple[ObjectId, bool]] = [(root, False)]
    while stack:
        oid, expanded = stack.pop()
        if oid in done or oid not in children:
            continue
        if expanded:
            done.add(oid)
            order.append(oid)
            continue
        stack.append((oid, True))
        stack.extend((child, False) for child in children[oid] if child not in done)
    order.extend(oid for oid in children if oid not in done)  # not reached from root: none
    return order
