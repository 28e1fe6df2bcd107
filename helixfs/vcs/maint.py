"""Store maintenance: gc (mark from every ref, sweep), fsck (prove the store), stats.

gc marks from `branches/*`, `snapshots/*` and `work/*` (a saved work tree is as precious
as a commit). fsck never raises on a bad object: it reports every problem it finds so a
damaged store can be assessed in one run.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from helixfs.errors import HelixError, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.store import REPACK_BATCH, Compaction
from helixfs.vcs import blamecache, damage, experiments, journal
from helixfs.vcs.ancestry import stored_generation
from helixfs.vcs.content import EMPTY
from helixfs.vcs.experiments import EXPERIMENTS
from helixfs.vcs.objects import (
    DIRECTORY_KINDS,
    HEADER_SIZE,
    KIND_BLOB,
    KIND_CHUNKED,
    KIND_COMMIT,
    KIND_NAMES,
    KIND_PAGED,
    KIND_ROOT,
    KIND_TREE,
    ROOT_KINDS,
    ChunkedFile,
    Commit,
    decode_any,
    decode_chunked,
    decode_commit,
    decode_paged,
    decode_root,
    decode_tree,
    kind_of,
    references,
    tree_dirs,
)
from helixfs.vcs.refs import BRANCHES, HEAD, REMOTES, SNAPSHOTS, WORK
from helixfs.vcs.treeops import EMPTY_TREE_ID

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)

CONSTANTS = (EMPTY.oid, EMPTY_TREE_ID)
"""Kept by gc whatever refs say: a new empty file or directory points at them unwritten."""

Progress = Callable[[int, int], None] | None
LiveChunks = Callable[[], Iterable[ObjectId]]
DELETE_BATCH = 1000  # objects deleted per hold of the repository lock (~20 ms)
# Marking runs beside a mount's requests. Python hands the GIL over only every 5 ms, and
# a request needs it several times: without a pause now and then, a save during a mark
# took 100 ms at p99 (40 ms with it; the mark is no slower).
YIELD_EVERY = 256
LISTINGS_KEPT = 4096  # tree listings repack keeps decoded (it needs each twice, in a row)


@dataclass(frozen=True)
class GcReport:
    dry_run: bool
    reachable: int
    unreachable: int
    logical_bytes: int  # record bytes of what was (or would be) dropped, uncompressed
    # how much the store's disk usage dropped, measured after compaction; None on a dry
    # run. Far below logical_bytes when the records were compressed or deduplicated.
    freed_bytes: int | None
    repacked: int | None  # trees stored as deltas on their previous version; None: dry run
    # deleted chunks still on disk, in blob files shared with live ones; None: dry run
    kept_on_disk_bytes: int | None = None
    # more free disk space needed before they can go (0: none waits for room); None: dry run
    free_needed_bytes: int | None = None
    not_repacked: str | None = None  # why trees were left whole (a full disk, say)


@dataclass(frozen=True)
class FsckReport:
    objects: int
    refs: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class RepoStats:
    objects: int
    logical_bytes: int
    stored_bytes: int
    disk_bytes: int
    referenced_bytes: int  # file bytes the branch and snapshot heads show, summed
    dedup_ratio: float  # referenced_bytes / logical_bytes of the records that hold them
    compression_ratio: float  # logical_bytes / stored_bytes
    cache_hit_ratio: float
    commits_measured: int
    commit_p50_us: float | None
    commit_p95_us: float | None
    branches: int
    snapshots: int
    # refs whose history or tree could not be read: left out of the numbers above
    problems: list[str] = field(default_factory=list)


def _roots(repo: Repository) -> Iterator[tuple[str, ObjectId]]:
    for prefix in (BRANCHES, SNAPSHOTS, WORK, REMOTES):  # a remote's branches: ADR 0056
        for name, value in repo.store.refs(prefix):
            if prefix != WORK:
                yield name, ObjectId(value)
            elif journal.tree_of(value) != journal.HEAD_TREE:  # else a branch's tree
                yield name, journal.tree_of(value)


def _journaled(
    repo: Repository, problems: list[str] | None = None
) -> Iterator[tuple[str, ObjectId, bool]]:
    """What the journals and overlays of saved work trees name (ref, object, whether a
    directory): content saved since the last fold, or ignored, is reachable from nowhere
    else. An unreadable journal stops gc (raised), and is one of fsck's `problems`."""
    for name, value in repo.store.refs(WORK):
        try:
            saved = journal.parse(value)
        except HelixError as exc:
            if problems is None:
                raise
            problems.append(f"ref {name}: {exc}")
            continue
        for oid, is_dir in journal.referenced_by(saved):
            yield name, oid, is_dir


def roots(
    repo: Repository, in_use: Iterable[ObjectId] = (), without: Collection[str] = ()
) -> list[ObjectId]:
    """Where marking starts: every ref (journals included) but those `without` names,
    the constants, and content a mount still serves."""
    journaled = [oid for _, oid, _ in _journaled(repo)]
    refs = [oid for name, oid in _roots(repo) if name not in without]
    named = [oid for name, oid in _experimented(repo) if name not in without]
    return refs + named + journaled + list(CONSTANTS) + list(in_use)


def _experimented(repo: Repository) -> Iterator[tuple[str, ObjectId]]:
    """The commits experiment records name (base, tip, each score's, the pick's), so
    a score stays on a commit its branch was reset past or deleted with (ADR 0069). A
    record that cannot be read stops gc (raised): what it names is not known."""
    for name, value in repo.store.refs(EXPERIMENTS):
        for cid in experiments.decode(name[len(EXPERIMENTS) :], value).commits():
            yield name, ObjectId(cid)


def mark(
    repo: Repository,
    start: Iterable[ObjectId],
    progress: Progress = None,
    reachable: set[ObjectId] | None = None,
) -> set[ObjectId]:
    """Every object reachable from `start`, added to `reachable` (a finished mark: what
    it holds is not walked again, so a second mark from newer roots only walks what is
    new). A chunked file's chunks are blobs, which point at nothing: they are marked
    without being read (most of a store's bytes)."""
    reachable = set() if reachable is None else reachable
    stack = [oid for oid in start if oid not in reachable]
    while stack:
        oid = stack.pop()
        if oid in reachable:
            continue
        reachable.add(oid)
        if len(reachable) % YIELD_EVERY == 0:
            time.sleep(0.0002)  # hands the GIL to a mount's request thread (see YIELD_EVERY)
            if progress is not None:  # also where the automatic gc gives way (collector.Pacer)
                progress(len(reachable), 0)
        try:
            record = repo.store.get(oid, keep=False)
        except NotFound:
            continue
        if kind_of(record) == KIND_CHUNKED:
            reachable.update(chunk for chunk, _ in decode_chunked(record).chunks)
        else:
            stack.extend(o for o in references(record) if o not in reachable)
    return reachable


@dataclass
class _Unreachable:
    sizes: dict[ObjectId, int]  # each candidate's record size
    stored: int  # how many objects the store held
    recent: list[ObjectId]  # the commits among them made since the grace began


def unreachable(
    repo: Repository,
    reachable: set[ObjectId],
    since_ns: int,
    progress: Progress = None,
    live_chunks: LiveChunks = tuple,
) -> _Unreachable:
    """The stored objects `reachable` leaves out. `live_chunks` is asked again after
    the listing: a file stored ahead of its close adds chunks while the mark runs, and
    each would be read here only to learn its size."""
    found = _Unreachable({}, 0, [])
    all_ids = list(repo.store.ids())
    reachable.update(live_chunks())
    found.stored = len(all_ids)
    for done, oid in enumerate(all_ids, 1):
        if oid not in reachable:
            found.sizes[oid] = 0
            with contextlib.suppress(HelixError):
                record = repo.store.get(oid, keep=False)
                found.sizes[oid] = len(record)
                if kind_of(record) == KIND_COMMIT and decode_commit(record).time_ns >= since_ns:
                    found.recent.append(oid)
        if progress is not None:
            progress(done, len(all_ids))
    return found


def gc(
    repo: Repository,
    live: Callable[[], list[ObjectId]],
    dry_run: bool,
    progress: Progress = None,
    grace_seconds: float = 0,
    without: Collection[str] = (),
    live_chunks: LiveChunks = tuple,
) -> GcReport:
    """Drop every object no ref reaches, while a mount goes on serving.

    Marking and listing (nearly all of the work) run without the repository lock, on a
    store that only grows meanwhile. The deletes go in batches, each under the lock
    after `live()` (which saves the live work trees and names the content the mount
    serves) and a second mark from the refs as they are then: it walks only what is
    new, since an object marked once has all it references marked. So whatever is
    reachable when its batch is deleted is kept: saves, commits and ref moves made
    meanwhile included. Objects written after the listing are never candidates.
    Compaction, which gives the space back, runs without the lock.

    With a grace period, a commit no ref reaches is kept, with all it references, while
    it is younger than that: a reset or a deleted branch stays restorable by its id for
    a while, as git's reflog keeps it (the states a later save replaced before their
    commit are no commits: they go at once). `without`: refs counted as gone (a dry run
    of removing them). `live_chunks()`: chunks (blobs) that no ref reaches yet but a
    mount holds, taken as reachable without being read (ADR 0071).
    """
    with repo.store.scanning():
        return _gc(repo, live, dry_run, progress, grace_seconds, without, live_chunks)


def _gc(
    repo: Repository,
    live: Callable[[], list[ObjectId]],
    dry_run: bool,
    progress: Progress,
    grace_seconds: float,
    without: Collection[str],
    live_chunks: LiveChunks,
) -> GcReport:
    since_ns = time.time_ns() - int(grace_seconds * 1e9) if grace_seconds > 0 else 2**63
    with repo.lock:
        start = roots(repo, live(), without)
        held = set(live_chunks())  # blobs point at nothing: marked without a read
    reachable = mark(repo, start, progress, reachable=held)
    found = unreachable(repo, reachable, since_ns, progress, live_chunks)
    mark(repo, found.recent, reachable=reachable)
    candidates = {oid: size for oid, size in found.sizes.items() if oid not in reachable}
    if candidates and not dry_run:
        repo.store.prepare_delete()
    before = repo.store.disk_bytes()
    doomed: list[ObjectId] = []
    pending = list(candidates)
    for at in range(0, len(pending), DELETE_BATCH):
        with repo.lock:
            mark(repo, roots(repo, live(), without), reachable=reachable)
            reachable.update(live_chunks())
            batch = [oid for oid in pending[at : at + DELETE_BATCH] if oid not in reachable]
            if batch and not dry_run:
                repo.store.delete(batch)
                repo.trees.forget_results()
        doomed += batch
    logical = sum(candidates[oid] for oid in doomed)
    if not dry_run:  # the blame cached at a deleted commit can never be asked for again
        blamecache.forget(repo, set(doomed))
    report = GcReport(dry_run, found.stored - len(doomed), len(doomed), logical, None, None)
    if dry_run:
        return report
    repacked, not_repacked = _repack_or_say_why(repo)
    # gives the space back now (ADR 0014), not at some compaction; and what an earlier
    # gc had to leave for want of room once the user has made room (ADR 0028)
    compacting = doomed or repacked or repo.store.garbage_waiting()
    left = repo.store.compact() if compacting else Compaction(0, 0)
    return replace(
        report,
        freed_bytes=max(0, before - repo.store.disk_bytes()),  # the log may grow a few KiB
        repacked=repacked,
        not_repacked=not_repacked,
        kept_on_disk_bytes=left.dead_bytes_kept,
        free_needed_bytes=left.free_needed,
    )


def repack(repo: Repository) -> int:
    """Store the trees that commits wrote since the last repack as deltas on the trees
    they replaced; how many became deltas (ADR 0027).

    The commit path writes trees whole, where a delta costs more time than it saves
    (ADR 0009); so a directory's listing was stored again at every save in it, and
    trees grew to nine tenths of a long-lived store. Here a delta costs neither. What
    any tree reads as never changes, so a mount goes on meanwhile.
    """
    todo = sorted(_unpacked(repo), key=lambda item: item[0])  # oldest first: a base
    return sum(map(repo.store.repack, _whole_commits([pairs for _, pairs in todo])))


def _whole_commits(
    per_commit: list[list[tuple[ObjectId, ObjectId]]],
) -> Iterator[list[tuple[ObjectId, ObjectId]]]:
    """The pairs in runs of at most REPACK_BATCH that end where a commit's pairs end
    (a commit with more is a run of its own): each run lands whole, so a gc killed
    between them never leaves a commit half packed. The next gc's walk stops at a
    commit with one delta, and would never pack the rest of that commit."""
    run: list[tuple[ObjectId, ObjectId]] = []
    for pairs in per_commit:
        if run and len(run) + len(pairs) > REPACK_BATCH:
            yield run
            run = []
        run += pairs
    if run:
        yield run


def _repack_or_say_why(repo: Repository) -> tuple[int, str | None]:
    """A repack that fails (a disk full, say) must not keep gc from compacting: that is
    what gives back what it deleted. Why it failed goes into gc's report."""
    try:
        return repack(repo), None
    except HelixError as exc:
        log.warning("gc: trees not repacked: %s", exc)
        return 0, str(exc)


def _unpacked(
    repo: Repository,
) -> Iterator[tuple[tuple[int, int], list[tuple[ObjectId, ObjectId]]]]:
    """Per commit not repacked yet, its (generation, time) and the trees it replaced.

    Walks back from the refs and stops at a commit one of whose new trees is already a
    delta on the tree it replaced: a repack had it, and all before it. The walk goes on
    below a commit whose trees were all too small for a delta to pay, and below one
    that went back to a tree an older commit had (a delta on something else)."""
    with repo.lock:
        stack = [CommitId(oid) for name, oid in _roots(repo) if not name.startswith(WORK)]
    seen: set[CommitId] = set()
    listings: dict[ObjectId, _Listing] = {}  # a commit's old trees are its parent's new ones
    parents: dict[CommitId, Commit] = {}  # read as a child's parent, not yet walked
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        try:
            commit = parents.pop(cid, None) or _commit(repo, cid)
            old = None
            if commit.parents:
                first = CommitId(commit.parents[0])
                parents[first] = parents.get(first) or _commit(repo, first)
                old = parents[first].tree
        except HelixError:
            continue  # unreadable history: fsck's to report, not repack's
        pairs: list[tuple[ObjectId, ObjectId]] = []
        if old is not None:
            _replaced_trees(repo, old, commit.tree, pairs, listings)
        if any(repo.store.delta_base(new) == replaced for new, replaced in pairs):
            continue
        yield (stored_generation(commit.meta) or 0, commit.time_ns), pairs
        stack.extend(commit.parents)
        if len(listings) > LISTINGS_KEPT:
            listings.clear()


def _commit(repo: Repository, cid: CommitId) -> Commit:
    """Read without filling the caches a mount relies on (the store's, the repository's
    commits: a walk of all history would push out what they hold)."""
    return decode_commit(repo.store.get(ObjectId(cid), keep=False), cid)


def _replaced_trees(
    repo: Repository,
    old: ObjectId,
    new: ObjectId,
    pairs: list[tuple[ObjectId, ObjectId]],
    listings: dict[ObjectId, _Listing],
) -> None:
    """(new record, the record it replaced) for every tree and page that differs along
    the paths where `old` and `new` differ."""
    if old == new:
        return
    try:
        before, after = _listing(repo, old, listings), _listing(repo, new, listings)
    except HelixError:
        return  # unreadable: fsck's to report, not repack's
    pairs.append((new, old))
    if before.listing is not None or after.listing is not None:
        listed = (after.listing or new, before.listing or old)
        if listed[0] != listed[1]:
            pairs.append(listed)
    # a page that did not move keeps its place in the list
    pairs += [(n, o) for n, o in zip(after.pages, before.pages, strict=False) if n != o]
    for name, oid in after.dirs.items():
        if name in before.dirs:
            _replaced_trees(repo, before.dirs[name], oid, pairs, listings)


@dataclass(frozen=True)
class _Listing:
    dirs: dict[bytes, ObjectId]  # the folders a tree lists, by name
    pages: tuple[ObjectId, ...]  # a paged tree's pages, in order
    listing: ObjectId | None = None  # a root record's listing (ADR 0044)


def _listing(repo: Repository, oid: ObjectId, listings: dict[ObjectId, _Listing]) -> _Listing:
    """Read without filling the caches that a mount's work relies on."""
    found = listings.get(oid)
    if found is None:
        record = repo.store.get(oid, keep=False)
        if kind_of(record) == KIND_ROOT:
            inner = decode_root(record).oid
            found = replace(_listing(repo, inner, listings), listing=inner)
        elif kind_of(record) != KIND_PAGED:
            found = _Listing(tree_dirs(record), ())
        else:
            pages = tuple(page for page, _ in decode_paged(record))
            dirs: dict[bytes, ObjectId] = {}
            for page in pages:
                dirs.update(tree_dirs(repo.store.get(page, keep=False)))
            found = _Listing(dirs, pages)
        listings[oid] = found
    return found


def lost(repo: Repository) -> list[Commit]:
    """The tips of history no ref reaches any more (a reset's old head, a deleted
    branch's): unreachable commits that no other such commit has as a parent, newest
    first. Only a gc takes them away (the automatic one keeps young ones, ADR 0024)."""
    with repo.lock:
        start = roots(repo)
    with repo.store.scanning():
        found = unreachable(repo, mark(repo, start), since_ns=0)  # every commit is "recent"
    commits = [repo.commit_info(CommitId(oid)) for oid in found.recent]
    parents = {parent for commit in commits for parent in commit.parents}
    tips = [commit for commit in commits if commit.id not in parents]
    return sorted(tips, key=lambda commit: (commit.time_ns, commit.id), reverse=True)


def fsck(repo: Repository, progress: Progress = None) -> FsckReport:
    with repo.store.scanning():
        return _fsck(repo, progress)


def _fsck(repo: Repository, progress: Progress) -> FsckReport:
    problems: list[str] = []
    found: damage.Survey | None = None
    try:
        all_ids = list(repo.store.ids())
    except HelixError as exc:  # a damaged table stops a cursor: check what refs reach
        problems.append(f"objects cannot all be listed (checked those refs reach): {exc}")
        found = damage.survey(repo)  # reads past the damage, by id
        lost = {ObjectId(cid) for cid in found.lost_commits}
        all_ids = sorted(found.readable | found.damaged.keys() | lost)
    kinds: dict[ObjectId, bytes] = {}
    sizes: dict[ObjectId, int] = {}  # content bytes of each blob and chunked file
    for done, oid in enumerate(all_ids, 1):
        try:
            record = repo.store.get(oid, keep=False)
            decoded = decode_any(record)
            kinds[oid] = kind_of(record)
            if isinstance(decoded, ChunkedFile):
                sizes[oid] = decoded.size
            elif kinds[oid] == KIND_BLOB:
                sizes[oid] = len(record) - HEADER_SIZE
        except HelixError as exc:
            problems.append(f"object {hex_id(oid)}: {exc}")
        if progress is not None:
            progress(done, len(all_ids))
    refs = _check_refs(repo, kinds, problems)
    _check_links(repo, kinds, sizes, problems)
    if problems:  # which paths and commits the damage takes (a healthy store: no walk)
        problems += (found or damage.survey(repo)).problems()
    return FsckReport(len(all_ids), refs, problems)


def _check_refs(repo: Repository, kinds: dict[ObjectId, bytes], problems: list[str]) -> int:
    count = 0
    for name, oid in _roots(repo):
        count += 1
        want = ROOT_KINDS if name.startswith(WORK) else (KIND_COMMIT,)
        if kinds.get(oid) not in want:
            what = "missing or corrupt" if oid not in kinds else "of the wrong kind"
            problems.append(f"ref {name} -> {hex_id(oid)}: object {what}")
    for name, oid, is_dir in _journaled(repo, problems):
        if oid not in kinds or (is_dir and kinds[oid] not in DIRECTORY_KINDS):
            what = "missing or corrupt" if oid not in kinds else "not a directory"
            problems.append(f"ref {name}: journal names {hex_id(oid)}: object {what}")
    head = repo.store.ref(HEAD)
    count += 1
    if head is None or repo.store.ref(BRANCHES + head.decode(errors="replace")) is None:
        problems.append(f"HEAD names a branch that does not exist: {head!r}")
    return count


_STRUCTURE = {KIND_COMMIT, KIND_TREE, KIND_PAGED, KIND_ROOT}  # a lazy clone holds them all


def _check_links(
    repo: Repository, kinds: dict[ObjectId, bytes], sizes: dict[ObjectId, int], problems: list[str]
) -> None:
    """Every object a reachable record points at must exist, be valid, be of the kind
    the pointer promises (a directory entry names a tree, a file a content...), and
    hold the bytes it promises: reads trust a file entry's size and a chunk index's
    lengths (a wrong one failed every read, or cut the file short, and fsck said ok)."""
    seen: set[ObjectId] = set()
    stack = [oid for _, oid in _roots(repo) if oid in kinds]
    stack += [oid for _, oid, _ in _journaled(repo, []) if oid in kinds]
    while stack:
        oid = stack.pop()
        if oid in seen:
            continue
        seen.add(oid)
        try:
            links = _typed_links(repo.store.get(oid, keep=False))
        except HelixError:
            continue  # already reported by the object scan
        for child, allowed, claimed in links:
            if child not in kinds:
                if repo.lazy and not set(allowed) & _STRUCTURE:
                    continue  # a lazy clone's file content, not fetched yet (ADR 0064)
                problems.append(f"object {hex_id(oid)} points at missing/corrupt {hex_id(child)}")
                continue
            if kinds[child] not in allowed:
                wanted = " or ".join(KIND_NAMES[k] for k in allowed)
                problems.append(
                    f"object {hex_id(oid)} points at {hex_id(child)}, a "
                    f"{KIND_NAMES[kinds[child]]} where a {wanted} was expected"
                )
            elif claimed is not None and sizes.get(child, claimed) != claimed:
                problems.append(
                    f"object {hex_id(oid)} says {hex_id(child)} holds {claimed} bytes;"
                    f" it holds {sizes[child]}"
                )
            if child not in seen:
                stack.append(child)


_CONTENT = (KIND_BLOB, KIND_CHUNKED)


_Link = tuple[ObjectId, tuple[bytes, ...], int | None]
"""A child id, the kinds it may have, and the content size the parent promises."""


def _typed_links(record: bytes) -> list[_Link]:
    kind = kind_of(record)
    if kind == KIND_TREE:
        return [
            (e.oid, DIRECTORY_KINDS, None) if e.is_dir() else (e.oid, _CONTENT, e.size)
            for e in decode_tree(record).entries
        ]
    if kind == KIND_PAGED:
        return [(page, (KIND_TREE,), None) for page, _ in decode_paged(record)]
    if kind == KIND_COMMIT:
        commit = decode_commit(record)
        parents: list[_Link] = [(ObjectId(p), (KIND_COMMIT,), None) for p in commit.parents]
        return [(commit.tree, ROOT_KINDS, None), *parents]
    if kind == KIND_ROOT:
        return [(decode_root(record).oid, DIRECTORY_KINDS, None)]
    if kind == KIND_CHUNKED:
        return [(c, (KIND_BLOB,), length) for c, length in decode_chunked(record).chunks]
    return []


def _percentile(values: list[int], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def stats(repo: Repository, last: int) -> RepoStats:
    """Store numbers and commit latencies; a ref that cannot be read (dangling, corrupt,
    newer record version) is listed in `problems` instead of failing the whole report,
    since a damaged store is where a user most wants them."""
    store_stats = repo.store.stats()
    problems: dict[str, str] = {}
    latencies = _latencies(repo, last, problems)
    referenced = _referenced_bytes(repo, problems)
    logical = store_stats.logical_bytes
    return RepoStats(
        objects=store_stats.objects,
        logical_bytes=logical,
        stored_bytes=store_stats.stored_bytes,
        disk_bytes=store_stats.disk_bytes,
        referenced_bytes=referenced,
        dedup_ratio=referenced / logical if logical else 0.0,
        compression_ratio=logical / store_stats.stored_bytes if store_stats.stored_bytes else 0.0,
        cache_hit_ratio=store_stats.cache_hit_ratio,
        commits_measured=len(latencies),
        commit_p50_us=_percentile(latencies, 0.5),
        commit_p95_us=_percentile(latencies, 0.95),
        branches=len(repo.branches()),
        snapshots=len(repo.snapshots()),
        problems=[f"{ref}: {error}" for ref, error in problems.items()],
    )


def _latencies(repo: Repository, last: int, problems: dict[str, str]) -> list[int]:
    latencies: list[int] = []
    seen = set()
    for info in repo.branches():
        try:
            for commit in repo.log(info.commit.hex(), limit=last):
                if commit.id in seen:
                    break
                seen.add(commit.id)
                value = commit.meta.get("latency_us")
                if isinstance(value, int):
                    latencies.append(value)
        except HelixError as exc:
            problems.setdefault(BRANCHES + info.name, str(exc))
    return latencies[:last]


def _referenced_bytes(repo: Repository, problems: dict[str, str]) -> int:
    """Sum of file sizes over every branch and snapshot head (what copies would cost).

    Sizes are memoised per tree id, so heads that share most of their subtrees (the
    usual case) cost little more than one walk."""
    sizes: dict[ObjectId, int] = {}

    def size_of(tree: ObjectId) -> int:
        known = sizes.get(tree)
        if known is None:
            entries = repo.trees.get(tree).entries
            known = sum(size_of(e.oid) if e.is_dir() else e.size for e in entries)
            sizes[tree] = known
        return known

    total = 0
    for prefix, refs in ((BRANCHES, repo.branches()), (SNAPSHOTS, repo.snapshots())):
        for info in refs:
            try:
                total += size_of(repo.commit_info(info.commit).tree)
            except HelixError as exc:
                problems.setdefault(prefix + info.name, str(exc))
    return total
