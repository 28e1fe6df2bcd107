"""gc keeps what refs reach and nothing else; fsck finds damage without crashing."""

from __future__ import annotations

import io
import os
import random
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId, hex_id, object_id
from helixfs.store import RefUpdate, rocksdb_open
from helixfs.store.rocks import RocksStore
from helixfs.vcs import Repository, maint, treeops
from helixfs.vcs.objects import (
    MODE_FILE,
    Commit,
    TreeEntry,
    encode_blob,
    encode_chunked,
    encode_commit,
    encode_tree,
    tree_dirs,
)

from .chains import chain_problems
from .conftest import CountingStore


def _orphan(store: CountingStore, data: bytes) -> ObjectId:
    record = encode_blob(data)
    oid = object_id(record)
    store.write({oid: record})
    return oid


def test_gc_dry_run_changes_nothing(repo: Repository, store: CountingStore) -> None:
    repo.commit({"a": b"1"}, "one")
    orphan = _orphan(store, b"nobody points at me")
    before = set(store.ids())
    report = repo.gc(dry_run=True)
    assert report.dry_run and report.unreachable == 1 and report.logical_bytes > 0
    assert report.freed_bytes is None  # nothing was freed, and nothing was measured
    assert set(store.ids()) == before and store.contains(orphan)


def test_gc_drops_unreachable_and_keeps_every_ref(repo: Repository, store: CountingStore) -> None:
    repo.commit({"a": b"1", "d/b": b"2"}, "one")
    repo.create_snapshot("snap")
    repo.create_branch("feat")
    repo.commit({"f": b"feat only"}, "feat", branch="feat")
    repo.commit({"a": b"moved on"}, "two")
    tree = repo.worktree("main")
    tree.set_content(tree.create(tree.root, b"pending.txt"), b"saved, not committed")
    tree.save()
    orphan = _orphan(store, b"garbage")
    calls: list[tuple[int, int]] = []
    report = repo.gc(progress=lambda done, total: calls.append((done, total)))
    assert not store.contains(orphan) and report.unreachable >= 1 and calls
    assert repo.read("snap", "a") == b"1" and repo.read("feat", "f") == b"feat only"
    assert repo.read("HEAD~1", "d/b") == b"2"
    assert tree.read(tree.lookup(tree.root, b"pending.txt"), 0, 100) == b"saved, not committed"
    assert repo.fsck().ok
    assert repo.gc(dry_run=True).unreachable == 0


def test_gc_keeps_the_chunks_of_a_large_file_without_reading_them(
    repo: Repository, store: CountingStore
) -> None:
    import os

    data = os.urandom(3 << 20)  # chunked: several content-defined chunks
    repo.commit({"big": data}, "big")
    chunks = repo.contents.chunks(repo.entry("HEAD", "big").oid)  # type: ignore[union-attr]
    assert chunks is not None and len(chunks[1]) > 1
    orphan = _orphan(store, b"garbage")
    store.gets.clear()
    repo.gc()
    assert not set(chunks[1]) & set(store.gets)
    assert not store.contains(orphan) and all(store.contains(c) for c in chunks[1])
    assert repo.read("HEAD", "big") == data and repo.fsck().ok


def test_gc_after_reset_drops_abandoned_commits(repo: Repository, store: CountingStore) -> None:
    repo.commit({"a": b"1"}, "one")
    abandoned = repo.commit({"a": b"2" * 100}, "two")
    repo.reset_hard("HEAD~1")
    repo.gc()
    assert not store.contains(ObjectId(abandoned))
    assert repo.fsck().ok


def test_gc_keeps_what_is_in_use_until_released(repo: Repository, store: CountingStore) -> None:
    """A mount names the content its open files read (keep_in_use): gc keeps it, and
    all it references, while no ref reaches it; released, it goes."""
    import os

    repo.create_branch("side")
    repo.commit({"big": os.urandom(3 << 20), "small": b"side only"}, "side", branch="side")
    tree = repo.commit_info("side").tree
    big = repo.entry("side", "big")
    assert big is not None
    chunks = repo.contents.chunks(big.oid)
    assert chunks is not None
    repo.delete_branch("side")
    release = repo.keep_in_use(lambda: [tree])
    repo.gc()
    assert store.contains(tree) and all(store.contains(c) for c in chunks[1])
    assert repo.trees.get(tree).names == (b"big", b"small")
    release()
    repo.gc()
    assert not store.contains(tree) and not store.contains(chunks[1][0])


def test_fsck_clean_store(repo: Repository) -> None:
    repo.commit({"a": b"1"}, "one")
    calls: list[tuple[int, int]] = []
    report = repo.fsck(progress=lambda d, t: calls.append((d, t)))
    assert report.ok and report.objects > 0 and calls[-1][0] == calls[-1][1]


def test_fsck_detects_a_tampered_object(repo: Repository, store: CountingStore) -> None:
    repo.commit({"a": b"precious"}, "one")
    oid = repo.entry("HEAD", "a").oid  # type: ignore[union-attr]
    store._objects[oid] = encode_blob(b"tampered")
    report = repo.fsck()
    assert not report.ok
    assert any(oid.hex() in p and "corrupt" in p for p in report.problems)


def test_fsck_detects_sizes_a_tree_or_chunk_index_gets_wrong(repo: Repository) -> None:
    """Records well formed on their own whose promises disagree: a file entry of 7
    bytes over a 50-byte blob (ls said 7, cat gave 50) and a chunk index claiming 100
    bytes of a 50-byte chunk (every read failed). fsck said ok."""
    blob = encode_blob(b"x" * 50)
    chunked = encode_chunked([(object_id(blob), 100), (object_id(encode_blob(b"")), 0)])
    entries = [
        TreeEntry(b"lies", MODE_FILE | 0o644, object_id(chunked), 100),
        TreeEntry(b"short", MODE_FILE | 0o644, object_id(blob), 7),
    ]
    tree = encode_tree(entries)
    head = repo.resolve("HEAD")
    commit = encode_commit(Commit(object_id(tree), (head,), 1, "a", "bad", {}))
    records = {object_id(r): r for r in (blob, encode_blob(b""), chunked, tree, commit)}
    repo.store.write(records, [RefUpdate("branches/main", object_id(commit), expected=head)])
    problems = repo.fsck().problems
    assert len(problems) == 2
    assert any(f"says {object_id(blob).hex()} holds 7 bytes; it holds 50" in p for p in problems)
    assert any(f"says {object_id(blob).hex()} holds 100 bytes" in p for p in problems)


def test_fsck_detects_missing_objects_and_dangling_refs(
    repo: Repository, store: CountingStore
) -> None:
    repo.commit({"a": b"1", "d/e": b"2"}, "one")
    tree = repo.entry("HEAD", "d").oid  # type: ignore[union-attr]
    store.delete([tree])
    store._refs["snapshots/broken"] = bytes(32)
    report = repo.fsck()
    assert any("missing" in p for p in report.problems)
    assert any("snapshots/broken" in p for p in report.problems)


def test_stats(repo: Repository) -> None:
    for i in range(5):
        repo.commit({"a": b"x" * 1000, f"f{i}": b"y"}, f"c{i}")
    repo.create_branch("copy")
    stats = repo.stats()
    assert stats.objects > 0 and stats.branches == 2 and stats.commits_measured == 5
    assert stats.commit_p50_us is not None and stats.commit_p95_us is not None
    assert stats.referenced_bytes == 2 * (1000 + 5)
    assert stats.dedup_ratio > 0


def test_fsck_on_disk_finds_bytes_flipped_under_rocksdb(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        repo.commit({"a": b"precious data " * 10}, "one")
        oid = repo.entry("HEAD", "a").oid  # type: ignore[union-attr]
        assert repo.fsck().ok
    # tamper below the store, with rocksdict only: a valid RAW frame of other bytes
    import rocksdict

    from helixfs.store.frame import encode_plain

    path = str(tmp_path / "s" / "objects")
    options = rocksdict.Options(raw_mode=True)
    names = set(rocksdict.Rdict.list_cf(path, options)) - {"default"}
    families = {name: rocksdict.Options(raw_mode=True) for name in names}
    db = rocksdict.Rdict(path, options, column_families=families)
    objects = db.get_column_family("objects")
    objects[oid] = encode_plain(encode_blob(b"tampered!"))
    del objects  # RocksDB's LOCK goes only with the last column-family handle
    db.close()
    del db
    with Repository.open(tmp_path / "s") as repo:
        report = repo.fsck()
        assert not report.ok and any(oid.hex() in p for p in report.problems)


def test_fsck_detects_a_pointer_to_the_wrong_kind_of_object(repo: Repository) -> None:
    from helixfs.store import RefUpdate
    from helixfs.vcs.objects import MODE_DIR, Commit, TreeEntry, encode_commit, encode_tree

    blob = encode_blob(b"not a tree")
    bad_tree = encode_tree([TreeEntry(b"dir", MODE_DIR, object_id(blob))])
    head = repo.resolve("HEAD")
    commit = encode_commit(Commit(object_id(bad_tree), (head,), 0, "x", "bad", {}))
    repo.store.write(
        {object_id(blob): blob, object_id(bad_tree): bad_tree, object_id(commit): commit},
        [RefUpdate("branches/bad", object_id(commit), expected=None)],
    )
    problems = repo.fsck().problems
    assert any("a blob where a tree or paged tree was expected" in p for p in problems), problems


def test_gc_and_fsck_leave_the_store_caches_as_they_were(tmp_path: Path) -> None:
    """A maintenance scan reads every object once: it must not evict what a mount reuses."""
    with Repository.init(tmp_path / "s") as repo:
        for i in range(50):
            repo.commit({f"d{i % 5}/f{i}": bytes([i]) * 5000}, f"c{i}")
    with Repository.open(tmp_path / "s") as repo:
        assert repo.read("HEAD", "d0/f0") == bytes([0]) * 5000
        before = repo.store.stats().extra
        assert repo.fsck().ok
        repo.gc(dry_run=True)
        after = repo.store.stats().extra
        for cache in ("frame_cache_bytes", "record_cache_bytes"):
            assert after[cache] <= before[cache], cache


def test_gc_gives_the_disk_space_back_at_once(tmp_path: Path) -> None:
    """A large file dropped by a reset leaves the disk when gc returns (ADR 0014)."""
    big = os.urandom(24 << 20)  # over the 16 MiB stream batch: its chunks are bulk writes
    with Repository.init(tmp_path / "s") as repo:
        repo.commit({"kept.txt": b"kept\n"}, "small")
        repo.commit({"big.bin": io.BytesIO(big)}, "big")
        repo.store.compact()  # every chunk in blob files, as a long-lived store has them
        with_big = repo.store.stats().disk_bytes
        repo.reset_hard("HEAD~1")
        before = repo.store.disk_bytes()
        report = repo.gc(dry_run=False)
        assert report.logical_bytes >= len(big)
        after = repo.store.stats().disk_bytes
        assert after < with_big - (20 << 20)
        assert report.freed_bytes is not None  # measured; RocksDB's LOG may move a little
        assert abs(report.freed_bytes - (before - after)) < 1 << 16
        assert repo.read("HEAD", "kept.txt") == b"kept\n"
        assert repo.fsck().ok


def test_fsck_names_the_table_rocksdb_cannot_read(tmp_path: Path) -> None:
    """fsck listed the objects with a cursor that stopped at a damaged block: it said
    "1 problem in 0 objects" (a ref's commit missing) and never named the damage."""
    with Repository.init(tmp_path / "store") as repo:
        repo.commit({f"f{n}": b"content %d" % n for n in range(20)}, "files")
        repo.store.compact()  # type: ignore[attr-defined]
    objects = tmp_path / "store" / "objects"
    db = rocksdb_open.open_db(objects)
    (name,) = [f["name"] for f in db.live_files() if len(f["start_key"]) == 32]
    db.close()
    table = objects / name.lstrip("/")
    data = bytearray(table.read_bytes())
    data[10] ^= 0xFF
    table.write_bytes(bytes(data))
    with Repository.open(tmp_path / "store") as repo:
        report = repo.fsck()
        assert not report.ok and any(table.name in problem for problem in report.problems)
        with pytest.raises(CorruptObject):  # gc stops before it deletes anything
            repo.gc()


def _gc_until(repo: Repository, stop: threading.Event, errors: list[BaseException]) -> None:
    """gc again and again until `stop` (a thread's body); errors go to the main thread."""
    try:
        while not stop.is_set():
            repo.gc()
    except BaseException as exc:
        errors.append(exc)


def _during_mark(action: Callable[[], object]) -> Callable[[int, int], None]:
    """A gc progress callback that runs `action` once, in the unlocked mark phase."""
    done: list[bool] = []

    def progress(_done: int, _total: int) -> None:
        if not done:
            done.append(True)
            action()

    return progress


def test_gc_keeps_what_commits_made_while_it_marked(repo: Repository, store: CountingStore) -> None:
    """Marking runs without the lock: a commit made meanwhile, one that brings back
    content gc found unreachable, and a reset to a commit no ref reached all survive."""
    repo.commit({"a": b"1"}, "one")
    repo.create_branch("gone")
    dropped = repo.commit({"b": b"only in a deleted branch"}, "gone", branch="gone")
    repo.delete_branch("gone")
    revived = _orphan(store, b"garbage, then saved again")

    def meanwhile() -> None:
        repo.commit({"new": b"committed during the mark"}, "during")
        repo.commit({"back": b"garbage, then saved again"}, "revives an orphan")
        repo.create_branch("again")
        repo.reset_hard(hex_id(dropped), branch="again")

    report = repo.gc(progress=_during_mark(meanwhile))
    assert report.unreachable == 0  # nothing was garbage by the time gc deleted
    assert store.contains(revived) and repo.read("again", "b") == b"only in a deleted branch"
    assert repo.read("HEAD", "new") == b"committed during the mark"
    assert repo.fsck().ok


def test_gc_drops_what_became_garbage_while_it_marked(
    repo: Repository, store: CountingStore
) -> None:
    """Conservative the other way round: what a ref reached when marking began is kept
    this time, and goes at the next gc."""
    repo.commit({"a": b"1"}, "one")
    repo.create_branch("short-lived")
    doomed = repo.commit({"b": b"soon unreachable"}, "x", branch="short-lived")
    repo.gc(progress=_during_mark(lambda: repo.delete_branch("short-lived")))
    assert store.contains(ObjectId(doomed))
    repo.gc()
    assert not store.contains(ObjectId(doomed)) and repo.fsck().ok


def test_gc_deletes_in_batches_and_keeps_what_was_revived_between_them(
    repo: Repository, store: CountingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is let go between batches of deletes: content saved again meanwhile is
    kept if its batch is still to come, and stored again if it already went."""
    monkeypatch.setattr(maint, "DELETE_BATCH", 1)
    repo.commit({"a": b"1"}, "one")
    orphans = [f"orphan {n}".encode() for n in range(4)]
    for data in orphans:
        _orphan(store, data)
    holds: list[int] = []

    def before_each_hold() -> list[ObjectId]:  # a keep_in_use source: called under the lock
        holds.append(len(holds))
        if len(holds) == 3:  # the marking's hold, then the first batch's, then this one
            repo.commit({f"r{n}": data for n, data in enumerate(orphans)}, "saved again")
        return []

    repo.keep_in_use(before_each_hold)
    report = repo.gc()
    assert report.unreachable == 1 and len(holds) == 1 + len(orphans)
    assert [repo.read("HEAD", f"r{n}") for n in range(4)] == orphans
    assert repo.fsck().ok


def test_a_grace_period_keeps_abandoned_commits_but_not_replaced_saves(
    repo: Repository, store: CountingStore
) -> None:
    """The automatic gc's grace (ADR 0024): a deleted branch's commit and one a reset
    left behind stay restorable by id while young; a saved state replaced before its
    commit goes at once. A plain gc drops them all."""
    repo.commit({"a": b"1"}, "one")
    repo.create_branch("gone")
    deleted = repo.commit({"b": b"deleted branch"}, "gone", branch="gone")
    repo.delete_branch("gone")
    reset_away = repo.commit({"c": b"reset away"}, "two")
    repo.reset_hard("HEAD~1")
    tree = repo.worktree()
    node = tree.create(tree.root, b"draft")
    tree.set_content(node, b"replaced before its commit")
    tree.save()
    replaced = tree.lookup(tree.root, b"draft").oid  # type: ignore[union-attr]
    assert replaced is not None and store.contains(replaced)
    tree.set_content(node, b"final")
    tree.commit("final")
    repo.gc(grace_seconds=3600)
    assert repo.read(hex_id(deleted), "b") == b"deleted branch"
    assert repo.read(hex_id(reset_away), "c") == b"reset away"
    assert not store.contains(replaced)
    assert repo.gc(grace_seconds=3600).unreachable == 0 and repo.fsck().ok
    repo.gc()
    assert not store.contains(ObjectId(deleted)) and not store.contains(ObjectId(reset_away))
    assert repo.read("HEAD", "draft") == b"final" and repo.fsck().ok


def test_gc_in_a_thread_beside_a_stream_of_commits(tmp_path: Path) -> None:
    """A real race on a RocksDB store: a writer commits (and makes garbage) while gc
    runs again and again; every commit that returned is intact, fsck is clean."""
    with Repository.init(tmp_path / "store") as repo:
        stop = threading.Event()
        errors: list[BaseException] = []
        collector = threading.Thread(target=_gc_until, args=(repo, stop, errors))
        collector.start()
        made: list[tuple[str, bytes]] = []
        try:
            for n in range(150):
                data = os.urandom(64) * (1 + n % 300)  # a chunked file now and then
                cid = repo.commit({f"f{n % 7}": data}, f"c{n}")
                made.append((hex_id(cid), data))
                if n % 10 == 0:  # garbage: a branch made and deleted
                    repo.create_branch("tmp")
                    repo.commit({"tmp": os.urandom(40_000)}, "tmp", branch="tmp")
                    repo.delete_branch("tmp")
        finally:
            stop.set()
            collector.join(timeout=120)
        assert not collector.is_alive() and errors == []
        for n, (cid, data) in enumerate(made):
            assert repo.read(cid, f"f{n % 7}") == data
        assert repo.fsck().ok


def test_lost_lists_the_tips_of_history_no_ref_reaches(repo: Repository) -> None:
    repo.commit({"a": b"1"}, "one")
    repo.create_branch("gone")
    repo.commit({"b": b"1"}, "gone 1", branch="gone")
    deleted = repo.commit({"b": b"2"}, "gone 2", branch="gone")
    repo.delete_branch("gone")
    reset_away = repo.commit({"c": b"reset away"}, "two")
    repo.reset_hard("HEAD~1")
    assert [c.id for c in repo.lost()] == [reset_away, deleted]  # tips only, newest first
    repo.create_branch("back", hex_id(deleted))
    assert [c.id for c in repo.lost()] == [reset_away]
    repo.gc()
    assert repo.lost() == []


def test_gc_keeps_what_an_import_wrote_before_its_commit(
    disk_repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import writes its objects in batches, without the repository lock, and
    commits them at the end. A gc that runs in between (the mount's own, beside a
    `helix import` the daemon runs on a worker thread) must not drop them: they are
    reached by no ref yet, but by the commit the import is about to make. Content
    that was garbage before the import (a deleted branch held it) is among them."""
    from helixfs.vcs import transfer

    monkeypatch.setattr(transfer, "FLUSH_BYTES", 1)  # every file is its own batch
    repo = disk_repo
    folder = tmp_path / "src"
    folder.mkdir()
    files = {f"f{n}": os.urandom(100) * (1 + n) for n in range(8)}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    repo.create_branch("gone")
    repo.commit({"f0": files["f0"], "f1": files["f1"]}, "soon garbage", branch="gone")
    repo.delete_branch("gone")
    seen: list[int] = []

    def progress(_: int) -> None:
        seen.append(1)
        if len(seen) == 4:  # half the files are in the store, no ref reaches them
            repo.gc()

    transfer.import_dir(repo, folder, progress=progress)
    assert {name: repo.read("HEAD", name) for name in files} == files
    assert repo.fsck().ok


def test_gc_keeps_what_a_git_import_stored_before_its_refs_moved(
    disk_repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git import converts every commit first and moves the refs at the end. A gc
    meanwhile keeps what it converted, including commits a deleted branch of an
    earlier import left in the store as garbage (found stored, so not written again)."""
    import shutil
    import subprocess

    from helixfs.vcs import gitimport, transfer

    if shutil.which("git") is None:
        pytest.fail("git is needed (.ci/run installs it)")
    monkeypatch.setattr(transfer, "FLUSH_BYTES", 1)
    git = tmp_path / "git"
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2020-01-01T00:00:00",
        "GIT_COMMITTER_DATE": "2020-01-01T00:00:00",
    }
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(git)], check=True)
    for n in range(4):
        (git / f"f{n}").write_bytes(os.urandom(64) * (n + 1))
        subprocess.run(["git", "-C", str(git), "add", "-A"], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(git),
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                f"c{n}",
            ],
            check=True,
            env=env,
        )
    repo = disk_repo
    repo.commit({"mine": b"x"}, "work on main")  # HEAD stays on main, so trunk can go
    gitimport.import_git(repo, git)
    repo.delete_branch("trunk")  # its commits are garbage now, and will be converted again
    calls: list[int] = []

    def progress(_done: int, _total: int) -> None:
        calls.append(1)
        if len(calls) == 3:
            repo.gc()

    gitimport.import_git(repo, git, progress=progress)
    for n in range(4):
        assert repo.read("trunk", f"f{n}") == (git / f"f{n}").read_bytes()
    assert repo.fsck().ok


def test_a_filtered_tree_gc_deleted_is_written_again(
    repo: Repository, store: CountingStore
) -> None:
    """The commit tree of a work tree without its editor temp files is memoised by ids.
    After gc deleted that tree (its commit reset away), the same work tree must write
    it again, not return the memo's id of a tree the store no longer has (QA)."""
    objects: dict[ObjectId, bytes] = {}
    blob = encode_blob(b"text\n")
    objects[object_id(blob)] = blob
    entries = [
        TreeEntry(name, MODE_FILE, object_id(blob), 5, 0) for name in (b"a.txt", b".a.txt.swp")
    ]
    work = repo.trees.build(entries, objects)
    filtered = repo.trees.without_ephemeral(work, objects)
    store.write(objects)  # stored, and reached by no ref: garbage
    repo.gc()
    assert not store.contains(filtered)
    again: dict[ObjectId, bytes] = {}
    assert repo.trees.without_ephemeral(work, again) == filtered and filtered in again


@pytest.fixture
def raw_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits write their folders whole, as before ADR 0095 (and as a store written
    then still holds them), for gc's repack to have them to pack."""
    monkeypatch.setattr(treeops, "PATCH_FROM", 1 << 62)


def _every_listing(repo: Repository) -> dict[str, list[tuple[bytes, TreeEntry]]]:
    """Each commit's whole tree, as the store reads it now."""
    return {
        commit.id.hex(): list(repo.trees.walk(commit.tree))
        for commit in repo.log("HEAD", first_parent=False)
    }


@pytest.mark.usefixtures("raw_trees")
def test_gc_repacks_the_trees_commits_wrote_and_every_commit_reads_the_same(
    tmp_path: Path,
) -> None:
    """Saves in a big folder stored its whole listing again each time (ADR 0009): gc
    stores each new tree as a delta on the one it replaced (ADR 0027)."""
    names = [f"src/pkg/mod_{n:03}.py" for n in range(150)]
    with Repository.init(tmp_path / "s") as repo:
        repo.commit({name: b"x = %d\n" % n for n, name in enumerate(names)}, "project")
        for n in range(120):
            repo.commit({names[(n * 7) % 150]: b"x = %d  # edit\n" % n}, f"save {n}")
        repo.create_branch("side", "HEAD~30")
        repo.commit({"src/side.py": b"side\n"}, "side work", branch="side")
        trees = _every_listing(repo)
        before = repo.store.stats().stored_bytes
        report = repo.gc()
        # pkg/'s listing at each save; src/ and the root are too small for a delta to pay
        assert report.repacked is not None and report.repacked >= 110
        assert repo.store.stats().stored_bytes < before / 2
        assert repo.fsck().ok
        assert repo.gc().repacked == 0  # what is repacked stays so, and is not walked again
        repo.commit({names[0]: b"later\n"}, "after the gc")
        assert repo.gc().repacked == 1  # the new commit's pkg/
        repo.commit({names[1]: b"an edit\n"}, "edit")
        repo.commit_tree(repo.commit_info("HEAD~1").tree, "undo: the tree as it was")
        assert repo.gc().repacked == 1  # the edit's pkg/, found below the undo's older one
    with Repository.open(tmp_path / "s") as reopened:  # no tree cached: all read again
        listings = _every_listing(reopened)
        assert all(listings[commit] == tree for commit, tree in trees.items())


def test_a_dry_run_gc_repacks_nothing(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        for n in range(5):
            repo.commit({f"d/f{m}": b"%d %d" % (n, m) for m in range(n + 1)}, f"c{n}")
        before = repo.store.stats().stored_bytes
        assert repo.gc(dry_run=True).repacked is None
        assert repo.store.stats().stored_bytes == before


def _read_cold(repo: Repository, tree: ObjectId) -> None:
    """Read a tree and every folder under it from the store, as a mount does after a
    restart (its tree cache empty): the store's record cache keeps them."""
    stack = [tree]
    while stack:
        stack += tree_dirs(repo.store.get(stack.pop())).values()


@pytest.mark.usefixtures("raw_trees")
def test_repack_keeps_chains_short_when_the_trees_it_packs_were_read_before(
    tmp_path: Path,
) -> None:
    """The store's record cache held trees read before a gc at depth 0. gc packed them
    into chains, and the next gc built on the cached depth: each gc of a mount added
    16 links, until reads walked 255 and called the chain a loop (unreadable history)."""
    names = [f"src/pkg/mod_{n:03}.py" for n in range(80)]
    with Repository.init(tmp_path / "s") as repo:
        repo.commit({name: b"x = %d\n" % n for n, name in enumerate(names)}, "project")
        for round_ in range(3):
            for n in range(20):
                repo.commit({names[(n * 7) % 80]: b"%d %d\n" % (round_, n)}, "save")
            _read_cold(repo, repo.commit_info("HEAD").tree)
            assert repo.gc().repacked
            assert chain_problems(repo.store) == []


@pytest.mark.usefixtures("raw_trees")
def test_a_gc_stopped_between_repack_batches_leaves_no_commit_half_packed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit here changes the root and three big folders: four pairs, so a batch
    of 128 ended inside a commit. The next gc's walk stopped at that commit (one of its
    trees was a delta) and never packed the rest of it."""
    folders = [[f"{d}/f{n:03}" for n in range(100)] for d in "abc"]
    with Repository.init(tmp_path / "s") as repo:
        repo.commit({n: n.encode() * 3 for names in folders for n in names}, "project")
        for i in range(45):
            repo.commit({names[i]: b"%d" % i for names in folders}, "three folders")
    shutil.copytree(tmp_path / "s", tmp_path / "whole")
    with Repository.open(tmp_path / "whole") as repo:
        assert repo.gc().repacked == 135
    batch, calls = RocksStore._repack_batch, [0]

    def killed_after_the_first(store: RocksStore, pairs: list[tuple[ObjectId, ObjectId]]) -> int:
        calls[0] += 1
        if calls[0] > 1:
            raise KeyboardInterrupt  # as a kill: later batches never land
        return batch(store, pairs)

    with Repository.open(tmp_path / "s") as repo:
        monkeypatch.setattr(RocksStore, "_repack_batch", killed_after_the_first)
        with pytest.raises(KeyboardInterrupt):
            repo.gc()
        monkeypatch.setattr(RocksStore, "_repack_batch", batch)
        packed = repo.store.stats().extra["delta_objects"]
        assert 0 < packed < 135
        assert repo.gc().repacked == 135 - packed
        assert chain_problems(repo.store) == []


def _listings_of(repo: Repository, commits: dict[str, list[tuple[bytes, TreeEntry]]]) -> None:
    """Every commit the refs reach reads as it did when it was made."""
    for ref in repo.branches():
        for commit in repo.log(ref.name, first_parent=False):
            if commit.parents:  # not the empty commit init makes
                assert list(repo.trees.walk(commit.tree)) == commits[commit.id.hex()]


def test_repack_in_a_thread_beside_commits_resets_undos_and_branches(tmp_path: Path) -> None:
    """gc (and its repack) loops in a thread while a writer commits in a big folder,
    undoes edits (the commit path writes the old tree again, RAW over its delta frame),
    resets, and takes side branches' trees whole. Then the side branches go and a gc
    drops the bases that trees on main were packed on."""
    names = [f"pkg/m{n:03}" for n in range(120)]
    made: dict[str, list[tuple[bytes, TreeEntry]]] = {}
    rng = random.Random(2027)
    with Repository.init(tmp_path / "s") as repo:

        def commit(changes: dict[str, bytes], branch: str = "main") -> None:
            cid = repo.commit(changes, "c", branch=branch)
            made[cid.hex()] = list(repo.trees.walk(repo.commit_info(cid).tree))

        commit({name: b"0" for name in names})
        stop, errors = threading.Event(), []
        collector = threading.Thread(target=_gc_until, args=(repo, stop, errors))
        collector.start()
        try:
            for n in range(600):
                name = rng.choice(names)
                before = repo.read("HEAD", name)
                commit({name: b"%d" % n})
                if n % 5 == 0:
                    commit({name: before})  # an undo: the tree of two commits ago
                if n % 20 == 5:  # main takes a side branch's tree, packed on the side's
                    repo.create_branch(f"side{n}", "HEAD~4")  # older: its pairs go first
                    for name in rng.sample(names, 2):
                        commit({name: b"side %d" % n}, f"side{n}")
                    cid = repo.commit_tree(repo.commit_info(f"side{n}").tree, "take side")
                    assert cid is not None
                    made[cid.hex()] = list(repo.trees.walk(repo.commit_info(cid).tree))
                if n % 45 == 44:
                    repo.reset_hard("HEAD~2")
        finally:
            stop.set()
            collector.join(timeout=300)
        assert not collector.is_alive() and errors == []
        repo.gc()
        assert repo.fsck().ok and chain_problems(repo.store) == []
        _listings_of(repo, made)
        for ref in repo.branches():
            if ref.name != "main":
                repo.delete_branch(ref.name)
        head_trees = {
            oid for c in repo.log("HEAD") for oid in _tree_ids(repo, repo.commit_info(c.id).tree)
        }
        bases = {t: repo.store.delta_base(t) for t in head_trees}
        on_side = [t for t, base in bases.items() if base is not None and base not in head_trees]
        assert on_side, "no tree on main was packed on a side branch's"
        assert repo.gc().unreachable
        assert all(repo.store.delta_base(t) in head_trees | {None} for t in on_side)
    with Repository.open(tmp_path / "s") as reopened:  # nothing cached: every chain walked
        assert reopened.fsck().ok and chain_problems(reopened.store) == []
        _listings_of(reopened, made)
        for entry in reopened.ls("HEAD", "pkg"):
            assert reopened.read("HEAD", b"pkg/" + entry.name)


def _tree_ids(repo: Repository, tree: ObjectId) -> list[ObjectId]:
    return [tree, *(e.oid for _, e in repo.trees.walk(tree) if e.is_dir())]


_STEPS = st.lists(
    st.sampled_from(["edit", "edit", "edit", "undo", "cold", "gc", "reset", "side", "drop"]),
    min_size=10,
    max_size=60,
)


@settings(max_examples=12, deadline=None)
@given(steps=_STEPS, seed=st.integers(0, 2**16))
def test_chains_stay_bounded_through_any_mix_of_saves_reads_gcs_and_resets(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], seed: int
) -> None:
    """Every delta chain, as a reader walks it: no loop, no missing base, no more
    links than MAX_DELTA_DEPTH or than its depth byte says."""
    rng = random.Random(seed)
    names = [f"pkg/m{n:02}" for n in range(60)]
    with Repository.init(tmp_path_factory.mktemp("chains") / "s") as repo:
        repo.commit({name: b"0" for name in names}, "project")
        for n, step in enumerate(steps):
            for _ in range(rng.randint(5, 8)):
                repo.commit({rng.choice(names): b"%d" % rng.randrange(6)}, "edit")
            if step == "undo":
                repo.commit_tree(repo.commit_info("HEAD~2").tree, "undo")
            elif step == "cold":
                _read_cold(repo, repo.commit_info("HEAD").tree)
            elif step == "gc":
                repo.gc()
            elif step == "reset" and len(list(repo.log("HEAD", limit=6))) == 6:
                repo.reset_hard("HEAD~3")
            elif step == "side" and len(list(repo.log("HEAD", limit=5))) == 5:
                repo.create_branch(f"s{n}", "HEAD~4")
                repo.commit({rng.choice(names): b"side"}, "side", branch=f"s{n}")
                repo.commit_tree(repo.commit_info(f"s{n}").tree, "take")
            elif step == "drop" and len(repo.branches()) > 1:
                repo.delete_branch(rng.choice([b.name for b in repo.branches()][1:]))
            assert chain_problems(repo.store) == []
        repo.gc()
        assert repo.fsck().ok and chain_problems(repo.store) == []


@pytest.mark.usefixtures("raw_trees")
def test_a_branch_restored_to_its_first_tree_stays_readable_after_gc(tmp_path: Path) -> None:
    """The first tree is plain (nothing before it), the next ones are repacked on it,
    and the restore's commit hands gc the first tree again, on the last: it must stay
    plain, or its chain loops (found by the chains property test, seed 1270)."""
    names = [f"pkg/m{n:02}" for n in range(60)]
    with Repository.init(tmp_path / "s") as repo:
        first = repo.commit({name: b"0" for name in names}, "project")
        repo.commit({"pkg/m00": b"1"}, "edit")
        repo.commit({"pkg/m01": b"1"}, "edit")
        repo.commit_tree(repo.commit_info(first).tree, "back to the start")
        assert repo.gc().repacked
        assert chain_problems(repo.store) == []
    with Repository.open(tmp_path / "s") as reopened:  # nothing cached: every chain walked
        assert reopened.fsck().ok and chain_problems(reopened.store) == []
        assert reopened.read("HEAD", "pkg/m00") == b"0"
        assert reopened.read("HEAD~1", "pkg/m01") == b"1"


@pytest.mark.usefixtures("raw_trees")
def test_gc_and_fsck_leave_the_store_caches_as_they_were_once_trees_are_deltas(
    tmp_path: Path,
) -> None:
    """After a repack, reading a tree walks its delta chain: the bases a maintenance
    scan walked through went into the frame cache, and pushed out what a mount reuses."""
    names = [f"pkg/m{n:03}" for n in range(100)]
    with Repository.init(tmp_path / "s") as repo:
        repo.commit({name: b"0" for name in names}, "project")
        for n in range(60):
            repo.commit({names[n]: b"%d" % n}, "save")
        assert repo.gc().repacked
    with Repository.open(tmp_path / "s") as repo:
        assert repo.read("HEAD", names[0]) == b"0"
        before = repo.store.stats().extra
        assert repo.fsck().ok
        repo.gc(dry_run=True)
        repo.gc()
        after = repo.store.stats().extra
        for cache in ("frame_cache_bytes", "record_cache_bytes"):
            assert after[cache] <= before[cache], cache


def test_a_salvage_copies_paged_folders_and_the_roots_record_whole(
    disk_repo: Repository, tmp_path: Path
) -> None:
    """A folder copied by id is copied with every record it is made of: a paged tree's
    pages, a root record's listing (ADR 0044)."""
    from helixfs.vcs import damage

    disk_repo.commit({f"many/f{i}": b"%d" % i for i in range(600)} | {"top": b"t"}, "paged")
    work = disk_repo.worktree("main")
    work.set_attrs(work.root, mode=0o700)
    work.commit("chmod .")
    report = damage.salvage(disk_repo, tmp_path / "salvaged")
    assert report.left_out == [] and report.lost_refs == []
    with Repository.open(tmp_path / "salvaged") as copy:
        assert copy.fsck().ok, copy.fsck().problems
        assert copy.read("main", "many/f599") == b"599"
        own = copy.trees.get(copy.commit_info("main").tree).own
        assert own is not None and own.mode & 0o7777 == 0o700


def test_gc_keeps_chunks_in_use_without_reading_them(
    repo: Repository, store: CountingStore
) -> None:
    """A file stored ahead of its close (ADR 0048) names its chunks to gc apart
    (keep_chunks_in_use): gc keeps them unread, since a blob points at nothing (ADR
    0071); released, they go."""
    held = [_orphan(store, os.urandom(20_000)) for _ in range(3)]
    other = _orphan(store, b"nobody holds this one")
    release = repo.keep_chunks_in_use(lambda: held)
    store.gets.clear()
    repo.gc()
    assert all(store.contains(oid) for oid in held) and not store.contains(other)
    assert not set(held) & set(store.gets)
    release()
    repo.gc()
    assert not any(store.contains(oid) for oid in held)
