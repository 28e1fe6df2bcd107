"""Three-way merges: clean ones commit with two parents, conflicts are never silent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helixfs.errors import MergeConflict, NotFound
from helixfs.ids import CommitId, ObjectId, object_id
from helixfs.vcs import Repository
from helixfs.vcs.ancestry import merge_base, merge_bases
from helixfs.vcs.merge import merge_lines
from helixfs.vcs.objects import Commit, encode_commit

BASE = b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


def _fork(repo: Repository, files: dict[str, bytes]) -> None:
    repo.commit(files, "base")
    repo.create_branch("feat")


def test_merge_lines_clean_when_edits_do_not_touch() -> None:
    ours = BASE.replace(b"two", b"TWO")
    theirs = BASE.replace(b"six", b"SIX")
    merged, clean = merge_lines(BASE, ours, theirs)
    assert clean and merged == BASE.replace(b"two", b"TWO").replace(b"six", b"SIX")


def test_merge_lines_same_edit_on_both_sides_is_clean() -> None:
    edited = BASE.replace(b"four", b"FOUR")
    assert merge_lines(BASE, edited, edited) == (edited, True)


def test_merge_lines_conflict_gets_markers() -> None:
    merged, clean = merge_lines(
        BASE, BASE.replace(b"four", b"ours"), BASE.replace(b"four", b"theirs"), ("main", "feat")
    )
    assert not clean
    assert b"<<<<<<< main\nours\n=======\ntheirs\n>>>>>>> feat\n" in merged
    assert merged.startswith(b"one\ntwo\nthree\n") and merged.endswith(b"five\nsix\nseven\n")


def test_merge_lines_without_final_newline() -> None:
    merged, clean = merge_lines(b"a", b"b", b"c")
    assert not clean and merged == b"<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\n"


def test_fast_forward(repo: Repository) -> None:
    _fork(repo, {"a": b"1"})
    tip = repo.commit({"b": b"2"}, "feat", branch="feat")
    result = repo.merge("feat")
    assert (result.status, result.commit) == ("fast-forward", tip)
    assert repo.resolve("HEAD") == tip
    assert repo.merge("feat").status == "up-to-date"


def test_clean_three_way_merge(repo: Repository) -> None:
    _fork(repo, {"text.txt": BASE, "dir/x": b"x", "gone": b"g"})
    repo.commit(
        {"text.txt": BASE.replace(b"six", b"SIX"), "dir/new": b"n", "gone": None},
        "feat",
        branch="feat",
    )
    ours = repo.commit({"text.txt": BASE.replace(b"two", b"TWO"), "other": b"o"}, "main")
    result = repo.merge("feat")
    assert result.status == "merged" and result.conflicts == []
    merged = repo.commit_info("HEAD")
    assert merged.parents == (ours, repo.resolve("feat"))
    assert repo.read("HEAD", "text.txt") == BASE.replace(b"two", b"TWO").replace(b"six", b"SIX")
    assert {e.name for e in repo.ls()} == {b"text.txt", b"dir", b"other"}
    assert {e.name for e in repo.ls("HEAD", "dir")} == {b"x", b"new"}


def test_conflict_raises_with_marked_files_and_changes_nothing(repo: Repository) -> None:
    _fork(repo, {"text.txt": BASE, "bin": b"\0a"})
    repo.commit({"text.txt": BASE.replace(b"four", b"feat"), "bin": b"\0b"}, "feat", branch="feat")
    head = repo.commit({"text.txt": BASE.replace(b"four", b"main"), "bin": b"\0c"}, "main")
    with pytest.raises(MergeConflict) as caught:
        repo.merge("feat")
    assert sorted(caught.value.conflicts) == [b"bin", b"text.txt"]  # type: ignore[attr-defined]
    marked = caught.value.files[b"text.txt"]  # type: ignore[attr-defined]
    assert b"<<<<<<< main\nmain\n=======\nfeat\n>>>>>>> feat\n" in marked
    assert repo.resolve("HEAD") == head


def test_conflicts_committed_only_when_allowed_and_listed(repo: Repository) -> None:
    _fork(repo, {"text.txt": BASE})
    repo.commit({"text.txt": BASE.replace(b"four", b"feat")}, "feat", branch="feat")
    repo.commit({"text.txt": BASE.replace(b"four", b"main")}, "main")
    result = repo.merge("feat", allow_conflicts=True)
    assert result.status == "conflicts" and result.conflicts == [b"text.txt"]
    info = repo.commit_info("HEAD")
    assert info.meta["conflicts"] == ["text.txt"] and len(info.parents) == 2
    assert b"<<<<<<< main" in repo.read("HEAD", "text.txt")


def test_modify_delete_is_a_conflict(repo: Repository) -> None:
    _fork(repo, {"f": b"1"})
    repo.commit({"f": None, "g": b"keep"}, "feat deletes", branch="feat")
    repo.commit({"f": b"2"}, "main edits")
    with pytest.raises(MergeConflict):
        repo.merge("feat")


def test_a_deleted_folder_merges_file_by_file(repo: Repository) -> None:
    """A folder deleted on one side and added to on the other was one conflict on the
    folder, and --allow-conflicts brought back the deleted files the other side never
    touched. As in git: the other side's new file stays, the rest is deleted."""
    _fork(repo, {"d/x": b"x", "d/z": b"z", "keep": b"k"})
    repo.commit({"d/y": b"added on feat"}, "feat adds", branch="feat")
    repo.commit({"d": None}, "main deletes the folder")
    result = repo.merge("feat")
    assert result.status == "merged" and result.conflicts == []
    assert [e.name for e in repo.ls("HEAD", "d")] == [b"y"]
    repo.commit({"gone/a": b"1"}, "again")
    repo.create_branch("feat2")
    repo.commit({"gone/a": b"edited on feat2"}, "feat2 edits", branch="feat2")
    repo.commit({"gone": None}, "main deletes it")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat2")
    assert err.value.conflicts == [b"gone/a"]  # type: ignore[attr-defined]


def _at(repo: Repository, files: dict[str, bytes], parents: list[CommitId], day: int) -> CommitId:
    """A commit of `files` (changes on the scratch branch) made at a chosen time."""
    tree = repo.commit_info(repo.commit(dict(files), "tree", branch="scratch")).tree
    record = encode_commit(Commit(tree, tuple(parents), day * 86_400 * 10**9, "t", "m", {}))
    cid = CommitId(object_id(record))
    repo.store.write({ObjectId(cid): record}, [])
    return cid


def test_merge_base_follows_ancestry_when_times_go_backwards(repo: Repository) -> None:
    """QA #1 (git's g6): Y is X's child but older; main reverts Y, side merged Y.

    The best base is Y, so the revert on main stands; a newest-first walk took X and
    brought Y's line back.
    """
    repo.create_branch("scratch")
    x = _at(repo, {"f": b"1\n2\n3\n", "g": b"g\n"}, [], day=150)
    y = _at(repo, {"f": b"1\nY\n3\n"}, [x], day=1)
    s = _at(repo, {"f": b"1\n2\n3\n", "g": b"g2\n"}, [x], day=30)
    m = _at(repo, {"f": b"1\nY\n3\n"}, [s, y], day=60)
    z = _at(repo, {"f": b"1\n2\n3\n", "g": b"g\n"}, [y], day=90)
    repo.move_refs({"branches/main": z, "branches/side": m})
    assert merge_bases(repo, z, m) == [y] and merge_base(repo, m, z) == y
    result = repo.merge("side")
    assert result.status == "merged"
    assert repo.read("HEAD", "f") == b"1\n2\n3\n" and repo.read("HEAD", "g") == b"g2\n"


def test_up_to_date_and_fast_forward_by_ancestry(repo: Repository) -> None:
    repo.create_branch("scratch")
    x = _at(repo, {"f": b"x"}, [], day=100)
    y = _at(repo, {"f": b"y"}, [x], day=1)  # a child older than its parent
    repo.move_refs({"branches/main": y, "branches/old": x, "branches/new": y})
    assert repo.merge("old").status == "up-to-date"
    assert repo.resolve("main") == y
    repo.move_refs({"branches/main": x})
    assert (repo.merge("new").status, repo.resolve("main")) == ("fast-forward", y)


def test_criss_cross_has_two_best_bases_and_unrelated_none(repo: Repository) -> None:
    repo.create_branch("scratch")
    root = _at(repo, {"f": b"0"}, [], day=1)
    a = _at(repo, {"a": b"a"}, [root], day=2)
    b = _at(repo, {"b": b"b"}, [root], day=3)
    ab = _at(repo, {"ab": b"1"}, [a, b], day=4)
    ba = _at(repo, {"ba": b"1"}, [b, a], day=5)
    assert sorted(merge_bases(repo, ab, ba)) == sorted([a, b])
    assert merge_base(repo, ab, ba) == b  # the newer of the two
    other = _at(repo, {"o": b"o"}, [], day=6)
    assert merge_bases(repo, ab, other) == [] and merge_base(repo, ab, other) is None


def _criss_cross(
    repo: Repository,
    base: dict[str, bytes],
    a1: dict[str, bytes],
    b1: dict[str, bytes],
    fix_a: dict[str, bytes] | None = None,
    fix_b: dict[str, bytes] | None = None,
) -> None:
    """QA's history: A and B fork from main (A1, B1), then each merges the other's
    first commit (committing `fix_*` on top, to resolve a conflict): A1 and B1 are
    then both best bases of A and B."""
    repo.commit(dict(base), "base")
    repo.create_branch("A")
    repo.create_branch("B")
    for name, changes in (("A", a1), ("B", b1)):
        repo.commit(dict(changes), f"{name}1", branch=name)
        repo.create_branch(f"{name}1", name)
    for into, other, fix in (("A", "B1", fix_a), ("B", "A1", fix_b)):
        repo.merge(other, into=into, allow_conflicts=True)
        if fix:
            repo.commit(dict(fix), "resolve", branch=into)
    assert sorted(merge_bases(repo, repo.resolve("A"), repo.resolve("B"))) == sorted(
        [repo.resolve("A1"), repo.resolve("B1")]
    )


def test_criss_cross_keeps_a_revert_on_one_side(repo: Repository) -> None:
    """QA: B reverts A1's x after the cross merges; taking one base (the newest, B1,
    which never changed x) saw "only ours changed x" and silently kept A1's 2."""
    _criss_cross(repo, {"x": b"1\n"}, {"x": b"2\n"}, {"y": b"y\n"})
    repo.commit({"x": b"1\n"}, "revert", branch="B")
    repo.commit({"z": b"z\n"}, "A2", branch="A")
    result = repo.merge("B", into="A")
    assert result.status == "merged" and result.conflicts == []
    assert repo.read("A", "x") == b"1\n"  # what git's recursive merge gives
    assert [repo.read("A", p) for p in ("y", "z")] == [b"y\n", b"z\n"]


def test_criss_cross_bases_conflict_resolved_alike_merges_clean(repo: Repository) -> None:
    """The bases conflict on line 2 (markers in the virtual base); both sides fixed it
    the same way, so it is clean, and a later edit on one side comes through."""
    both = BASE.replace(b"two", b"AB")
    _criss_cross(
        repo,
        {"f": BASE},
        {"f": BASE.replace(b"two", b"A")},
        {"f": BASE.replace(b"two", b"B")},
        fix_a={"f": both},
        fix_b={"f": both},
    )
    repo.commit({"f": both.replace(b"six", b"SIX")}, "A2", branch="A")
    result = repo.merge("B", into="A")
    assert result.status == "merged" and result.conflicts == []
    assert repo.read("A", "f") == both.replace(b"six", b"SIX")


def test_criss_cross_bases_conflict_resolved_apart_is_reported(repo: Repository) -> None:
    """Each side settled the bases' conflict its own way: a real conflict, with markers.
    One base alone (B1) equals theirs there, which silently kept ours."""
    _criss_cross(
        repo,
        {"f": BASE},
        {"f": BASE.replace(b"two", b"A")},
        {"f": BASE.replace(b"two", b"B")},
        fix_a={"f": BASE.replace(b"two", b"A")},
        fix_b={"f": BASE.replace(b"two", b"B")},
    )
    head = repo.resolve("A")
    with pytest.raises(MergeConflict) as caught:
        repo.merge("B", into="A")
    assert caught.value.conflicts == [b"f"]  # type: ignore[attr-defined]
    marked = caught.value.files[b"f"]  # type: ignore[attr-defined]
    assert marked == BASE.replace(b"two\n", b"<<<<<<< A\nA\n=======\nB\n>>>>>>> B\n")
    assert repo.resolve("A") == head


def test_criss_cross_binary_conflict_between_bases_is_reported(repo: Repository) -> None:
    """A binary file cannot carry markers: whatever the virtual base holds there, a
    side equal to it must not win silently."""
    _criss_cross(repo, {"bin": b"\0base"}, {"bin": b"\0a"}, {"bin": b"\0b"})
    assert (repo.read("A", "bin"), repo.read("B", "bin")) == (b"\0a", b"\0b")
    with pytest.raises(MergeConflict) as caught:
        repo.merge("B", into="A")
    assert caught.value.conflicts == [b"bin"]  # type: ignore[attr-defined]
    repo.commit({"bin": b"\0b"}, "agree", branch="A")
    assert repo.merge("B", into="A").status == "merged"


lines = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"d\n", b"e"]), max_size=12).map(b"".join)


@given(lines, lines)
def test_merge_lines_one_sided_edits_are_taken_as_is(base: bytes, edited: bytes) -> None:
    assert merge_lines(base, edited, base) == (edited, True)
    assert merge_lines(base, base, edited) == (edited, True)
    assert merge_lines(base, edited, edited) == (edited, True)


@given(lines, lines, lines)
def test_merge_lines_conflicts_carry_markers(base: bytes, ours: bytes, theirs: bytes) -> None:
    merged, clean = merge_lines(base, ours, theirs)
    if clean:
        assert b"<<<<<<<" not in merged
    else:
        assert b"<<<<<<< ours\n" in merged and b">>>>>>> theirs\n" in merged


MODULE = b"".join(b"line %d of a module that an agent keeps editing\n" % n for n in range(40))


def test_an_edit_follows_a_file_the_other_side_renamed(repo: Repository) -> None:
    """Was a modify/delete conflict on the old name."""
    _fork(repo, {"src/util.py": MODULE, "keep": b"k"})
    repo.commit({"src/util.py": None, "src/helpers.py": MODULE}, "rename", branch="feat")
    repo.commit({"src/util.py": MODULE.replace(b"line 3 ", b"LINE 3 ")}, "main edits")
    result = repo.merge("feat")
    assert result.status == "merged" and result.conflicts == []
    assert repo.read("HEAD", "src/helpers.py") == MODULE.replace(b"line 3 ", b"LINE 3 ")
    assert repo.entry("HEAD", "src") is not None
    assert [e.name for e in repo.ls("HEAD", "src")] == [b"helpers.py"]


def test_a_rename_with_edits_merges_with_the_other_sides_edit(repo: Repository) -> None:
    """Renamed and edited on one side (most lines shared), edited elsewhere on the other,
    in either direction: both edits land under the new name."""
    _fork(repo, {"a.py": MODULE})
    repo.commit({"a.py": MODULE.replace(b"line 30 ", b"THEIRS 30 ")}, "feat edits", branch="feat")
    renamed = MODULE.replace(b"line 2 ", b"OURS 2 ")
    repo.commit({"a.py": None, "b/a_moved.py": renamed}, "main renames and edits")
    assert repo.merge("feat").status == "merged"
    assert repo.read("HEAD", "b/a_moved.py") == renamed.replace(b"line 30 ", b"THEIRS 30 ")
    assert repo.entry("HEAD", "b/a_moved.py") is not None and not _exists(repo, "a.py")


def test_a_rename_whose_edits_clash_conflicts_under_the_new_name(repo: Repository) -> None:
    _fork(repo, {"a.py": MODULE})
    repo.commit({"a.py": None, "z.py": MODULE.replace(b"line 5 ", b"feat 5 ")}, "mv", branch="feat")
    repo.commit({"a.py": MODULE.replace(b"line 5 ", b"main 5 ")}, "main edits")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"z.py"]  # type: ignore[attr-defined]
    assert b"<<<<<<< main\nmain 5" in err.value.files[b"z.py"]  # type: ignore[attr-defined]


def test_a_folder_renamed_on_one_side_takes_the_other_sides_edits(repo: Repository) -> None:
    _fork(repo, {"old/x.py": MODULE, "old/y.py": MODULE + b"y\n"})
    repo.commit({"old": None, "new/x.py": MODULE, "new/y.py": MODULE + b"y\n"}, "mv", branch="feat")
    repo.commit({"old/y.py": MODULE + b"y edited\n"}, "main edits")
    result = repo.merge("feat")
    assert result.status == "merged" and not _exists(repo, "old")
    assert repo.read("HEAD", "new/y.py") == MODULE + b"y edited\n"
    assert repo.read("HEAD", "new/x.py") == MODULE


def test_a_renamed_binary_takes_the_other_sides_edit_unless_both_edited(
    repo: Repository,
) -> None:
    """Moved as it was, the other side's edit follows it (as in git). Moved and edited,
    against an edit on the other side: no markers can hold both, so it stays a
    modify/delete conflict with both versions kept."""
    blob = bytes(range(256)) * 8
    _fork(repo, {"img.bin": blob, "logo.bin": blob[:1024]})
    repo.commit({"img.bin": None, "pic.bin": blob}, "mv", branch="feat")
    repo.commit({"img.bin": blob[::-1]}, "main edits")
    assert repo.merge("feat").status == "merged"
    assert repo.read("HEAD", "pic.bin") == blob[::-1] and not _exists(repo, "img.bin")
    repo.commit({"logo.bin": None, "brand.bin": blob[:1000]}, "mv+edit", branch="feat")
    repo.commit({"logo.bin": blob[:1000] + b"main"}, "main edits")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"logo.bin"]  # type: ignore[attr-defined]


def test_renamed_apart_on_both_sides_is_a_conflict_on_both_names(disk_repo: Repository) -> None:
    """Was merged clean with the file under both names (git: rename/rename)."""
    repo = disk_repo
    _fork(repo, {"a.py": MODULE, "keep": b"k"})
    repo.commit({"a.py": None, "theirs.py": MODULE}, "mv", branch="feat")
    repo.commit({"a.py": None, "ours.py": MODULE}, "mv")
    head = repo.resolve("HEAD")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"ours.py", b"theirs.py"]  # type: ignore[attr-defined]
    assert repo.resolve("HEAD") == head
    result = repo.merge("feat", allow_conflicts=True)
    assert result.status == "conflicts" and result.conflicts == [b"ours.py", b"theirs.py"]


@pytest.mark.parametrize("renamer", ["main", "feat"])
def test_renamed_on_one_side_deleted_on_the_other_is_a_conflict(
    disk_repo: Repository, renamer: str
) -> None:
    """Was merged clean, the delete silently undone (git: rename/delete)."""
    repo = disk_repo
    _fork(repo, {"a.py": MODULE, "keep": b"k"})
    deleter = "feat" if renamer == "main" else "main"
    repo.commit({"a.py": None}, "rm", branch=deleter)
    edited = MODULE.replace(b"line 7 ", b"LINE 7 ")
    repo.commit({"a.py": None, "lib/moved.py": edited}, "mv", branch=renamer)
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"lib/moved.py"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mover", ["main", "feat"])
def test_a_file_added_in_a_folder_the_other_side_renamed_is_a_conflict(
    disk_repo: Repository, mover: str
) -> None:
    """Was merged clean, the new file left alone in the old folder (git: CONFLICT (file
    location)). It stays where it was added, reported; a folder merely emptied, or one
    whose files went to different places, is no rename."""
    repo = disk_repo
    _fork(repo, {"old/x.py": MODULE, "old/y.py": MODULE + b"y\n", "keep": b"k"})
    adder = "feat" if mover == "main" else "main"
    moved = {"new/x.py": MODULE, "new/y.py": MODULE + b"y\n"}
    repo.commit({"old/x.py": None, "old/y.py": None, **moved}, "mv", branch=mover)  # old/ stays
    added = {"old/sub/z.py": b"z = 1\n", "old/w.py": b"w\n", "top.py": b"t\n"}
    repo.commit(added, "add", branch=adder)
    head = repo.resolve("HEAD")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"old/sub/z.py", b"old/w.py"]  # type: ignore[attr-defined]
    assert f"old/sub/z.py (added in old/, which {mover} renamed to new/)" in str(err.value)
    assert repo.resolve("HEAD") == head
    result = repo.merge("feat", allow_conflicts=True)
    assert result.conflicts == [b"old/sub/z.py", b"old/w.py"]
    assert repo.read("HEAD", "old/sub/z.py") == b"z = 1\n"


def test_a_file_added_in_a_new_subfolder_of_a_renamed_folder_merges_clean(
    disk_repo: Repository,
) -> None:
    """Was a conflict where git merges clean: git (ort) looks for a folder's rename only
    where a file was added right in it, and old/sub/ is new on the adding side."""
    repo = disk_repo
    _fork(repo, {"old/x.py": MODULE, "old/s/y.py": MODULE + b"y\n", "keep": b"k"})
    moved = {"new/x.py": MODULE, "new/s/y.py": MODULE + b"y\n"}
    repo.commit({"old": None, **moved}, "mv", branch="feat")
    repo.commit({"old/sub/z.py": b"z\n", "old/s/t/u.py": b"u\n"}, "add")
    result = repo.merge("feat")
    assert result.status == "merged" and result.conflicts == []
    assert repo.read("HEAD", "old/sub/z.py") == b"z\n"
    assert repo.read("HEAD", "old/s/t/u.py") == b"u\n"


def test_a_file_added_in_a_folder_moved_up_to_the_root_is_a_conflict(
    disk_repo: Repository,
) -> None:
    """Was merged clean: a folder whose files all went up to the root got no vote for
    a destination (git: CONFLICT (file location), suggesting z.py at the root)."""
    repo = disk_repo
    _fork(repo, {"old/x.py": MODULE, "old/y.py": MODULE + b"y\n"})
    repo.commit({"old": None, "x.py": MODULE, "y.py": MODULE + b"y\n"}, "up", branch="feat")
    repo.commit({"old/z.py": b"z\n"}, "add")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"old/z.py"]  # type: ignore[attr-defined]
    assert "old/z.py (added in old/, which feat renamed to the root)" in str(err.value)


def test_a_file_added_in_a_folder_the_other_side_emptied_merges_clean(
    disk_repo: Repository,
) -> None:
    """Its files deleted, not moved: no folder rename to follow."""
    repo = disk_repo
    _fork(repo, {"old/x.py": MODULE, "old/y.py": MODULE + b"y\n", "keep": b"k"})
    repo.commit({"old": None}, "delete", branch="feat")
    repo.commit({"old/z.py": b"z\n"}, "add")
    result = repo.merge("feat")
    assert result.status == "merged" and result.conflicts == []
    assert repo.read("HEAD", "old/z.py") == b"z\n"


def test_a_file_added_in_a_folder_split_between_two_is_a_conflict(
    disk_repo: Repository,
) -> None:
    """Its files moved to two folders, as many to each: there is no telling where the
    new file belongs (git: CONFLICT (directory rename split)). Was merged clean."""
    repo = disk_repo
    _fork(repo, {"old/x.py": MODULE, "old/y.py": MODULE + b"y\n", "keep": b"k"})
    repo.commit({"old": None, "a/x.py": MODULE, "b/y.py": MODULE + b"y\n"}, "split", branch="feat")
    repo.commit({"old/z.py": b"z\n"}, "add")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert "old/z.py (added in old/, which feat split between a/ and b/)" in str(err.value)


def test_empty_files_do_not_count_as_renames_of_a_folder(disk_repo: Repository) -> None:
    """All empty files (and pipes, and sockets) share the empty blob's id, so each paired
    with any other as a rename: here an empty file 'moved' to m/ tied old/'s real move
    to n/, and the file added in old/ merged clean (git leaves empty files out)."""
    repo = disk_repo
    _fork(repo, {"old/e": b"", "old/x.py": MODULE, "keep": b"k"})
    repo.commit({"old": None, "m/e": b"", "n/x.py": MODULE}, "mv", branch="feat")
    repo.commit({"old/z.py": b"z\n"}, "add")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert "old/z.py (added in old/, which feat renamed to n/)" in str(err.value)


def test_renamed_alike_on_both_sides_merges_clean(disk_repo: Repository) -> None:
    repo = disk_repo
    _fork(repo, {"a.py": MODULE, "keep": b"k"})
    repo.commit({"a.py": None, "b.py": MODULE, "keep": b"k2"}, "mv", branch="feat")
    repo.commit({"a.py": None, "b.py": MODULE}, "mv")
    result = repo.merge("feat")
    assert result.status == "merged" and result.conflicts == []
    assert [e.name for e in repo.ls("HEAD")] == [b"b.py", b"keep"]


def _exists(repo: Repository, path: str) -> bool:
    try:
        return repo.entry("HEAD", path) is not None
    except NotFound:
        return False


def test_only_exact_renames_are_found_for_big_files(repo: Repository) -> None:
    """A file over 1 MiB is not read to score a rename: moved as it was, the other
    side's edit follows it; moved and edited, it stays a modify/delete conflict."""
    big = MODULE * 30_000  # ~1.4 MB
    _fork(repo, {"same.log": big, "edited.log": big + b"x\n"})
    repo.commit(
        {"same.log": None, "moved.log": big, "edited.log": None, "e2.log": big + b"y\n"},
        "moves",
        branch="feat",
    )
    repo.commit({"same.log": big + b"main\n", "edited.log": big + b"x\nmain\n"}, "main edits")
    with pytest.raises(MergeConflict) as err:
        repo.merge("feat")
    assert err.value.conflicts == [b"edited.log"]  # type: ignore[attr-defined]


def _chmod_root(repo: Repository, branch: str, mode: int) -> None:
    work = repo.worktree(branch)
    work.set_attrs(work.root, mode=mode)
    work.commit("chmod .")


def test_the_roots_mode_merges_three_ways(repo: Repository) -> None:
    """A root record (ADR 0044) merges like an entry: one side's change is taken, with
    the other side's files; changed apart on both sides, "." is a conflict."""
    _fork(repo, {"a": b"1"})
    _chmod_root(repo, "feat", 0o700)
    repo.commit({"b": b"2"}, "main")
    assert repo.merge("feat").status == "merged"
    assert repo.trees.get(repo.commit_info("HEAD").tree).own.mode & 0o7777 == 0o700
    assert repo.read("HEAD", "b") == b"2"
    _chmod_root(repo, "feat", 0o750)
    _chmod_root(repo, "main", 0o770)
    with pytest.raises(MergeConflict) as raised:
        repo.merge("feat")
    assert raised.value.conflicts == [b"."]
