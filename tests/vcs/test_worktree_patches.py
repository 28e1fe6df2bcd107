"""The work tree's big folders written as patches on their last version (ADR 0095, its
addendum): whatever a history of saves, folds, commits and reloads does to them, every
commit and the saved state read back the same from a store opened again (no cache holds
them), and gc and fsck keep it so."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixfs.errors import NotFound
from helixfs.ids import ObjectId
from helixfs.store.frame import Codec
from helixfs.vcs import Node, Repository, Worktree
from helixfs.vcs.objects import TREE_HEAD_BYTES, encode_tree_raw
from helixfs.vcs.treeops import PATCH_FROM, listing_patch

from .chains import chain_problems
from .test_crash import _run_then_kill

# The root and `big` hold 40 files (~2.9 KB records: patched), `small` 8 (not patched)
FOLDERS = [b"", b"big", b"small"]
SIZES = {b"": 40, b"big": 40, b"small": 8}
IGNORE = b"*.log\n"
BASE = ObjectId(b"b" * 32)
Step = tuple[Any, ...]

name_n = st.integers(0, 44)  # 40..44: names the folders do not hold yet (an insert)
data = st.binary(max_size=30)
folder = st.sampled_from(FOLDERS)
step = st.one_of(
    st.tuples(st.just("write"), folder, name_n, data),
    st.tuples(st.just("write"), folder, name_n, data),
    st.tuples(st.just("delete"), folder, name_n),
    st.tuples(st.just("rename"), folder, name_n, folder, name_n),
    st.tuples(st.just("chmod"), folder, name_n),
    st.tuples(st.just("editor"), folder, name_n, data),  # write a temp name, rename it over
    st.tuples(st.just("temp"), folder, name_n, data),  # an editor temp file left there
    st.tuples(st.just("log"), folder, name_n, data),  # ignored once .gitignore says so
    st.tuples(st.just("save")),
    st.tuples(st.just("fold")),
    st.tuples(st.just("commit")),
    st.tuples(st.just("commit")),
    st.tuples(st.just("reload")),
)


def _name(n: int) -> bytes:
    return b"file-%02d.txt" % n


def _path(folder: bytes, name: bytes) -> bytes:
    return folder + b"/" + name if folder else name


def _dir(tree: Worktree, folder: bytes) -> Node:
    return tree.lookup(tree.root, folder) if folder else tree.root


def _write(tree: Worktree, folder: bytes, name: bytes, content: bytes) -> None:
    parent = _dir(tree, folder)
    node = tree.find(parent, name)
    tree.set_content(node if node is not None else tree.create(parent, name), content)


def work_files(tree: Worktree) -> dict[bytes, tuple[int, bytes]]:
    """Every file of the work tree (temp and ignored ones too): its mode and bytes."""
    found = {}
    pending = [(b"", tree.root)]
    while pending:
        prefix, node = pending.pop()
        for name, child in tree.listdir(node):
            path = _path(prefix, name)
            if child.is_dir():
                pending.append((path, child))
            else:
                found[path] = (child.mode, tree.read(child, 0, child.size))
    return found


def commit_files(repo: Repository, rev: str) -> dict[bytes, bytes]:
    return {
        path: repo.read(rev, path)
        for path, entry in repo.trees.walk(repo.commit_info(rev).tree)
        if not entry.is_dir()
    }


def _start(repo: Repository, ignore: bool) -> Worktree:
    tree = repo.worktree("main")
    for where in FOLDERS:
        if where:
            tree.mkdir(tree.root, where)
        for n in range(SIZES[where]):
            _write(tree, where, _name(n), b"v0 " + _path(where, _name(n)))
    if ignore:
        _write(tree, b"", b".gitignore", IGNORE)
    tree.commit("all")
    return tree


def _run(tree: Worktree, op: Step, commits: list[str]) -> None:
    kind = op[0]
    if kind in ("write", "temp", "log", "editor"):
        where, n, content = op[1], op[2], op[3]
        name = {"write": _name(n), "temp": _name(n) + b"~", "log": b"x%02d.log" % n}.get(
            kind, b".#tmp"
        )
        _write(tree, where, name, content)
        if kind == "editor":
            parent = _dir(tree, where)
            tree.rename(parent, name, parent, _name(n))
    elif kind == "delete":
        with contextlib.suppress(NotFound):
            tree.unlink(_dir(tree, op[1]), _name(op[2]))
    elif kind == "rename":
        source, target = _dir(tree, op[1]), _dir(tree, op[3])
        if tree.find(source, _name(op[2])) is not None:
            tree.rename(source, _name(op[2]), target, _name(op[4]))
    elif kind == "chmod":
        node = tree.find(_dir(tree, op[1]), _name(op[2]))
        if node is not None:
            tree.set_attrs(node, mode=node.mode ^ 0o111)
    elif kind == "save":
        tree.save()
    elif kind == "fold":
        tree.fold()
    elif kind == "commit":
        cid = tree.commit()
        if cid is not None:
            commits.append(cid.hex())
    else:  # the nodes made again from the saved state: the next encode starts from it
        tree.save()
        tree.reload()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=40), st.booleans())
def test_every_save_and_commit_of_a_patched_work_tree_reads_back(
    history: list[Step], ignore: bool
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store"
        commits: list[str] = []
        with Repository.init(store) as repo:
            tree = _start(repo, ignore)
            commits.append(repo.branch_head("main").hex())
            for op in history:
                _run(tree, op, commits)
            tree.save()
            expected = {rev: commit_files(repo, rev) for rev in commits}
            work = work_files(tree)
        with Repository.open(store) as repo:  # recovers the saved state as a commit
            assert {rev: commit_files(repo, rev) for rev in commits} == expected
            assert work_files(repo.worktree("main")) == work
            assert repo.fsck().ok and chain_problems(repo.store) == []  # type: ignore[arg-type]
            repo.gc(grace_seconds=0)
            assert repo.fsck().ok and chain_problems(repo.store) == []  # type: ignore[arg-type]
            assert {rev: commit_files(repo, rev) for rev in commits} == expected
            assert work_files(repo.worktree("main")) == work


def _frame(repo: Repository, oid: bytes) -> bytes:
    return repo.store._objects_cf.get(oid)  # type: ignore[attr-defined,no-any-return]


def test_a_save_s_commit_in_a_big_folder_writes_the_folder_as_a_patch(tmp_path: Path) -> None:
    """The mount's path: a file written, saved (a journal), then committed (a fold): the
    root's record and `big`'s go as small DELTA frames on the last commit's."""
    with Repository.init(tmp_path / "store") as repo:
        tree = _start(repo, ignore=False)
        for n in range(5):
            _write(tree, b"big", _name(n), b"edit %d" % n)
            tree.save()
            tree.commit()
            root = repo.commit_info("HEAD").tree
            big = repo.trees.entry(root, b"big")
            assert big is not None
            for oid in (root, big.oid):
                assert len(repo.store.get(oid)) >= PATCH_FROM
                frame = _frame(repo, oid)
                assert frame[4] == Codec.DELTA and len(frame) < 200
    with Repository.open(tmp_path / "store") as repo:
        assert repo.read("HEAD", "big/" + _name(4).decode()) == b"edit 4"
        assert repo.fsck().ok


def test_a_commit_that_leaves_ignored_files_out_patches_the_commit_tree(tmp_path: Path) -> None:
    """A root holding an ignored file: the commit tree is path-copied from the head's
    (keptout.patch_tree), its record a patch on the head's."""
    with Repository.init(tmp_path / "store") as repo:
        tree = _start(repo, ignore=True)
        _write(tree, b"", b"build.log", b"not committed")
        tree.commit()
        for n in range(3):
            _write(tree, b"", _name(n), b"edit %d" % n)
            tree.commit()
            root = repo.commit_info("HEAD").tree
            frame = _frame(repo, root)
            assert frame[4] == Codec.DELTA and len(frame) < 200
        work = work_files(tree)
    with Repository.open(tmp_path / "store") as repo:
        assert commit_files(repo, "HEAD")[_name(2)] == b"edit 2"
        assert b"build.log" not in commit_files(repo, "HEAD")
        assert work_files(repo.worktree("main")) == work
        assert repo.fsck().ok


entries = st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(entries, st.data())
def test_a_listing_patch_rebuilds_the_new_listing_exactly(
    old: list[bytes], draw: st.DataObject
) -> None:
    """Whatever names are said to have changed (too few, too many, gone ones), a patch
    `listing_patch` gives describes the new record exactly, or there is none."""
    new = list(draw.draw(st.lists(st.sampled_from([*old, b"x", b"yy"]), min_size=1, max_size=12)))
    if draw.draw(st.booleans()):
        new = list(old)
        for at in draw.draw(st.lists(st.integers(0, len(old) - 1), max_size=3)):
            new[at] = draw.draw(st.binary(max_size=6))
    names = [b"%03d" % n for n in range(len(new))]
    told = draw.draw(st.lists(st.sampled_from([*names, b"", b"999"]), max_size=4))
    patch = listing_patch(BASE, old, new, told, names)
    if patch is None:
        return
    base, record = encode_tree_raw(old), encode_tree_raw(new)
    assert patch.base == BASE
    middle = record[patch.prefix : len(record) - patch.suffix]
    assert base[: patch.prefix] + middle + base[len(base) - patch.suffix :] == record


def test_a_change_the_folder_did_not_name_gives_no_patch() -> None:
    """The trims are checked against the last listing's entries: an entry changed
    outside the names told (as a bug in the stale sets would leave it) gives no patch,
    never a wrong one."""
    old = [b"aa", b"bb", b"cc", b"dd"]
    new = [b"aa", b"BB", b"cc", b"DD"]
    names = [b"a", b"b", b"c", b"d"]
    assert listing_patch(BASE, old, new, [b"b"], names) is None
    assert listing_patch(BASE, old, new, [b"b", b"d"], names) == (BASE, TREE_HEAD_BYTES + 2, 0)
    assert listing_patch(BASE, old, [*new, b"ee"], [b"b", b"d"], [*names, b"e"]) is None


def test_a_hidden_change_in_a_work_tree_folder_is_written_whole(tmp_path: Path) -> None:
    """The same in the work tree: an entry changed without its name marked stale (here
    by hand) leaves the folder's record RAW, and it reads back."""
    with Repository.init(tmp_path / "store") as repo:
        tree = _start(repo, ignore=False)
        big = tree.lookup(tree.root, b"big")
        _write(tree, b"big", _name(1), b"told")
        hidden = tree.lookup(big, _name(30))
        hidden.mtime_ns += 1
        hidden.raw = None  # re-encoded at the fold, its name not in big's stale set
        tree.commit()
        oid = repo.trees.entry(repo.commit_info("HEAD").tree, b"big")
        assert oid is not None
        assert _frame(repo, oid.oid)[4] != Codec.DELTA
    with Repository.open(tmp_path / "store") as repo:
        assert repo.read("HEAD", "big/" + _name(1).decode()) == b"told"
        assert repo.fsck().ok


BIG_FOLDER_STREAM = """
import sys
from helixfs.vcs import Repository
repo = Repository.open(sys.argv[1])
tree = repo.worktree("main")
big = tree.mkdir(tree.root, b"big")
for n in range(60):
    for parent in (tree.root, big):
        tree.set_content(tree.create(parent, b"file-%02d.txt" % n), b"v0")
tree.commit("all")
i = 0
while True:
    parent = big if i % 2 else tree.root
    node = tree.lookup(parent, b"file-%02d.txt" % (i % 60))
    tree.set_content(node, b"version %d" % i)
    if i % 3 == 0:
        print("commit", i, tree.commit().hex(), flush=True)
    elif i % 5 == 0:
        tree.fold()
        print("saved", i, flush=True)
    else:
        tree.save()
        print("saved", i, flush=True)
    i += 1
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lines", [30, 150])
def test_sigkill_amid_patched_saves_and_commits_loses_nothing(tmp_path: Path, lines: int) -> None:
    """kill -9 while a big folder's saves, folds and commits are written as patches: the
    store is whole, every commit that returned reads back, and what was saved last is
    what the recovered head holds."""
    store = tmp_path / "store"
    Repository.init(store).close()
    printed = _run_then_kill(BIG_FOLDER_STREAM, store, lines)
    latest: dict[bytes, bytes] = {}
    with Repository.open(store) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        assert chain_problems(repo.store) == []  # type: ignore[arg-type]
        history = {c.id.hex() for c in repo.log()}
        for line in printed:
            word, i, *cid = line.split()
            n = int(i)
            path = (b"big/" if n % 2 else b"") + b"file-%02d.txt" % (n % 60)
            latest[path] = b"version %d" % n
            if cid:
                assert cid[0] in history
                files = commit_files(repo, cid[0])
                assert all(files[p] == data for p, data in latest.items())
        head = commit_files(repo, "HEAD")
        assert all(head[p] == data for p, data in latest.items())
        repo.gc(grace_seconds=0)
        assert repo.fsck().ok
