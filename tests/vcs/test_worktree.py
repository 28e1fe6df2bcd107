"""The live branch state the filesystem drives: nodes, renames, saves, commits, views."""

from __future__ import annotations

import io
import random
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from helixfs.errors import (
    AlreadyExists,
    DirectoryNotEmpty,
    InvalidInput,
    InvalidName,
    IsADirectory,
    NotADirectory,
    NotFound,
    ReadOnly,
    RefConflict,
)
from helixfs.ids import CommitId
from helixfs.vcs import Repository, Worktree, attrs, treeops
from helixfs.vcs.content import CHUNK_THRESHOLD
from helixfs.vcs.revisions import is_commit

from .conftest import CountingStore


def _file(tree: Worktree, path: bytes, data: bytes) -> None:
    *dirs, name = path.split(b"/")
    node = tree.root
    for part in dirs:
        try:
            node = tree.lookup(node, part)
        except NotFound:
            node = tree.mkdir(node, part)
    tree.set_content(tree.create(node, name), data)


@pytest.fixture
def tree(repo: Repository) -> Worktree:
    return repo.worktree("main")


def test_the_saver_a_commit_names_is_one_process(repo: Repository, tree: Worktree) -> None:
    """Saves merged their metadata: a save by a process that had exited (a pid, no
    name) after one by vim made a commit name vim with the other process's pid."""
    tree.set_content(tree.create(tree.root, b"a"), b"1")
    tree.note_meta({"process": "vim", "pid": 42})
    tree.set_content(tree.create(tree.root, b"b"), b"2")
    tree.note_meta({"pid": 77})
    tree.note_meta({})  # a caller unknown: the last known saver stays
    tree.commit()
    meta = repo.commit_info("HEAD").meta
    assert meta["pid"] == 77 and "process" not in meta


def _pending_xattrs(tree: Worktree) -> None:
    """Big values set on many files and not saved: only the commit writes them."""
    folder = tree.mkdir(tree.root, b"tagged")
    for n in range(20):
        tree.set_xattr(tree.create(folder, b"f%d" % n), b"user.big", bytes([n]) * 60_000)


def _paged_folder(tree: Worktree) -> None:
    folder = tree.mkdir(tree.root, b"big")
    for n in range(1500):
        tree.set_content(tree.create(folder, b"\xff name %05d" % n), b"x%d" % n)
    tree.save()  # a journal too long: trees


def _journaled_save(tree: Worktree) -> None:
    tree.set_content(tree.create(tree.root, b"one.txt"), b"saved\n")
    tree.set_next_message("m" * 5000)
    tree.save()


def _temp_files(tree: Worktree) -> None:
    for n in range(50):
        tree.set_content(tree.create(tree.root, b".f%d.swp" % n), b"t" * n)
        tree.set_content(tree.create(tree.root, b"f%d" % n), b"k" * n)


@pytest.mark.parametrize("change", [_pending_xattrs, _paged_folder, _journaled_save, _temp_files])
def test_commit_bound_covers_what_the_commit_writes(
    store: CountingStore, repo: Repository, tree: Worktree, change: Callable[[Worktree], None]
) -> None:
    """A HEAD switch checks the disk's room before it commits the pending saves: the
    check counted only the ref move, so the commit could still fail at close."""
    change(tree)
    bound = tree.commit_bound()
    store.written.clear()
    assert tree.commit() is not None
    assert 0 < sum(store.written) <= bound
    assert tree.commit_bound() == 0  # nothing left to commit


def test_create_write_read_commit(repo: Repository, tree: Worktree) -> None:
    src = tree.mkdir(tree.root, b"src", 0o750)
    node = tree.create(src, b"app.py", 0o640)
    assert node.is_file() and node.size == 0 and stat.S_IMODE(node.mode) == 0o640
    tree.set_content(node, b"print('hi')\n")
    assert tree.read(node, 0, 100) == b"print('hi')\n" and tree.read(node, 6, 2) == b"'h"
    assert tree.read(node, 100, 10) == b""
    assert tree.dirty and tree.content_id(src) is None
    cid = tree.commit(meta={"process": "vim", "pid": 42})
    assert cid is not None and not tree.dirty
    info = repo.commit_info("HEAD")
    assert info.id == cid and info.message == "vim: save 2 paths"  # src and src/app.py
    assert info.meta["pid"] == 42 and "src/app.py" in info.meta["changed"]
    assert repo.read("HEAD", "src/app.py") == b"print('hi')\n"
    assert tree.commit() is None  # nothing changed since
    assert tree.content_id(src) == repo.entry("HEAD", "src").oid  # type: ignore[union-attr]
    assert tree.path_of(node) == b"src/app.py" and tree.path_of(tree.root) == b""


def test_listdir_lookup_and_errors(tree: Worktree) -> None:
    _file(tree, b"d/b", b"2")
    _file(tree, b"d/a", b"1")
    d = tree.lookup(tree.root, b"d")
    assert [name for name, _ in tree.listdir(d)] == [b"a", b"b"]
    with pytest.raises(NotFound):
        tree.lookup(d, b"zz")
    with pytest.raises(NotADirectory):
        tree.lookup(tree.lookup(d, b"a"), b"x")
    with pytest.raises(AlreadyExists):
        tree.create(d, b"a")
    for bad in (b"", b".", b"..", b"a/b", b"a\0"):
        with pytest.raises(InvalidName):
            tree.create(d, bad)
    with pytest.raises(IsADirectory):
        tree.read(d, 0, 1)
    with pytest.raises(IsADirectory):
        tree.unlink(tree.root, b"d")
    with pytest.raises(DirectoryNotEmpty):
        tree.rmdir(tree.root, b"d")
    with pytest.raises(NotADirectory):
        tree.rmdir(d, b"a")


def test_symlinks(repo: Repository, tree: Worktree) -> None:
    link = tree.symlink(tree.root, b"link", b"target/path")
    assert link.is_symlink() and link.size == 11 and tree.readlink(link) == b"target/path"
    tree.commit("link")
    assert repo.entry("HEAD", "link").is_symlink()  # type: ignore[union-attr]
    with pytest.raises(InvalidInput):
        tree.symlink(tree.root, b"bad", b"")


def test_unlink_then_read_the_detached_node(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"f", b"still here")
    tree.commit()
    node = tree.unlink(tree.root, b"f")
    assert tree.read(node, 0, 100) == b"still here"
    tree.set_content(node, b"written after unlink")  # an open handle keeps writing
    assert tree.read(node, 0, 100) == b"written after unlink"
    tree.commit()
    assert [e.name for e in repo.ls()] == []


def test_rename_moves_the_same_node(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"a/f", b"1")
    a = tree.lookup(tree.root, b"a")
    f = tree.lookup(a, b"f")
    b = tree.mkdir(tree.root, b"b")
    assert tree.rename(a, b"f", b, b"g") is None
    assert tree.lookup(b, b"g") is f and tree.path_of(f) == b"b/g"
    with pytest.raises(NotFound):
        tree.lookup(a, b"f")
    tree.commit()
    assert repo.read("HEAD", "b/g") == b"1" and repo.ls("HEAD", "a") == []


def test_rename_over_a_file_returns_the_replaced_node(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"app.py", b"old")
    tree.commit()
    # an editor's atomic save: write a temp file, rename it over the original
    _file(tree, b".app.py.tmp.1.2", b"new")
    old = tree.lookup(tree.root, b"app.py")
    replaced = tree.rename(tree.root, b".app.py.tmp.1.2", tree.root, b"app.py")
    assert replaced is old and tree.read(old, 0, 10) == b"old"
    tree.commit()
    assert [e.name for e in repo.ls()] == [b"app.py"] and repo.read("HEAD", "app.py") == b"new"
    assert repo.commit_info("HEAD").parents == (repo.resolve("HEAD~1"),)


def test_rename_rules(tree: Worktree) -> None:
    _file(tree, b"d/x", b"1")
    _file(tree, b"f", b"2")
    tree.mkdir(tree.root, b"empty")
    d = tree.lookup(tree.root, b"d")
    with pytest.raises(AlreadyExists):
        tree.rename(tree.root, b"f", d, b"x", noreplace=True)
    with pytest.raises(IsADirectory):
        tree.rename(tree.root, b"f", tree.root, b"d")
    with pytest.raises(NotADirectory):
        tree.rename(tree.root, b"d", tree.root, b"f")
    _file(tree, b"full/y", b"3")
    with pytest.raises(DirectoryNotEmpty):
        tree.rename(tree.root, b"d", tree.root, b"full")
    with pytest.raises(InvalidInput):
        tree.rename(tree.root, b"d", d, b"inside")
    with pytest.raises(NotFound):
        tree.rename(tree.root, b"nope", tree.root, b"x")
    empty = tree.lookup(tree.root, b"empty")
    assert tree.rename(tree.root, b"d", tree.root, b"empty") is empty
    assert tree.lookup(tree.root, b"empty") is d


def test_rename_exchange(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"a", b"A")
    _file(tree, b"d/b", b"B")
    a = tree.lookup(tree.root, b"a")
    d = tree.lookup(tree.root, b"d")
    b = tree.lookup(d, b"b")
    assert tree.rename(tree.root, b"a", d, b"b", exchange=True) is None
    assert tree.lookup(tree.root, b"a") is b and tree.lookup(d, b"b") is a
    with pytest.raises(NotFound):
        tree.rename(tree.root, b"a", d, b"none", exchange=True)
    tree.commit()
    assert repo.read("HEAD", "a") == b"B" and repo.read("HEAD", "d/b") == b"A"


def test_an_exchange_with_an_editor_temp_file_moves_no_folder_time_the_commit_omits(
    repo: Repository, tree: Worktree
) -> None:
    """Found by the worktree model test (seed 306 of 3,000): an exchange moved both
    folders' ctime even where only a temp file's name came or went, as no create, unlink
    or rename does. Two temp files swapped made a commit of their own, and a temp file
    swapped with a file changed a folder the commit's `changed` list did not name, so
    `last_commit` of the folders above it disagreed with their trees."""
    _file(tree, b"d/e/x.py", b"x")
    _file(tree, b"d/e/4913", b"")
    _file(tree, b"d/.x.py.swp", b"swap")
    _file(tree, b"notes", b"n")
    first = tree.commit()
    d = tree.lookup(tree.root, b"d")
    e = tree.lookup(d, b"e")
    tree.rename(e, b"4913", d, b".x.py.swp", exchange=True)
    assert tree.commit() is None and repo.resolve("HEAD") == first
    tree.rename(e, b"4913", tree.root, b"notes", exchange=True)
    swapped = tree.commit()
    head = repo.commit_info("HEAD")
    listed = [p.encode() for p in head.meta["changed"]]
    assert list(repo.trees.changed_paths(repo.commit_info(first).tree, head.tree)) == listed
    assert listed == [b"notes"] and repo.read("HEAD", "notes") == b"swap"
    assert tree.last_commit(b"d") == tree.last_commit(b"d/e") == first != swapped


def test_attrs_truncate_and_xattrs(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"f", b"hello world")
    f = tree.lookup(tree.root, b"f")
    tree.set_attrs(f, size=5)
    assert f.size == 5 and tree.read(f, 0, 100) == b"hello"
    tree.set_attrs(f, size=8, mode=0o600, mtime_ns=123)
    assert tree.read(f, 0, 100) == b"hello\0\0\0"
    assert stat.S_ISREG(f.mode) and stat.S_IMODE(f.mode) == 0o600 and f.mtime_ns == 123
    tree.set_xattr(f, b"user.note", b"\xffvalue")
    tree.commit()
    entry = repo.entry("HEAD", "f")
    assert entry is not None and entry.mtime_ns == 123
    assert attrs.user_xattrs(entry.xattrs) == ((b"user.note", b"\xffvalue"),)
    # its ctime (the set_xattr's) is not its mtime: stored beside it (ADR 0042)
    assert attrs.time_of(attrs.lookup(entry.xattrs, attrs.CTIME), 123) == f.ctime_ns
    tree.remove_xattr(f, b"user.note")
    with pytest.raises(NotFound):
        tree.remove_xattr(f, b"user.note")
    tree.commit()
    assert attrs.user_xattrs(repo.entry("HEAD", "f").xattrs) == ()  # type: ignore[union-attr]


def test_a_page_edited_in_a_big_file_is_stored_as_deltas_on_the_old_chunks(
    disk_repo: Repository,
) -> None:
    """A database commit rewrites a page or two: the chunks re-cut around it are stored
    as deltas on the chunks they replace, not whole (ADR 0017), and stay readable when
    the old version goes."""
    repo, tree = disk_repo, disk_repo.worktree("main")
    data = bytearray(random.Random(4).randbytes(8 << 20))
    node = tree.create(tree.root, b"app.db")
    tree.set_content(node, io.BytesIO(bytes(data)))
    tree.commit()
    old_chunks = set(repo.contents.chunks(node.oid)[1])  # type: ignore[index]
    before = repo.store.stats().stored_bytes
    for page in (300, 1000, 1700):  # three 4 KiB pages far apart
        data[page * 4096 : (page + 1) * 4096] = random.Random(page).randbytes(4096)
        edits = [(page * 4096, (page + 1) * 4096)]
        tree.set_content(node, io.BytesIO(bytes(data)), edited=(node.oid, edits))
        tree.commit()
    grown = repo.store.stats().stored_bytes - before
    assert grown < 3 * 16_000  # whole, the re-cut chunks would be ~3 x 2 x 64 KiB
    assert repo.read("HEAD", "app.db") == bytes(data)
    repo.store.delete(old_chunks - set(repo.contents.chunks(node.oid)[1]))  # type: ignore[index]
    assert repo.read("HEAD", "app.db") == bytes(data)


def test_big_file_streamed_from_a_spool_and_range_read(
    repo: Repository, tree: Worktree, store: CountingStore
) -> None:
    data = bytes(range(256)) * (3 * CHUNK_THRESHOLD // 256) + b"tail"
    node = tree.create(tree.root, b"big")
    tree.set_content(node, io.BytesIO(data))
    assert node.size == len(data)
    store.gets.clear()
    assert tree.read(node, len(data) - 10, 100) == data[-10:]
    assert len(store.gets) <= 3
    tree.set_attrs(node, size=len(data) + 5)
    assert tree.read(node, len(data) - 4, 100) == b"tail" + bytes(5)
    tree.commit()
    assert repo.read("HEAD", "big") == data + bytes(5)


def test_ephemeral_files_live_in_the_work_tree_but_not_in_commits(
    repo: Repository, tree: Worktree
) -> None:
    _file(tree, b"src/app.py", b"v1")
    tree.commit()
    swap = tree.create(tree.lookup(tree.root, b"src"), b".app.py.swp")
    tree.set_content(swap, b"vim state")
    tree.create(tree.root, b"4913")
    assert tree.commit() is None  # only editor droppings changed
    _file(tree, b"notes~", b"backup")
    tree.set_content(tree.lookup(tree.lookup(tree.root, b"src"), b"app.py"), b"v2")
    cid = tree.commit()
    assert cid is not None
    assert [e.name for e in repo.ls("HEAD", "src")] == [b"app.py"]
    assert [e.name for e in repo.ls()] == [b"src"]
    assert repo.commit_info(cid).meta["changed"] == ["src/app.py"]
    assert tree.lookup(tree.lookup(tree.root, b"src"), b".app.py.swp") is swap
    assert repo.store.ref("work/main") is not None  # the work tree holds more than HEAD
    tree.unlink(tree.lookup(tree.root, b"src"), b".app.py.swp")
    tree.unlink(tree.root, b"4913")
    tree.unlink(tree.root, b"notes~")
    tree.set_content(tree.lookup(tree.lookup(tree.root, b"src"), b"app.py"), b"v3")
    tree.commit()
    assert repo.store.ref("work/main") is None  # the same again: nothing pending
    assert tree.root.pure


def test_a_name_that_came_and_went_commits_its_folder_s_mtime(
    repo: Repository, tree: Worktree
) -> None:
    """`git status` takes .git/index.lock and removes it: the tree then differs from the
    head's only by the folder's mtime (as on a local disk, where it changes too). The
    commit listed nothing ("save 0 paths"); it lists the folder now."""
    _file(tree, b"r/.git/HEAD", b"ref")
    tree.commit()
    git = tree.lookup(tree.lookup(tree.root, b"r"), b".git")
    before = repo.entry("HEAD", "r/.git")
    tree.create(git, b"index.lock")
    tree.unlink(git, b"index.lock")
    cid = tree.commit(meta={"process": "git", "pid": 7})
    assert cid is not None
    info = repo.commit_info(cid)
    assert info.meta["changed"] == ["r/.git"] and info.message == "git: save r/.git"
    after = repo.entry("HEAD", "r/.git")
    assert before is not None and after is not None
    assert after._replace(mtime_ns=before.mtime_ns) == before  # the mtime, nothing else
    parent_tree = repo.commit_info(info.parents[0]).tree
    assert list(repo.trees.changed_paths(parent_tree, info.tree)) == [b"r/.git"]


def test_a_save_that_changes_no_versioned_entry_makes_no_commit(
    repo: Repository, tree: Worktree
) -> None:
    """A name made and removed at the root (whose times are not versioned, ADR 0030) and
    an editor's temp file in a folder leave the head's tree as it was: no commit. (A
    file written and put back is a change now: its ctime is kept.)"""
    _file(tree, b"d/a.txt", b"v1")
    head = tree.commit()
    tree.create(tree.root, b"index.lock")
    tree.unlink(tree.root, b"index.lock")
    folder = tree.lookup(tree.root, b"d")
    tree.create(folder, b"4913")
    tree.unlink(folder, b"4913")
    assert tree.dirty and tree.commit() is None
    assert repo.resolve("HEAD") == head


def test_a_subject_counts_the_paths_its_commit_lists(repo: Repository, tree: Worktree) -> None:
    """It counted leaves ("save 1 path" of a new folder and its file listed as two)."""
    _file(tree, b"new/a.txt", b"a")
    info = repo.commit_info(tree.commit())  # type: ignore[arg-type]
    assert info.message == f"save {len(info.meta['changed'])} paths"
    assert info.meta["changed"] == ["new", "new/a.txt"]


def test_readonly_views(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"a", b"1")
    tree.commit()
    repo.create_snapshot("snap")
    for view in (repo.snapshot_view("snap"), repo.commit_view("HEAD")):
        assert view.readonly and view.read(view.lookup(view.root, b"a"), 0, 10) == b"1"
        with pytest.raises(ReadOnly):
            view.create(view.root, b"x")
        with pytest.raises(ReadOnly):
            view.set_content(view.lookup(view.root, b"a"), b"2")
        with pytest.raises(ReadOnly):
            view.commit()
    with pytest.raises(NotFound):
        repo.snapshot_view("nope")


def test_reload_after_reset_and_subscribers(repo: Repository, tree: Worktree) -> None:
    heard: list[str] = []
    repo.subscribe(heard.append)
    _file(tree, b"a", b"1")
    tree.commit()
    _file(tree, b"b", b"2")
    tree.commit()
    old_root = tree.root
    repo.reset_hard("HEAD~1")
    assert heard == ["main"]
    assert tree.root is not old_root
    assert [n for n, _ in tree.listdir(tree.root)] == [b"a"]
    _file(tree, b"c", b"3")
    tree.commit()
    assert {e.name for e in repo.ls()} == {b"a", b"c"}


def test_out_of_band_move_commits_pending_work_first(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"a", b"1")
    tree.commit()
    _file(tree, b"unsaved", b"typed but not committed")
    repo.reset_hard("HEAD~1")
    assert [n for n, _ in tree.listdir(tree.root)] == []
    commits = [CommitId(c) for c in repo.store.ids() if is_commit(repo, c)]
    saved = [c for c in commits if b"unsaved" in {e.name for e in repo.ls(c.hex())}]
    assert len(saved) == 1  # the typed work was committed before the move, never dropped
    assert repo.read(saved[0].hex(), "unsaved") == b"typed but not committed"


def test_api_commit_on_a_live_branch_reloads_it(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"a", b"1")
    repo.commit({"b": b"2"}, "from the API")
    assert {e.name for e in repo.ls()} == {b"a", b"b"}
    assert {n for n, _ in tree.listdir(tree.root)} == {b"a", b"b"}
    assert [c.message for c in repo.log(limit=2)][0] == "from the API"


def test_last_commit_of_a_path(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"a", b"1")
    first = tree.commit()
    _file(tree, b"b", b"2")
    tree.commit()
    tree.set_content(tree.lookup(tree.root, b"b"), b"3")
    third = tree.commit()
    assert tree.last_commit(b"a") == first
    assert tree.last_commit(b"b") == third
    assert tree.last_commit(b"zzz") is None


def test_next_message(repo: Repository, tree: Worktree) -> None:
    tree.set_next_message("explained by the agent")
    _file(tree, b"a", b"1")
    tree.commit()
    assert repo.commit_info("HEAD").message == "explained by the agent"
    _file(tree, b"b", b"1")
    tree.commit()
    assert repo.commit_info("HEAD").message == "save b"


def test_next_message_survives_an_out_of_band_move(repo: Repository, tree: Worktree) -> None:
    """A reset (or merge, API commit) reloads the worktree: the message set for the
    branch's next commit is still for its next commit, not dropped with the nodes."""
    _file(tree, b"a", b"1")
    tree.commit()
    tree.set_next_message("why b exists")
    repo.reset_hard("HEAD~1")
    _file(tree, b"b", b"2")
    tree.commit()
    assert repo.commit_info("HEAD").message == "why b exists"


def test_pending_work_settled_before_a_move_gets_its_message(
    repo: Repository, tree: Worktree
) -> None:
    tree.set_next_message("why a exists")
    _file(tree, b"a", b"1")
    tree.save()  # saved, not committed yet (a quiet window)
    repo.commit({"b": b"2"}, "from the API")
    assert [c.message for c in repo.log(limit=2)] == ["from the API", "why a exists"]
    assert tree.next_message is None


def test_node_identity_survives_saves_and_commits(tree: Worktree) -> None:
    _file(tree, b"d/f", b"1")
    d = tree.lookup(tree.root, b"d")
    f = tree.lookup(d, b"f")
    tree.save()
    tree.commit()
    assert tree.lookup(tree.root, b"d") is d and tree.lookup(d, b"f") is f


def test_save_then_reopen_recovers_pending_changes(repo: Repository, store: CountingStore) -> None:
    tree = repo.worktree("main")
    _file(tree, b"pending.txt", b"saved only")
    tree.save()
    again = Repository.wrap(store)
    assert again.read("HEAD", "pending.txt") == b"saved only"
    assert again.commit_info("HEAD").message == "recovered pending changes"
    assert Repository.wrap(store).recover() == []


def test_lost_cas_keeps_the_work_saved_and_the_other_commit(
    repo: Repository, tree: Worktree
) -> None:
    _file(tree, b"a", b"1")
    tree.commit()
    other = repo.commit_info("HEAD")
    # another writer moves the branch behind this worktree's back (no notification)
    from helixfs.ids import object_id
    from helixfs.store import RefUpdate
    from helixfs.vcs.objects import Commit, encode_commit

    record = encode_commit(Commit(other.tree, (other.id,), 1, "x", "elsewhere", {}))
    theirs = object_id(record)
    repo.store.write({theirs: record}, [RefUpdate("branches/main", theirs, expected=other.id)])
    _file(tree, b"mine", b"2")
    with pytest.raises(RefConflict):
        tree.commit()
    assert repo.store.ref("branches/main") == theirs
    tree.reload()
    assert tree.commit() is not None
    assert repo.read("HEAD", "mine") == b"2"
    assert repo.resolve("HEAD~1") == theirs


def test_branch_and_snapshot_from_a_live_branch_include_its_saves(
    repo: Repository, tree: Worktree
) -> None:
    _file(tree, b"draft", b"saved, not committed yet")
    tree.save()
    repo.create_branch("copy")
    repo.create_snapshot("snap")
    assert repo.read("copy", "draft") == b"saved, not committed yet"
    assert repo.read("snap", "draft") == b"saved, not committed yet"
    assert not tree.dirty


def test_bad_attributes_are_refused_before_they_reach_a_save(tree: Worktree) -> None:
    _file(tree, b"f", b"1")
    f = tree.lookup(tree.root, b"f")
    for name, value in ((b"user." + b"n" * 300, b"v"), (b"user.big", bytes(70000)), (b"a\0b", b"")):
        with pytest.raises(InvalidInput):
            tree.set_xattr(f, name, value)
    with pytest.raises(InvalidInput):
        tree.set_attrs(f, size=0, mtime_ns=2**64)
    assert tree.read(f, 0, 10) == b"1"  # nothing changed
    assert f.xattrs == {}
    assert tree.commit() is not None


def test_a_temp_file_renamed_away_is_no_changed_path(repo: Repository, tree: Worktree) -> None:
    _file(tree, b"conf.txt", b"old\n")
    tree.commit()
    _file(tree, b"sedAb12Cd", b"new\n")  # sed -i: write a temp file, rename it over
    tree.rename(tree.root, b"sedAb12Cd", tree.root, b"conf.txt")
    tree.commit()
    assert repo.commit_info("HEAD").meta["changed"] == ["conf.txt"]
    assert repo.commit_info("HEAD").message == "save conf.txt"


def test_changed_is_not_cut_short_by_temp_files_renamed_away(
    repo: Repository, tree: Worktree
) -> None:
    """More than 1000 recorded paths stop the recording; the temp names it recorded are
    then dropped, and the list left under 1000 entries looked complete: last_commit
    skipped the commit that made the files it missed."""
    _file(tree, b"old", b"0")
    tree.commit()
    for index in range(600):  # an editor's save each: a temp file renamed over the name
        _file(tree, b"t%d.tmp" % index, b"%d" % index)
        tree.rename(tree.root, b"t%d.tmp" % index, tree.root, b"f%d" % index)
    cid = tree.commit()
    changed = repo.commit_info("HEAD").meta["changed"]
    assert len(changed) >= 1000 or "f599" in changed
    assert tree.last_commit(b"f599") == cid


def test_directories_nested_deeper_than_pythons_default_recursion_limit(
    repo: Repository, tree: Worktree
) -> None:
    node = tree.root
    for _ in range(1500):
        node = tree.mkdir(node, b"d")
    tree.set_content(tree.create(node, b"f"), b"deep")
    tree.commit()
    tree.set_content(tree.lookup(node, b"f"), b"deeper")
    tree.commit()
    path = "/".join(["d"] * 1500) + "/f"
    assert repo.read("HEAD", path) == b"deeper"
    assert [c.status for c in repo.diff("HEAD~1", "HEAD")] == ["M"]
    assert repo.fsck().ok and repo.gc(dry_run=True).unreachable == 0
    assert tree.last_commit(path.encode()) == repo.resolve("HEAD")


def test_editor_temp_files_survive_ref_moves_like_untracked_files(
    repo: Repository, tree: Worktree
) -> None:
    """A temp-named file no commit holds stays in the work tree when the branch moves
    (reset, merge, a commit or import from outside), as git keeps untracked files."""
    _file(tree, b"src/app.py", b"v1")
    tree.commit()
    _file(tree, b"notes~", b"my notes")
    _file(tree, b"src/4913", b"an issue")
    _file(tree, b"gone/.a.swp", b"vim state")  # its directory is not in HEAD~2
    tree.set_content(tree.lookup(tree.lookup(tree.root, b"src"), b"app.py"), b"v2")
    tree.commit()
    _file(tree, b"gone/kept", b"x")
    tree.commit()
    assert b"notes~" not in {e.name for e in repo.ls()}

    def names(*path: bytes) -> set[bytes]:
        node = tree.root
        for part in path:
            node = tree.lookup(node, part)
        return {n for n, _ in tree.listdir(node)}

    repo.reset_hard("HEAD")
    assert names() == {b"src", b"gone", b"notes~"}
    repo.reset_hard("HEAD~2")
    assert names() == {b"src", b"gone", b"notes~"}
    assert names(b"src") == {b"app.py", b"4913"}
    assert names(b"gone") == {b".a.swp"}  # made again to hold it
    assert tree.read(tree.lookup(tree.root, b"notes~"), 0, 100) == b"my notes"
    assert tree.commit() is not None  # the directory that holds it is real
    assert [e.name for e in repo.ls()] == [b"gone", b"src"]

    repo.commit({"src/other.py": b"o"}, "from outside")
    assert names(b"src") == {b"app.py", b"4913", b"other.py"}

    repo.create_branch("side")
    repo.commit({"side.txt": b"s"}, "on side", branch="side")
    assert repo.merge("side").status == "fast-forward"
    assert names(b"src") == {b"app.py", b"4913", b"other.py"}
    assert b"side.txt" in names()
    repo.commit({"side2.txt": b"s"}, "on side", branch="side")
    repo.commit({"main.txt": b"m"}, "on main")
    assert repo.merge("side").status == "merged"
    assert names() == {b"src", b"gone", b"notes~", b"side.txt", b"side2.txt", b"main.txt"}
    assert names(b"src") == {b"app.py", b"4913", b"other.py"}

    moved = repo.resolve("HEAD~1")
    repo.move_refs({"branches/main": moved})  # as a git import moves branches
    assert b"side2.txt" not in names()  # the work tree follows the move
    assert names(b"src") == {b"app.py", b"4913", b"other.py"}
    assert tree.commit() is None


def test_a_committed_temp_name_stays_committed_like_a_tracked_file(
    repo: Repository, tree: Worktree
) -> None:
    """QA2: a `keep~` committed by an import vanished from the next save's commit once
    the work tree held a temp file of its own. As with git's ignore rules, a name that
    the head commit holds is tracked: its changes are committed, its deletion too."""
    repo.commit({"keep~": b"t", "sub/.z.swp": b"s", "a.txt": b"a"}, "an import")
    _file(tree, b"notes~", b"mine")  # untracked: the branch now has a saved work tree
    tree.set_content(tree.lookup(tree.root, b"a.txt"), b"a2")
    tree.commit()
    assert {e.name for e in repo.ls()} == {b"a.txt", b"keep~", b"sub"}
    assert repo.read("HEAD", "sub/.z.swp") == b"s"  # below a folder never loaded
    tree.set_content(tree.lookup(tree.root, b"keep~"), b"t2")
    tree.commit()
    assert repo.read("HEAD", "keep~") == b"t2"
    tree.unlink(tree.root, b"keep~")
    tree.commit()
    assert {e.name for e in repo.ls()} == {b"a.txt", b"sub"}
    repo.recover()  # a saved work tree is committed against its head the same way
    assert [e.name for e in repo.ls("HEAD", "sub")] == [b".z.swp"]


def test_recovery_keeps_editor_temp_files(disk_repo: Repository) -> None:
    tree = disk_repo.worktree()
    _file(tree, b"a", b"1")
    _file(tree, b"notes~", b"mine")
    tree.save()
    disk_repo.recover()
    assert disk_repo.store.ref("work/main") is not None
    tree.reload()
    assert tree.read(tree.lookup(tree.root, b"notes~"), 0, 10) == b"mine"
    assert [e.name for e in disk_repo.ls()] == [b"a"]


def test_changed_names_the_paths_a_commit_changed_after_directory_renames(
    repo: Repository, tree: Worktree
) -> None:
    """QA: `mkdir cd1; echo x > cd1/f; mv cd1 cd2` listed cd1/f (never in any tree) and
    not cd2/f."""
    _file(tree, b"old/keep", b"k")
    tree.commit()
    _file(tree, b"cd1/f", b"x")
    tree.rename(tree.root, b"cd1", tree.root, b"cd2")
    _file(tree, b"d1/sub/f", b"y")
    _file(tree, b"d1/sub/.f.swp", b"vim")
    tree.rename(tree.root, b"d1", tree.root, b"d2")
    tree.rename(tree.root, b"d2", tree.root, b"d3")
    tree.rename(tree.root, b"old", tree.root, b"new")  # a committed directory
    cid = tree.commit()
    assert cid is not None
    changed = repo.commit_info(cid).meta["changed"]
    assert changed == ["cd2", "cd2/f", "d3", "d3/sub", "d3/sub/f", "new", "new/keep", "old"]
    assert {c.path for c in repo.diff("HEAD~1", "HEAD")} == {
        b"cd2/f",
        b"d3/sub/f",
        b"new/keep",
        b"old/keep",
    }
    _file(tree, b"e1/f", b"z")
    tree.rename(tree.root, b"e1", tree.root, b"e2")
    cid = tree.commit()
    assert cid is not None
    info = repo.commit_info(cid)
    assert info.meta["changed"] == ["e2", "e2/f"]
    assert info.message == "save 2 paths"  # as many as it lists


def test_saves_and_commits_do_not_grow_the_tree_memos(
    disk_repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mount lives for days: each save made new tree ids that the memo of trees
    without temp files kept forever (+2 per save in a two-level tree). The memos are
    bounded; the bound is lowered here so that a short test reaches it."""
    monkeypatch.setattr(treeops, "MEMO_KEPT", 64, raising=False)
    tree = disk_repo.worktree()
    folder = tree.mkdir(tree.root, b"src", 0o755)
    files = [tree.create(folder, b"f%d" % i, 0o644) for i in range(4)]
    for round_ in range(400):
        tree.set_content(files[round_ % 4], b"v%d" % round_)
        tree.save()
        if round_ % 4 == 3:
            tree.commit()
    assert tree.read(files[3], 0, 10) == b"v399"
    assert len(disk_repo.trees._clean) <= 64


def test_a_saved_root_mode_is_recovered_with_the_saves_beside_it(tmp_path: Path) -> None:
    """The root's mode lives in its root record (ADR 0044), saved with the work tree:
    the recovery commit at the next open keeps it and lists "."."""
    repo = Repository.init(tmp_path / "store")
    work = repo.worktree("main")
    work.set_attrs(work.root, mode=0o700)
    work.set_content(work.create(work.root, b"f"), b"x")
    work.save()
    repo.close()  # saves, never commits: the next open recovers
    with Repository.open(tmp_path / "store") as again:
        commit = again.commit_info("HEAD")
        assert commit.meta["recovered"] and commit.meta["changed"] == [".", "f"]
        own = again.trees.get(commit.tree).own
        assert own is not None and own.mode & 0o7777 == 0o700
