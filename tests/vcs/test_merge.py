"""Three-way merges: clean ones commit with two parents, conflicts are never silent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helixfs.errors import MergeConflict
from helixfs.vcs import Repository
from helixfs.vcs.merge import merge_lines

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
