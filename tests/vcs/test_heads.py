"""vcs/heads.py: the branches and commits a hook reads with no daemon, from the version
store opened read-only, answer as the Repository does, beside a writer holding it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helixfs.errors import InvalidInput, NotFound, ReadOnly
from helixfs.vcs import heads
from helixfs.vcs.heads import Heads
from helixfs.vcs.repo import OBJECTS_DIR, Repository


def _history(repo: Repository) -> None:
    repo.commit({"a.txt": b"1"}, "first")
    repo.commit({"a.txt": b"2", "b.txt": b"x"}, "second")
    repo.create_branch("try")
    repo.commit({"c.txt": b"3"}, "on try", branch="try")
    repo.create_snapshot("v1", "try")


def test_heads_answer_as_the_repository_while_it_holds_the_store(tmp_path: Path) -> None:
    assert heads.OBJECTS_DIR == OBJECTS_DIR
    with Repository.init(tmp_path / "store") as repo:
        _history(repo)
        with Heads.open(tmp_path / "store") as read:  # no LOCK: the writer keeps its own
            assert read.head_branch() == read.current_branch() == repo.current_branch()
            assert [(b.name, b.commit) for b in read.branches()] == [
                (r.name, r.commit) for r in repo.branches()
            ]
            for rev in ("HEAD", "@", "main", "try", "v1", "branches/try", "snapshots/v1"):
                assert read.resolve(rev) == repo.resolve(rev)
                assert read.commit_info(rev) == repo.commit_info(rev)
            for rev, limit in (("branches/try", 5), ("main", None), ("try", 1), ("main", 0)):
                assert list(read.log(rev, limit)) == list(repo.log(rev, limit))
            assert [c.message for c in read.log("try")] == ["on try", "second", "first", "init"]
            with pytest.raises(NotFound):
                read.resolve("nope")
            with pytest.raises(InvalidInput):
                read.resolve("main\n")
            with pytest.raises(ReadOnly):
                read.store.write({}, ())


def test_heads_see_no_store_where_there_is_none(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        Heads.open(tmp_path)
    assert not (tmp_path / OBJECTS_DIR).exists()  # a read-only open creates nothing


def test_heads_import_neither_the_repository_nor_the_tree_operations() -> None:
    code = "import sys, helixfs.vcs.heads; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "helixfs.vcs.heads" in loaded
    for heavy in ("helixfs.vcs.repo", "helixfs.vcs.treeops", "helixfs.vcs.node", "pyfastcdc"):
        assert heavy not in loaded
