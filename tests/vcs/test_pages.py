"""Big directories are paged trees: one listing, one encoding, and a save rewrites only
the pages it touched."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId, object_id
from helixfs.store.memory import MemoryStore
from helixfs.vcs import Node, Repository, Worktree
from helixfs.vcs.content import pack_bytes
from helixfs.vcs.ephemeral import is_ephemeral
from helixfs.vcs.maint import fsck
from helixfs.vcs.node import stored_xattrs
from helixfs.vcs.objects import (
    FLAT_MAX,
    KIND_PAGED,
    KIND_TREE,
    MODE_DIR,
    PAGE_MAX,
    TreeEntry,
    decode_paged,
    encode_paged,
    encode_tree,
    is_page_end,
    kind_of,
    page_lengths,
)
from helixfs.vcs.treeops import Trees


def _names(count: int, prefix: str = "f") -> list[bytes]:
    return [f"{prefix}{i:05d}".encode() for i in range(count)]


def _canonical(trees: Trees, oid: ObjectId) -> ObjectId:
    """The id a from-scratch encoding gives the same listing, subdirectories included."""
    entries = []
    for entry in trees.get(oid).entries:
        if entry.is_dir():
            sub = _canonical(trees, entry.oid)
            entry = TreeEntry(entry.name, entry.mode, sub, entry.size, entry.mtime_ns, entry.xattrs)
        entries.append(entry)
    objects: dict[ObjectId, bytes] = {}
    return Trees(MemoryStore()).build(entries, objects)


def _live_files(tree: Worktree, node: Node, prefix: bytes = b"") -> dict[bytes, object]:
    found: dict[bytes, object] = {}
    for name, child in tree.listdir(node):
        if child.is_dir():
            found.update(_live_files(tree, child, prefix + name + b"/"))
        else:
            found[prefix + name] = (child.oid, child.mode, stored_xattrs(child))
    return found


def _check_canonical(repo: Repository, tree: Worktree) -> None:
    """The saved state holds exactly the live state: its journal replayed, and its
    trees once folded, encoded as from scratch."""
    tree.save()
    replayed = Worktree(repo, tree.branch)
    assert _live_files(replayed, replayed.root) == _live_files(tree, tree.root)
    tree.fold()
    root = tree.root.oid
    assert root is not None
    fresh = Trees(repo.store)  # no cache: everything read back from the store
    assert _canonical(fresh, root) == root
    stored = {p: (e.oid, e.mode, e.xattrs) for p, e in fresh.walk(root) if not e.is_dir()}
    assert stored == _live_files(tree, tree.root)


def _check_commit_tree(repo: Repository) -> None:
    """The head's tree is canonical and, as commits are, free of editor temp files."""
    root = repo.commit_info("HEAD").tree
    fresh = Trees(repo.store)
    assert _canonical(fresh, root) == root
    assert not [
        p for p, e in fresh.walk(root) if is_ephemeral(p.rsplit(b"/", 1)[-1]) and not e.is_dir()
    ]


# -- the rule -------------------------------------------------------------------------


def test_page_cuts_depend_on_the_names_alone() -> None:
    names = sorted(_names(5000))
    lengths = page_lengths(names)
    assert sum(lengths) == len(names)
    assert max(lengths) <= PAGE_MAX
    cut = 0
    for length in lengths[:-1]:
        cut += length
        assert length == PAGE_MAX or is_page_end(names[cut - 1])
    # a scan started at any cut gives the same pages after it
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    for i, start in enumerate(starts):
        assert page_lengths(names[start:]) == lengths[i:]


def test_a_run_of_names_without_a_natural_cut_is_cut_at_page_max() -> None:
    names = sorted(n for n in _names(3000, "x") if zlib.crc32(n) & 127)[: PAGE_MAX + 10]
    assert page_lengths(names) == [PAGE_MAX, 10]


# -- records ------------------------------------------------------------------------------


def test_a_big_directory_is_stored_as_pages_and_reads_back_whole() -> None:
    store = MemoryStore()
    entries = [TreeEntry(n, 0o100644, ObjectId(bytes(32)), 1) for n in _names(FLAT_MAX + 500)]
    objects: dict[ObjectId, bytes] = {}
    oid = Trees(store).build(entries, objects)
    store.write(objects)
    record = store.get(oid)
    assert kind_of(record) == KIND_PAGED
    pages = decode_paged(record)
    assert len(pages) > 3 and all(kind_of(store.get(p)) == KIND_TREE for p, _ in pages)
    tree = Trees(store).get(oid)
    assert list(tree.entries) == entries
    assert tree.pages == pages


def test_a_small_directory_stays_one_tree_record() -> None:
    store = MemoryStore()
    entries = [TreeEntry(n, 0o100644, ObjectId(bytes(32)), 1) for n in _names(FLAT_MAX)]
    objects: dict[ObjectId, bytes] = {}
    oid = Trees(store).build(entries, objects)
    assert kind_of(objects[oid]) == KIND_TREE


def test_pages_that_disagree_with_their_index_are_refused() -> None:
    store = MemoryStore()
    a = encode_tree([TreeEntry(b"a", 0o100644, ObjectId(bytes(32)))])
    b = encode_tree([TreeEntry(b"b", 0o100644, ObjectId(bytes(32)))])
    objects = {ObjectId(_id(a)): a, ObjectId(_id(b)): b}
    wrong_count = encode_paged([(_id(a), 2), (_id(b), 1)])
    out_of_order = encode_paged([(_id(b), 1), (_id(a), 1)])
    store.write({**objects, _id(wrong_count): wrong_count, _id(out_of_order): out_of_order})
    with pytest.raises(CorruptObject, match="entries listed"):
        Trees(store).get(_id(wrong_count))
    with pytest.raises(CorruptObject, match="out of order"):
        Trees(store).get(_id(out_of_order))
    with pytest.raises(CorruptObject, match="without pages"):
        decode_paged(encode_paged([]))


def _id(record: bytes) -> ObjectId:
    return object_id(record)


# -- the live tree ----------------------------------------------------------------------


def _big_dir(tree: Worktree, name: bytes, count: int) -> Node:
    directory = tree.mkdir(tree.root, name)
    for n in _names(count):
        tree.set_content(tree.create(directory, n), b"same")
    return directory


def test_a_fold_in_a_big_directory_writes_one_page() -> None:
    repo = Repository.create(MemoryStore())
    tree = repo.worktree()
    directory = _big_dir(tree, b"big", 20 * FLAT_MAX)
    tree.commit("fill")
    before = set(repo.store.ids())
    tree.set_content(tree.lookup(directory, b"f01234"), b"changed")
    tree.save()  # a journal: the content only
    assert set(repo.store.ids()) - before == {tree.lookup(directory, b"f01234").oid}
    tree.fold()
    new = {oid: repo.store.get(oid) for oid in set(repo.store.ids()) - before}
    kinds = sorted(kind_of(record) for record in new.values())
    # the content, one page, the page index, and the root
    assert kinds == sorted([b"B", KIND_TREE, KIND_PAGED, KIND_TREE])
    assert sum(len(record) for record in new.values()) < 40_000  # the listing is ~500 KB
    _check_canonical(repo, tree)


def test_random_changes_in_big_directories_keep_the_canonical_encoding() -> None:
    rng = random.Random(7)
    repo = Repository.create(MemoryStore())
    tree = repo.worktree()
    # no natural cut among the "x" names: runs cut at PAGE_MAX take part too
    plain = [n for n in _names(4000, "x") if zlib.crc32(n) & 127][: PAGE_MAX + 200]
    dirs = [_big_dir(tree, b"a", FLAT_MAX + 300), tree.mkdir(tree.root, b"b")]
    for n in plain:
        tree.set_content(tree.create(dirs[1], n), b"x")
    _check_canonical(repo, tree)
    pool = _names(FLAT_MAX + 600) + plain + [b".f00001.swp", b"4913", b"sub"]
    for step in range(400):
        directory = rng.choice(dirs)
        name = rng.choice(pool)
        children = tree.listdir(directory)
        present = {n for n, _ in children}
        op = rng.choice(["create", "unlink", "write", "rename", "chmod", "xattr", "mkdir", "deep"])
        subs = [child for _, child in children if child.is_dir()]
        if op == "deep" and subs:  # a change two levels below a page
            deeper = tree.lookup(rng.choice(subs), b"deeper")
            tree.set_content(tree.create(deeper, b"%d" % step), b"deep")
        elif op == "create" and name not in present:
            tree.set_content(tree.create(directory, name), b"new")
        elif op == "mkdir" and name not in present:
            sub = tree.mkdir(directory, name)
            tree.create(sub, b".inner.swp" if rng.random() < 0.5 else b"inner")
            tree.mkdir(sub, b"deeper")
        elif name in present:
            node = tree.lookup(directory, name)
            if op == "unlink" and not node.is_dir():
                tree.unlink(directory, name)
            elif op == "write" and node.is_file():
                tree.set_content(node, rng.randbytes(8))
            elif op == "rename":
                other = rng.choice(dirs)
                tree.rename(directory, name, other, rng.choice(pool))
            elif op == "chmod":
                tree.set_attrs(node, mode=0o600)
            elif op == "xattr":
                tree.set_xattr(node, b"user.k", b"v%d" % step)
        if step % 7 == 0:
            _check_canonical(repo, tree)
        if step % 50 == 0 and tree.commit(f"step {step}") is not None:
            _check_commit_tree(repo)
    _check_canonical(repo, tree)
    committed = tree.commit("end")
    assert committed is None or repo.commit_info(committed).tree is not None
    assert fsck(repo).problems == []


def test_shrinking_below_the_threshold_goes_back_to_one_record() -> None:
    repo = Repository.create(MemoryStore())
    tree = repo.worktree()
    directory = _big_dir(tree, b"big", FLAT_MAX + 5)
    tree.save()
    assert kind_of(repo.store.get(directory.oid)) == KIND_PAGED  # type: ignore[arg-type]
    for n in _names(10):
        tree.unlink(directory, n)
    _check_canonical(repo, tree)
    assert kind_of(repo.store.get(directory.oid)) == KIND_TREE  # type: ignore[arg-type]


def test_a_paged_directory_survives_reopen_gc_and_fsck(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "store") as repo:
        tree = repo.worktree()
        directory = _big_dir(tree, b"big", 3 * FLAT_MAX)
        tree.commit("fill")
        tree.unlink(directory, b"f00007")
        tree.set_content(tree.lookup(directory, b"f00100"), b"edited")
        tree.commit("edit")
        repo.gc(dry_run=False)
    with Repository.open(tmp_path / "store") as repo:
        assert fsck(repo).problems == []
        names = [e.name for e in repo.ls("HEAD", "big")]
        assert len(names) == 3 * FLAT_MAX - 1 and b"f00007" not in names
        assert repo.read("HEAD", "big/f00100") == b"edited"
        assert repo.read("HEAD~1", "big/f00007") == b"same"
        # the live tree loads the pages and keeps saving them one at a time
        tree = repo.worktree()
        tree.set_content(tree.create(tree.lookup(tree.root, b"big"), b"late"), b"x")
        _check_canonical(repo, tree)


def test_a_flat_big_tree_from_an_older_store_is_read_and_paged_on_its_next_save() -> None:
    repo = Repository.create(MemoryStore())
    content = pack_bytes(b"old")
    entries = [TreeEntry(n, 0o100644, content.oid, 3) for n in _names(FLAT_MAX + 50)]
    flat = encode_tree(entries)  # what HelixFS wrote before paged trees
    root = encode_tree([TreeEntry(b"old", MODE_DIR, _id(flat))])
    objects = {**content.objects, _id(flat): flat, _id(root): root}
    repo.write_commit("main", _id(root), [repo.resolve()], "an old store", {}, objects)
    assert [e.name for e in repo.ls("HEAD", "old")] == [e.name for e in entries]
    tree = repo.worktree()
    old = tree.lookup(tree.root, b"old")
    tree.unlink(old, b"f00003")
    _check_canonical(repo, tree)
    assert kind_of(repo.store.get(old.oid)) == KIND_PAGED  # type: ignore[arg-type]
    assert fsck(repo).problems == []


def test_commits_through_the_api_rewrite_only_the_pages_they_touch() -> None:
    rng = random.Random(3)
    repo = Repository.create(MemoryStore())
    files = {b"big/" + n: b"same" for n in _names(6 * FLAT_MAX)}
    repo.commit(files, "fill")
    pool = [b"big/" + n for n in _names(7 * FLAT_MAX)]
    for step in range(60):
        before = set(repo.store.ids())
        changes: dict[bytes, bytes | None] = {}
        for path in rng.sample(pool, rng.choice([1, 3, 40])):
            if path in files and rng.random() < 0.4:
                changes[path] = None
                del files[path]
            else:
                changes[path] = files[path] = b"v%d" % step
        repo.commit(changes, f"step {step}")
        _check_commit_tree(repo)
        assert {e.name for e in repo.ls("HEAD", "big")} == {p[4:] for p in files}
        if len(changes) == 1:  # content, a page, the index, the root tree, the commit
            assert len(set(repo.store.ids()) - before) <= 5
    assert fsck(repo).problems == []


def test_a_commit_after_reopen_leaves_temp_files_of_a_big_folder_out() -> None:
    store = MemoryStore()
    tree = Repository.create(store).worktree()
    directory = _big_dir(tree, b"big", FLAT_MAX + 100)
    for name in (b".f00001.swp", b"4913", b"f00002~"):
        tree.set_content(tree.create(directory, name), b"temp")
    tree.save()  # saved, not committed: the next process commits it from the store
    repo = Repository(store)
    assert repo.worktree().commit("after reopen") is not None
    _check_commit_tree(repo)
    names = {e.name for e in repo.ls("HEAD", "big")}
    assert len(names) == FLAT_MAX + 100 and not {b".f00001.swp", b"4913", b"f00002~"} & names
    assert fsck(repo).problems == []
