"""Hard links in the live tree and in stored trees (ADR 0043)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helixfs.errors import IsADirectory, MergeConflict, NotPermitted, TooManyLinks
from helixfs.vcs import Repository, Worktree, attrs, history, transfer
from helixfs.vcs import links as links_module
from helixfs.vcs.links import link_of
from helixfs.vcs.node import Node


def _write(tree: Worktree, path: bytes, data: bytes) -> Node:
    *dirs, name = path.split(b"/")
    folder = tree.root
    for part in dirs:
        try:
            folder = tree.lookup(folder, part)
        except Exception:
            folder = tree.mkdir(folder, part)
    node = tree.create(folder, name)
    tree.set_content(node, data)
    return node


def _at(tree: Worktree, path: bytes) -> Node:
    node = tree.root
    for part in path.split(b"/"):
        node = tree.lookup(node, part)
    return node


def _folder(tree: Worktree, path: bytes) -> Node:
    return _at(tree, path) if path else tree.root


def _link(tree: Worktree, source: bytes, target: bytes) -> Node:
    folder, _, name = target.rpartition(b"/")
    return tree.link(_at(tree, source), _folder(tree, folder), name)


def _read(tree: Worktree, path: bytes) -> bytes:
    node = _at(tree, path)
    return tree.read(node, 0, node.size)


def _linked_and_branched(repo: Repository) -> tuple[Worktree, Worktree]:
    """`a` and its link `b` committed on main, and a branch `other` made from there."""
    tree = repo.worktree("main")
    _write(tree, b"a", b"base\n")
    _link(tree, b"a", b"b")
    tree.commit("link")
    repo.create_branch("other")
    return tree, repo.worktree("other")


def _edit(tree: Worktree, path: bytes, data: bytes) -> None:
    tree.set_content(_at(tree, path), data)
    tree.commit(f"edit {path!r}")


def _stored(repo: Repository, path: bytes, rev: str = "HEAD") -> tuple[int, int] | None:
    entry = repo.trees.entry(repo.commit_info(rev).tree, path)
    assert entry is not None
    return link_of(entry.xattrs)


def test_two_names_are_one_node(repo: Repository) -> None:
    tree = repo.worktree("main")
    a = _write(tree, b"a", b"one")
    tree.mkdir(tree.root, b"d")
    b = _link(tree, b"a", b"d/b")
    assert a is b and a.group is not None and a.group.count == 2
    tree.set_content(b, b"two")  # through one name, seen through the other at once
    assert _read(tree, b"a") == b"two"
    tree.commit("link")
    first, second = _stored(repo, b"a"), _stored(repo, b"d/b")
    assert first is not None and first == second and first[1] == 2
    for path in (b"a", b"d/b"):  # each name is a whole entry: readers ignoring links see it
        assert repo.read("HEAD", path) == b"two"


def test_links_survive_a_reopen_and_join_when_loaded(tmp_path: Path) -> None:
    repo = Repository.init(tmp_path / "store")
    tree = repo.worktree("main")
    _write(tree, b"x/a", b"data")
    tree.mkdir(tree.root, b"y")
    _link(tree, b"x/a", b"y/b")
    tree.commit("link")
    repo.close()
    repo = Repository.open(tmp_path / "store")
    tree = repo.worktree("main")
    a = _at(tree, b"x/a")
    assert a.group is not None and a.group.count == 2  # counted before y/ is loaded
    tree.set_content(a, b"changed")
    assert _at(tree, b"y/b") is a
    tree.commit("edit")
    assert repo.read("HEAD", b"y/b") == b"changed"  # the other name's entry too
    repo.close()


def test_unlinking_one_name_keeps_the_others(repo: Repository) -> None:
    tree = repo.worktree("main")
    _write(tree, b"a", b"kept")
    _link(tree, b"a", b"b")
    _link(tree, b"a", b"c")
    tree.unlink(tree.root, b"a")
    b = _at(tree, b"b")
    assert b.group is not None and b.group.count == 2 and _read(tree, b"c") == b"kept"
    tree.unlink(tree.root, b"b")
    c = _at(tree, b"c")
    assert c.group is None and c.parent is tree.root and c.name == b"c"
    tree.commit("down to one")
    assert _stored(repo, b"c") is None  # a plain file again


def test_a_rename_keeps_the_link(repo: Repository) -> None:
    tree = repo.worktree("main")
    a = _write(tree, b"a", b"1")
    _link(tree, b"a", b"b")
    tree.mkdir(tree.root, b"sub")
    tree.rename(tree.root, b"b", _at(tree, b"sub"), b"moved")
    assert _at(tree, b"sub/moved") is a and a.group is not None and a.group.count == 2
    with pytest.raises(IsADirectory):  # onto a folder: refused, the link kept
        tree.rename(tree.root, b"a", tree.root, b"sub")
    tree.commit("moved")
    assert _stored(repo, b"a") == _stored(repo, b"sub/moved")


def test_rename_onto_another_name_of_the_same_file_does_nothing(repo: Repository) -> None:
    tree = repo.worktree("main")
    _write(tree, b"a", b"1")
    _link(tree, b"a", b"b")
    assert tree.rename(tree.root, b"a", tree.root, b"b") is None
    assert _at(tree, b"a") is _at(tree, b"b")


def test_folders_are_not_linked_and_the_count_is_bounded(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = repo.worktree("main")
    folder = tree.mkdir(tree.root, b"d")
    with pytest.raises(NotPermitted):
        tree.link(folder, tree.root, b"e")
    monkeypatch.setattr(links_module, "LINK_MAX", 3)
    monkeypatch.setattr("helixfs.vcs.worktree.LINK_MAX", 3)
    _write(tree, b"a", b"1")
    _link(tree, b"a", b"b")
    _link(tree, b"a", b"c")
    with pytest.raises(TooManyLinks):
        _link(tree, b"a", b"e")


def test_a_branch_has_the_same_links_independent_of_the_original(repo: Repository) -> None:
    tree, other = _linked_and_branched(repo)
    assert _at(other, b"a") is _at(other, b"b")
    _edit(other, b"b", b"theirs")
    assert _read(tree, b"a") == b"base\n" and _read(other, b"a") == b"theirs"
    tree.set_content(_at(tree, b"a"), b"ours")
    assert _read(other, b"b") == b"theirs"


def test_a_snapshot_keeps_the_links(repo: Repository) -> None:
    _linked_and_branched(repo)
    repo.create_snapshot("snap")
    view = repo.snapshot_view("snap")
    assert _at(view, b"b") is _at(view, b"a")


def test_reset_brings_the_links_back(repo: Repository) -> None:
    tree = repo.worktree("main")
    _write(tree, b"a", b"1")
    _link(tree, b"a", b"b")
    linked = tree.commit("link")
    assert linked is not None
    tree.unlink(tree.root, b"b")
    tree.commit("unlink")
    repo.reset_hard(linked.hex())
    tree = repo.worktree("main")
    a = _at(tree, b"a")
    assert a is _at(tree, b"b") and a.group is not None and a.group.count == 2


def test_a_saved_link_is_replayed_after_a_crash(tmp_path: Path) -> None:
    """save() is what a close does: the journal holds every name, and a reopen joins
    them (kill -9 after the close loses nothing)."""
    repo = Repository.init(tmp_path / "store")
    tree = repo.worktree("main")
    _write(tree, b"p/a", b"v1")
    tree.commit("base")
    tree.mkdir(tree.root, b"q")
    _link(tree, b"p/a", b"q/b")
    tree.set_content(_at(tree, b"q/b"), b"v2")
    tree.save(sync=True)
    repo.store.close()  # no fold, no commit: as if killed
    repo = Repository.open(tmp_path / "store")
    tree = repo.worktree("main")
    b = _at(tree, b"q/b")
    assert b is _at(tree, b"p/a") and _read(tree, b"p/a") == b"v2"
    assert b.group is not None and b.group.count == 2
    repo.close()


def test_a_conflict_in_a_linked_file_is_reported_once(repo: Repository) -> None:
    tree, other = _linked_and_branched(repo)
    _edit(other, b"a", b"theirs\n")
    _edit(tree, b"a", b"ours\n")
    result = repo.merge("other", allow_conflicts=True)
    assert result.conflicts == [b"a"]
    tree = repo.worktree("main")
    assert _at(tree, b"a") is _at(tree, b"b")
    assert _read(tree, b"b") == _read(tree, b"a")


def test_a_new_link_shows_as_an_added_path(repo: Repository) -> None:
    tree = repo.worktree("main")
    _write(tree, b"a", b"1")
    tree.commit("base")
    _link(tree, b"a", b"b")
    tree.commit("link")
    changes = repo.diff("HEAD~1", "HEAD")
    assert [(c.status, c.path) for c in changes] == [("A", b"b")]
    assert repo.commit_info("HEAD").meta["changed"] == ["b"]


def _names_of(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file's (inode, link count), by path inside `folder`."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_dir():
            st = path.lstat()
            found[str(path.relative_to(folder))] = (st.st_ino, st.st_nlink)
    return found


def test_import_keeps_the_links_inside_the_folder_and_export_writes_them(
    disk_repo: Repository, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    (source / "store").mkdir(parents=True)
    (source / "pkg").mkdir()
    (source / "store" / "blob").write_text("shared\n")
    os.link(source / "store" / "blob", source / "pkg" / "blob")
    os.link(source / "store" / "blob", source / "alias")
    (tmp_path / "outside").write_text("other\n")
    os.link(tmp_path / "outside", source / "half")  # its other name is not imported
    first = transfer.import_dir(disk_repo, source)
    assert transfer.import_dir(disk_repo, source).changed is False  # the same ids again
    assert _stored(disk_repo, b"alias") == _stored(disk_repo, b"pkg/blob")
    assert _stored(disk_repo, b"store/blob") is not None
    assert _stored(disk_repo, b"half") is None
    tree = disk_repo.worktree("main")
    assert _at(tree, b"alias") is _at(tree, b"store/blob")
    transfer.export(disk_repo, first.commit, tmp_path / "out")
    names = _names_of(tmp_path / "out")
    assert names["alias"] == names["pkg/blob"] == names["store/blob"]
    assert names["alias"][1] == 3 and names["half"][1] == 1
    assert (tmp_path / "out" / "pkg" / "blob").read_text() == "shared\n"


@pytest.mark.parametrize("linker", ["main", "other"])
def test_a_link_made_on_one_side_keeps_the_edit_of_the_other_under_every_name(
    repo: Repository, linker: str
) -> None:
    """Merged name by name, `a` would hold the edit and its new link `b` the old file:
    the edit reaches every name and the link is kept, as on a disk (either side)."""
    tree = repo.worktree("main")
    _write(tree, b"a", b"base\n")
    tree.commit("base")
    repo.create_branch("other")
    editor = "other" if linker == "main" else "main"
    _edit(repo.worktree(editor), b"a", b"theirs\n")
    linking = repo.worktree(linker)
    _link(linking, b"a", b"b")
    linking.commit("link")
    assert repo.merge("other").status == "merged"
    assert repo.read("HEAD", b"a") == repo.read("HEAD", b"b") == b"theirs\n"
    assert _stored(repo, b"a") == _stored(repo, b"b") is not None
    tree = repo.worktree("main")
    assert _at(tree, b"a") is _at(tree, b"b") and tree.lookup(tree.root, b"a").group is not None


def test_two_edits_under_two_names_of_a_link_are_one_conflict(repo: Repository) -> None:
    """A name added to a link on one side; on the other, two of its names written apart
    (a commit of paths splits them): one file cannot hold both edits, so the group is
    a conflict, reported once."""
    tree, _ = _linked_and_branched(repo)
    _link(tree, b"a", b"c")
    tree.commit("link")
    repo.commit({"a": b"one\n", "b": b"two\n"}, "apart", branch="other")
    with pytest.raises(MergeConflict) as raised:
        repo.merge("other")
    assert raised.value.conflicts == [b"a"]
    assert "hard-linked" in raised.value.reasons[b"a"]


def test_links_merge_whole_when_one_side_edits_them(repo: Repository) -> None:
    tree, other = _linked_and_branched(repo)
    _edit(other, b"b", b"theirs\n")
    _write(tree, b"c", b"unrelated\n")
    tree.commit("ours")
    repo.merge("other")
    tree = repo.worktree("main")
    assert _at(tree, b"a") is _at(tree, b"b") and _read(tree, b"a") == b"theirs\n"


def test_a_commit_of_one_name_splits_it_from_the_others(repo: Repository) -> None:
    """`helix commit a=FILE` writes the path, not the file: the other names keep theirs."""
    tree = repo.worktree("main")
    _write(tree, b"a", b"1")
    _link(tree, b"a", b"b")
    _link(tree, b"a", b"c")
    tree.commit("links")
    repo.commit({b"a": b"new"}, "write a")
    assert _stored(repo, b"a") is None
    kept = _stored(repo, b"b")
    assert kept is not None and kept == _stored(repo, b"c") and kept[1] == 2
    assert repo.read("HEAD", b"b") == b"1"
    repo.commit({b"c": None}, "remove c")
    assert _stored(repo, b"b") is None  # down to one name


def test_a_link_in_a_paged_folder_is_written_under_every_name(repo: Repository) -> None:
    tree = repo.worktree("main")
    big = tree.mkdir(tree.root, b"big")
    for i in range(600):  # past FLAT_MAX: the folder is stored as pages
        tree.create(big, b"f%04d" % i)
    tree.commit("many")
    tree.mkdir(tree.root, b"other")
    _link(tree, b"big/f0300", b"other/x")
    tree.set_content(_at(tree, b"other/x"), b"through other")
    tree.commit("edit")
    assert repo.read("HEAD", b"big/f0300") == b"through other"
    assert _stored(repo, b"big/f0300") == _stored(repo, b"other/x")


def test_a_name_added_on_one_side_and_one_removed_on_the_other_merge_cleanly(
    repo: Repository,
) -> None:
    """The count each name carries differs on the two sides: no conflict for it, and the
    merged group counts its names again."""
    tree, other = _linked_and_branched(repo)
    other.unlink(other.root, b"b")
    other.commit("unlink b")
    _link(tree, b"a", b"c")
    tree.commit("link c")
    assert repo.merge("other").status == "merged"
    assert [e.name for e in repo.ls("HEAD")] == [b"a", b"c"]
    found = _stored(repo, b"a")
    assert found is not None and found[1] == 2 and _stored(repo, b"c") == found
    tree = repo.worktree("main")
    assert _at(tree, b"a") is _at(tree, b"c")


def _relinked(tree: Worktree, source: bytes, name: bytes) -> None:
    """`rm NAME; ln SOURCE NAME`, committed."""
    tree.unlink(tree.root, name)
    _link(tree, source, name)
    tree.commit(f"relink {name!r}")


def _same_bytes(repo: Repository) -> Worktree:
    tree = repo.worktree("main")
    for name in (b"a", b"b", b"c"):
        _write(tree, name, b"same\n")
    tree.commit("base")
    return tree


def test_a_name_moved_to_another_file_with_its_bytes_is_a_change(repo: Repository) -> None:
    """`rm b; ln a b` leaves every entry's content as it was: the link is the change,
    of both names (each now shares the other's file). A new name (`ln a d`) is still
    only an added path, and a name removed from a link only a deleted one."""
    tree = _same_bytes(repo)
    _relinked(tree, b"a", b"b")
    changes = repo.diff("HEAD~1", "HEAD")
    assert [(c.status, c.path) for c in changes] == [("M", b"a"), ("M", b"b")]
    assert attrs.metadata_changes(changes[1].old, changes[1].new) == ["link"]  # type: ignore[arg-type]
    assert repo.diff_text("HEAD~1", "HEAD").count("new hard link\n") == 2
    _link(tree, b"a", b"d")
    tree.commit("link d")
    assert [(c.status, c.path) for c in repo.diff("HEAD~1", "HEAD")] == [("A", b"d")]
    _relinked(tree, b"c", b"b")  # b from {a, b, d} to c's file
    assert [(c.status, c.path) for c in repo.diff("HEAD~1", "HEAD")] == [
        ("M", b"b"),
        ("M", b"c"),
    ]
    tree.unlink(tree.root, b"b")
    tree.commit("rm b")  # c is alone again: the removed name is the change
    assert [(c.status, c.path) for c in repo.diff("HEAD~1", "HEAD")] == [("D", b"b")]


def test_log_of_a_path_lists_the_commits_that_moved_it_to_another_file(
    repo: Repository,
) -> None:
    """`helix log PATH` counts a re-link as the diff does: `rm b; ln a b` changed a and
    b; `ln a d` changed only d; c, left alone when b went, changed by no commit."""
    tree = _same_bytes(repo)
    _relinked(tree, b"a", b"b")
    _link(tree, b"a", b"d")
    tree.commit("link d")
    _relinked(tree, b"c", b"b")
    tree.unlink(tree.root, b"b")
    tree.commit("rm b")

    def logged(path: bytes) -> list[str]:
        return [c.message for c in history.touching(repo, repo.resolve("HEAD"), path)]

    assert logged(b"a") == ["relink b'b'", "base"]
    assert logged(b"b") == ["rm b", "relink b'b'", "relink b'b'", "base"]
    assert logged(b"c") == ["relink b'b'", "base"]
    assert logged(b"d") == ["link d"]


@pytest.mark.parametrize("relinker", ["main", "other"])
def test_a_name_moved_to_another_file_on_one_side_is_kept_by_a_merge(
    repo: Repository, relinker: str
) -> None:
    """The link one side made is kept whichever side it is, and an edit of the file on
    the other side reaches both of its names."""
    _same_bytes(repo)
    repo.create_branch("other")
    _relinked(repo.worktree(relinker), b"a", b"b")
    _edit(repo.worktree("other" if relinker == "main" else "main"), b"a", b"edited\n")
    assert repo.merge("other").status == "merged"
    assert _stored(repo, b"a") == _stored(repo, b"b") is not None
    assert repo.read("HEAD", b"b") == b"edited\n" and repo.read("HEAD", b"c") == b"same\n"
    tree = repo.worktree("main")
    assert _at(tree, b"a") is _at(tree, b"b")


def test_a_name_moved_to_two_files_apart_is_one_conflict(repo: Repository) -> None:
    """`c` linked to `a` on one side and to `b` on the other: one name cannot be both
    files' name, so it is a conflict (ours kept), reported once."""
    _same_bytes(repo)
    repo.create_branch("other")
    _relinked(repo.worktree("main"), b"a", b"c")
    _relinked(repo.worktree("other"), b"b", b"c")
    result = repo.merge("other", allow_conflicts=True)
    assert result.conflicts == [b"c"]
    assert "hard-linked" in result.reasons[b"c"]
    assert _stored(repo, b"a") == _stored(repo, b"c") is not None
    assert _stored(repo, b"b") is None  # its group's other name is ours' c


def test_the_same_link_made_on_both_sides_merges_cleanly(repo: Repository) -> None:
    """`ln a b` on both sides makes two ids for one group of names: no conflict."""
    tree = repo.worktree("main")
    _write(tree, b"a", b"base\n")
    tree.commit("base")
    repo.create_branch("other")
    for side in ("main", "other"):
        _link(repo.worktree(side), b"a", b"b")
        repo.worktree(side).commit("link")
    assert repo.merge("other").status == "merged"
    assert _stored(repo, b"a") == _stored(repo, b"b") is not None
