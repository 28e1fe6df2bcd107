"""The blame cache (ADR 0066): the same answer as the walk without it, on random
histories, and a second blame that reads only what is new."""

from __future__ import annotations

import random

import pytest

from helixfs.ids import CommitId
from helixfs.store import RefUpdate
from helixfs.vcs import Repository
from helixfs.vcs.blame import blame
from helixfs.vcs.blamecache import BLAME, ref_name

from .conftest import CountingStore

WORDS = [b"}\n", b"\n", b"return x\n", b"pass\n", b"x = 1\n"]  # repeated lines: diffs differ


def _edit(rng: random.Random, lines: list[bytes], step: int) -> None:
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(lines) + 1)
        new = rng.choice(WORDS) if rng.random() < 0.3 else f"step {step} {at}\n".encode()
        kind = rng.choice(("edit", "insert", "delete"))
        if kind == "insert" or at == len(lines):
            lines.insert(at, new)
        elif kind == "edit":
            lines[at] = new
        elif len(lines) > 3:
            del lines[at]


def _same(repo: Repository, head: CommitId) -> list[CommitId]:
    fresh = blame(repo, head, b"f", cached=False)
    got = blame(repo, head, b"f")
    assert [(b.number, b.commit, b.text) for b in got] == [
        (b.number, b.commit, b.text) for b in fresh
    ]
    return [b.commit for b in got]


@pytest.mark.parametrize("seed", range(6))
def test_cached_blame_equals_the_walk_on_random_histories(seed: int) -> None:
    """Blames now and then as history grows (on two branches, at old revisions, across
    merges, a deletion and a binary version): each equals the walk without the cache."""
    rng = random.Random(seed)
    repo = Repository.create(CountingStore())
    lines = [rng.choice(WORDS) if n % 4 == 0 else f"line {n}\n".encode() for n in range(40)]
    made = [repo.commit({"f": b"".join(lines)}, "start")]
    repo.create_branch("side")
    side = list(lines)
    for step in range(120):
        on_side = rng.random() < 0.25
        target = side if on_side else lines
        _edit(rng, target, step)
        made.append(
            repo.commit({"f": b"".join(target)}, f"s{step}", branch="side" if on_side else None)
        )
        if step % 7 == 0:
            repo.commit({"noise": b"%d\n" % step}, "noise")
        if step == 60:  # deleted, then written again: the later commit made every line
            repo.commit({"f": None}, "gone")
            made.append(repo.commit({"f": b"".join(lines)}, "back"))
        if step == 80:  # a binary version: the text after it is all its successor's
            repo.commit({"f": b"\0\1"}, "binary")
            made.append(repo.commit({"f": b"".join(lines)}, "text again"))
        if step % 30 == 29:
            repo.merge("side", message="merge side", allow_conflicts=True)
            lines = repo.read("HEAD", "f").splitlines(keepends=True)
        if rng.random() < 0.3:
            _same(repo, repo.resolve("side" if on_side else "HEAD"))
        if rng.random() < 0.1:  # an older revision: a walk that never meets the newest entry
            _same(repo, rng.choice(made[:-1]))
    _same(repo, repo.resolve("HEAD"))
    _same(repo, repo.resolve("side"))


def test_a_second_blame_reads_only_the_commits_since_the_first() -> None:
    store = CountingStore()
    repo = Repository.create(store)
    lines = [f"line {n}\n".encode() for n in range(200)]
    for step in range(100):
        lines[step] = f"edit {step}\n".encode()
        repo.commit({"f": b"".join(lines)}, f"edit {step}")
    store.gets.clear()
    first = _same(repo, repo.resolve("HEAD"))
    walked = len(store.gets)
    store.gets.clear()
    assert [b.commit for b in repo.blame("f")] == first
    assert len(store.gets) < 10  # the head, its tree, the file, one cached entry
    for step in range(3):
        lines[150 + step] = b"later\n"
        repo.commit({"f": b"".join(lines)}, f"later {step}")
    store.gets.clear()
    got = repo.blame("f")
    assert len(store.gets) < walked / 5
    assert [b.commit for b in got] == [
        b.commit for b in blame(repo, repo.resolve("HEAD"), b"f", cached=False)
    ]
    # one entry per line of work: the one the last walk stopped at was replaced
    assert len(list(store.refs(BLAME))) == 1


def test_a_damaged_entry_is_a_miss_and_is_rewritten() -> None:
    store = CountingStore()
    repo = Repository.create(store)
    repo.commit({"f": b"a\nb\n"}, "one")
    head = repo.commit({"f": b"a\nB\n"}, "two")
    expected = _same(repo, head)
    name = ref_name(b"f", head)
    for bad in (b"", b"HXB\x09" + bytes(60), (store.ref(name) or b"")[:-3], b"junk" * 30):
        store.write({}, [RefUpdate(name, bad)])
        assert [b.commit for b in repo.blame("f")] == expected
        assert store.ref(name) != bad  # written again, whole


def test_gc_drops_the_entries_of_the_commits_it_deletes(disk_repo: Repository) -> None:
    repo = disk_repo
    repo.commit({"f": b"a\n"}, "one")
    repo.create_branch("gone")
    tip = repo.commit({"f": b"a\nb\n"}, "on gone", branch="gone")
    main = repo.commit({"f": b"a\nc\n"}, "on main")
    repo.blame("f", "gone")
    repo.blame("f")
    assert {n for n, _ in repo.store.refs(BLAME)} == {ref_name(b"f", tip), ref_name(b"f", main)}
    repo.delete_branch("gone")
    repo.gc()
    assert [n for n, _ in repo.store.refs(BLAME)] == [ref_name(b"f", main)]
    assert [b.text for b in repo.blame("f")] == [b"a\n", b"c\n"]
