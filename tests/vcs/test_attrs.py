"""The hidden-attribute codec (ADR 0042): defaults cost nothing, values round-trip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId
from helixfs.vcs import attrs
from helixfs.vcs.objects import MODE_FILE, TreeEntry, decode_tree, encode_tree

OID = ObjectId(b"\x01" * 32)
ME = (1000, 1000)


def test_defaults_store_nothing() -> None:
    assert attrs.pack_owner(ME, ME) is None
    assert attrs.pack_time(5, 5) is None
    assert attrs.pack_rdev(0) is None
    assert attrs.pack_count(0) is None
    assert attrs.pack_link(None) is None
    assert attrs.owner_of(None, ME) == ME
    assert attrs.time_of(None, 7) == 7
    assert attrs.rdev_of(None) == 0
    assert attrs.count_of(None) == 0
    assert attrs.link_of(None) is None


def test_values_round_trip() -> None:
    assert attrs.owner_of(attrs.pack_owner((123, 456), ME), ME) == (123, 456)
    assert attrs.time_of(attrs.pack_time(-3, 5), 5) == -3
    rdev = os.makedev(8, 1)
    assert attrs.rdev_of(attrs.pack_rdev(rdev)) == rdev
    assert attrs.count_of(attrs.pack_count(9)) == 9
    assert attrs.link_of(attrs.pack_link((0, 2))) == (0, 2)


def test_a_value_of_the_wrong_length_is_corrupt() -> None:
    with pytest.raises(CorruptObject):
        attrs.owner_of(b"\x01\x02", ME)


def test_hidden_keys_sort_first_and_are_filtered() -> None:
    xattrs = attrs.with_key(((b"user.a", b"1"),), attrs.OWNER, attrs.pack_owner((1, 2), ME))
    xattrs = attrs.with_subdirs(xattrs, 3)
    assert [key for key, _ in xattrs] == [attrs.SUBDIRS, attrs.OWNER, b"user.a"]
    assert attrs.user_xattrs(xattrs) == ((b"user.a", b"1"),)
    assert attrs.user_names(dict(xattrs)) == [b"user.a"]
    assert attrs.entry_owner(xattrs, ME) == (1, 2)
    assert attrs.subdirs_of(xattrs) == 3
    assert attrs.subdirs_of(attrs.with_subdirs(xattrs, 0)) == 0
    assert attrs.lookup(xattrs, attrs.ATIME) is None


def test_an_entry_with_defaults_encodes_as_before() -> None:
    plain = TreeEntry(b"f", MODE_FILE, OID, 3, 10, ((b"user.x", b"y"),))
    defaults = attrs.with_keys(
        plain.xattrs,
        {
            attrs.OWNER: attrs.pack_owner(ME, ME),
            attrs.ATIME: attrs.pack_time(10, 10),
            attrs.CTIME: attrs.pack_time(10, 10),
        },
    )
    assert encode_tree([plain._replace(xattrs=defaults)]) == encode_tree([plain])


def test_hidden_keys_survive_a_tree_round_trip() -> None:
    xattrs = attrs.with_keys(
        (), {attrs.OWNER: attrs.pack_owner((0, 5), ME), attrs.CTIME: attrs.pack_time(20, 10)}
    )
    entry = TreeEntry(b"f", MODE_FILE, OID, 3, 10, xattrs)
    (back,) = decode_tree(encode_tree([entry])).entries
    assert back == entry
    assert attrs.time_of(attrs.lookup(back.xattrs, attrs.CTIME), back.mtime_ns) == 20


def test_api_commits_keep_a_folders_subfolder_count(tmp_path: Path) -> None:
    from helixfs.vcs.repo import Repository

    with Repository.init(tmp_path / "store") as repo:
        repo.commit({"a/b/f": b"1", "a/c/g": b"2", "a/h": b"3"}, "two subfolders")
        entry = repo.entry("HEAD", "a")
        assert entry is not None and attrs.subdirs_of(entry.xattrs) == 2
        repo.commit({"a/h": b"4"}, "a file only")
        entry = repo.entry("HEAD", "a")
        assert entry is not None and attrs.subdirs_of(entry.xattrs) == 2
        repo.commit({"a/d/i": b"5", "a/e/j": b"6"}, "two new")
        entry = repo.entry("HEAD", "a")
        assert entry is not None and attrs.subdirs_of(entry.xattrs) == 4
        repo.commit({"a/b": None}, "one gone")
        entry = repo.entry("HEAD", "a")
        assert entry is not None and attrs.subdirs_of(entry.xattrs) == 3


def test_a_whole_folder_entry_put_in_a_folder_is_counted(tmp_path: Path) -> None:
    # Trees.apply takes whole entries as well as contents: a folder's entry put at a new
    # name, or over a file, changes the count of the folder holding it (no caller of
    # today puts one: link groups put files' entries)
    from helixfs.vcs.repo import Repository

    with Repository.init(tmp_path / "store") as repo:
        repo.commit({"a/x": b"1", "a/y": b"2", "d/f": b"3"}, "one")
        head = repo.commit_info(repo.resolve("HEAD")).tree
        folder = repo.trees.entry(head, "d")
        assert folder is not None
        for changes, count in (
            ({b"a/d2": folder}, 1),
            ({b"a/x": folder}, 1),
            ({b"a/d2": folder, b"a/x": folder}, 2),
        ):
            root = repo.trees.apply(head, changes, {})
            entry = repo.trees.entry(root, "a")
            assert entry is not None and attrs.subdirs_of(entry.xattrs) == count
        moved = repo.trees.apply(head, {b"a/d2": folder}, {})
        inside = repo.trees.entry(moved, "a/d2")
        assert inside is not None
        back = repo.trees.apply(moved, {b"a/d2": repo.trees.entry(head, "a/x")}, {})
        entry = repo.trees.entry(back, "a")  # the folder entry replaced by a file's
        assert entry is not None and attrs.subdirs_of(entry.xattrs) == 0
