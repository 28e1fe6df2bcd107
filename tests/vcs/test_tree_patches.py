"""Folders written as patches on their previous version (ADR 0095): whatever a history
of commits does to a big folder, every commit's tree reads back the same from a store
opened again (no cache holds it), and gc and fsck keep it so."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixfs.store.frame import Codec
from helixfs.vcs import Repository
from helixfs.vcs.treeops import PATCH_FROM

from .chains import chain_problems

# A root of 40 files and 3 folders (~2.9 KB: patched) and folders of 8 (not patched)
FILES = [f"file-{n:02d}.txt" for n in range(40)]
FOLDERS = ["src", "docs", "deep/er"]
PATHS = FILES + [f"{folder}/f{n}" for folder in FOLDERS for n in range(8)]
change = st.tuples(st.sampled_from(PATHS), st.one_of(st.none(), st.binary(max_size=40)))
commits = st.lists(st.lists(change, min_size=1, max_size=3), min_size=1, max_size=25)


def files_of(repo: Repository, rev: str) -> dict[str, bytes]:
    return {
        path.decode(): repo.read(rev, path)
        for path, entry in repo.trees.walk(repo.commit_info(rev).tree)
        if not entry.is_dir()
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits)
def test_every_commit_of_a_patched_history_reads_back(
    history: list[list[tuple[str, bytes | None]]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        model = {path: b"v0 " + path.encode() for path in PATHS}
        expected: list[tuple[str, dict[str, bytes]]] = []
        with Repository.init(Path(folder) / "store") as repo:
            repo.commit(dict(model), "all")
            for n, changes in enumerate(history):
                step = {}
                for path, content in changes:
                    if content is None and path not in model:
                        continue  # a delete of what is not there: refused, not tested here
                    step[path] = content
                step = dict(step)  # a path twice: the last change wins
                for path, content in step.items():
                    if content is None:
                        model.pop(path)
                    else:
                        model[path] = content
                if not step:
                    continue
                cid = repo.commit(step, f"step {n}")
                expected.append((cid.hex(), dict(model)))
        with Repository.open(Path(folder) / "store") as repo:
            for rev, files in expected:
                assert files_of(repo, rev) == files
            assert repo.fsck().ok and chain_problems(repo.store) == []  # type: ignore[arg-type]


def test_an_edit_in_a_big_folder_logs_its_entry_not_the_folder(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "store") as repo:
        repo.commit({path: b"first" for path in PATHS}, "all")
        root = repo.commit_info("HEAD").tree
        assert len(repo.store.get(root)) >= PATCH_FROM
        for n in range(3):
            repo.commit({FILES[n]: b"edit %d" % n}, f"edit {n}")
        tree = repo.commit_info("HEAD").tree
        frame = repo.store._objects_cf.get(tree)  # type: ignore[attr-defined]
        assert frame[4] == Codec.DELTA and len(frame) < 200
        repo.gc(grace_seconds=0)
        assert repo.fsck().ok
    with Repository.open(tmp_path / "store") as repo:
        assert repo.read("HEAD", FILES[2]) == b"edit 2"
        assert files_of(repo, "HEAD~3") == {path: b"first" for path in PATHS}


def test_a_branch_restored_to_a_patched_tree_and_edited_on_stays_readable(tmp_path: Path) -> None:
    """A restore makes a patched tree the head again (its record is stored already, so
    nothing is re-encoded) and the next edit is a patch on it; gc and a store opened
    again read every commit the same."""
    with Repository.init(tmp_path / "store") as repo:
        first = repo.commit({path: b"0" for path in PATHS}, "all")
        second = repo.commit({FILES[0]: b"1"}, "edit")
        repo.commit({FILES[1]: b"1"}, "edit")
        repo.commit_tree(repo.commit_info(second).tree, "back to the second")
        repo.commit({FILES[2]: b"2"}, "edit on it")
        repo.commit_tree(repo.commit_info(first).tree, "back to the start")
        repo.commit({FILES[3]: b"3"}, "edit on that")
        expected = {c.id: files_of(repo, c.id.hex()) for c in repo.log()}
        repo.gc(grace_seconds=0)
        assert repo.fsck().ok
    with Repository.open(tmp_path / "store") as repo:
        assert {c.id: files_of(repo, c.id.hex()) for c in repo.log()} == expected
        assert repo.fsck().ok and chain_problems(repo.store) == []  # type: ignore[arg-type]
