"""What a push sends (vcs/outgoing.py, ADR 0070): the trees walked where they differ
must send every object the remote lacks, as the whole-tree mark it replaced did."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import pytest

from helixfs.errors import MergeConflict, NotFound
from helixfs.ids import CommitId, ObjectId
from helixfs.vcs.ancestry import only_reached
from helixfs.vcs.maint import mark
from helixfs.vcs.objects import FLAT_MAX
from helixfs.vcs.outgoing import new_objects
from helixfs.vcs.repo import Repository

pytestmark = pytest.mark.timeout(120)


def reachable(repo: Repository, tips: list[CommitId]) -> set[ObjectId]:
    return mark(repo, [ObjectId(t) for t in tips])


def sent(repo: Repository, tip: CommitId, known: list[CommitId]) -> set[ObjectId]:
    return set(new_objects(repo, only_reached(repo, tip, known)))


def check(repo: Repository, tip: CommitId, known: list[CommitId], *, exact: bool) -> None:
    needed = reachable(repo, [tip]) - reachable(repo, known)
    got = sent(repo, tip, known)
    assert needed <= got, f"{len(needed - got)} objects the remote lacks were not sent"
    assert got <= reachable(repo, [tip])
    if exact:
        assert got == needed


def there(repo: Repository, branch: str, path: str) -> bool:
    try:
        repo.read(branch, path)
    except NotFound:
        return False
    return True


def random_edit(rng: random.Random, repo: Repository, branch: str, step: int) -> CommitId:
    folder = rng.choice(["a", "a/b", "a/b/c", "big", "d"])
    name = f"{folder}/f{rng.randrange(40 if folder != 'big' else 700)}.txt"
    choice = rng.random()
    change: dict[str | bytes, bytes | None]
    if choice < 0.15 and there(repo, branch, name):
        change = {name: None}
    elif choice < 0.25:  # a large (chunked) file, edited in place
        data = bytearray(rng.randbytes(16) * (1 << 17))
        data[rng.randrange(len(data))] ^= 0xFF
        change = {"large.bin": bytes(data)}
    else:
        change = {name: b"step %d %d\n" % (step, rng.randrange(3))}
    return repo.commit(change, f"step {step}", branch=branch)


@pytest.mark.parametrize("seed", range(4))
def test_the_objects_sent_are_all_the_remote_lacks(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    with Repository.init(tmp_path / "s") as repo:
        first = {f"big/f{i}.txt": b"%d\n" % i for i in range(700)}  # a paged folder
        first.update({f"a/b/c/f{i}.txt": b"c%d\n" % i for i in range(30)})
        base = repo.commit(first, "initial")
        repo.create_branch("side", "main")
        known = [base]
        for step in range(30):
            branch = "side" if rng.random() < 0.3 else "main"
            tip = random_edit(rng, repo, branch, step)
            if rng.random() < 0.2:
                with contextlib.suppress(MergeConflict):
                    tip = repo.merge("side", into="main").commit or tip
            check(repo, tip, known, exact=True)
            if rng.random() < 0.5:  # pushed: the remote now has it
                known.append(tip)
        for head in (repo.branch_head("main"), repo.branch_head("side")):
            check(repo, head, [base], exact=True)
            check(repo, head, [], exact=True)


def test_a_moved_folder_is_sent_whole_and_nothing_is_missing(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        base = repo.commit({f"old/f{i}.txt": b"%d\n" % i for i in range(20)}, "initial")
        moved: dict[str | bytes, bytes | None] = {f"old/f{i}.txt": None for i in range(20)}
        moved.update({f"new/f{i}.txt": b"%d\n" % i for i in range(20)})
        tip = repo.commit(moved, "move")
        check(repo, tip, [base], exact=False)


def test_a_push_on_top_of_a_known_commit_reads_only_the_changed_path(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        base = repo.commit({f"d{i % 50}/f{i}.txt": b"%d\n" % i for i in range(2000)}, "initial")
        tip = repo.commit({"d7/f7.txt": b"changed\n"}, "edit")
        got = sent(repo, tip, [base])
        # the commit, the root folder, d7, the file: whatever the tree's size
        assert len(got) == 4


def test_a_folder_paged_and_flat_again_sends_exactly_what_changed(tmp_path: Path) -> None:
    """ADR 0082: a new paged folder's pages are paired with the old pages they replace
    (not with every page); across FLAT_MAX both ways, with subfolders among the pages,
    each push sends exactly what the remote lacks."""
    rng = random.Random(7)
    with Repository.init(tmp_path / "s") as repo:
        known = [repo.commit({f"g/f{i}.txt": b"%d\n" % i for i in range(FLAT_MAX - 3)}, "flat")]
        names = [f"g/f{i}.txt" for i in range(FLAT_MAX - 3)]
        for step in range(12):  # grows past FLAT_MAX, then edits inside its pages
            change: dict[str | bytes, bytes | None] = {
                f"g/n{step}-{k}.txt": b"new %d %d\n" % (step, k) for k in range(3)
            }
            change[f"g/sub{step % 4}/f{step}.txt"] = b"deep %d\n" % step
            change[rng.choice(names)] = b"edited %d\n" % step
            tip = repo.commit(change, f"grow {step}")
            check(repo, tip, known[-1:], exact=True)
            known.append(tip)
        gone: dict[str | bytes, bytes | None] = {name: None for name in names[: FLAT_MAX // 2]}
        tip = repo.commit(gone, "shrink")  # flat again: paired with every old page
        check(repo, tip, known[-1:], exact=True)
        check(repo, tip, known[:1], exact=True)
        check(repo, tip, [], exact=True)
