"""Merge bases by generation: the same answers as the definition, reading only what matters."""

from __future__ import annotations

import random

import pytest

from helixfs.ids import CommitId, ObjectId, object_id
from helixfs.vcs import Repository
from helixfs.vcs.ancestry import GENERATION, ahead_behind, generation, merge_bases
from helixfs.vcs.objects import Commit, encode_commit
from helixfs.vcs.treeops import EMPTY_TREE_ID

from .conftest import CountingStore


def _commit(repo: Repository, parents: list[CommitId], n: int, recorded: bool) -> CommitId:
    """A commit record written by hand, with or without its generation (as from before
    generations were recorded)."""
    meta = {GENERATION: 1 + max((generation(repo, p) for p in parents), default=0)}
    record = encode_commit(
        Commit(EMPTY_TREE_ID, tuple(parents), n, "t", f"c{n}", meta if recorded else {})
    )
    cid = CommitId(object_id(record))
    repo.store.write({ObjectId(cid): record})
    return cid


def _ancestors(repo: Repository, cid: CommitId) -> set[CommitId]:
    seen, todo = {cid}, [cid]
    while todo:
        for parent in repo.commit_info(todo.pop()).parents:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def _by_definition(repo: Repository, a: CommitId, b: CommitId) -> set[CommitId]:
    """Common ancestors that are not an ancestor of another common ancestor."""
    common = _ancestors(repo, a) & _ancestors(repo, b)
    below = set().union(*(_ancestors(repo, c) - {c} for c in common))
    return common - below


def _random_history(repo: Repository, rng: random.Random) -> list[CommitId]:
    """60 commits: forks, merges of up to three parents, several roots, and a mix of
    commits with and without a recorded generation (none known in memory yet)."""
    commits: list[CommitId] = []
    for n in range(60):
        count = 0 if not commits or rng.random() < 0.05 else rng.choice([1, 1, 1, 2, 2, 3])
        parents = rng.sample(commits[-15:], min(count, len(commits[-15:])))
        commits.append(_commit(repo, parents, n, recorded=rng.random() < 0.5))
    repo.generations.clear()
    return commits


@pytest.mark.parametrize("seed", range(40))
def test_merge_bases_match_the_definition_on_random_histories(repo: Repository, seed: int) -> None:
    """Random DAGs with forks, merges of up to three parents, several roots, and a mix of
    commits with and without a recorded generation."""
    rng = random.Random(seed)
    commits = _random_history(repo, rng)
    for _ in range(30):
        a, b = rng.choice(commits), rng.choice(commits)
        assert set(merge_bases(repo, a, b)) == _by_definition(repo, a, b)


@pytest.mark.parametrize("seed", range(20))
def test_ahead_behind_counts_what_only_one_side_reaches(repo: Repository, seed: int) -> None:
    """As `git rev-list --count --left-right a...b`, on the same random histories."""
    rng = random.Random(seed)
    commits = _random_history(repo, rng)
    for _ in range(30):
        a, b = rng.choice(commits), rng.choice(commits)
        ours, theirs = _ancestors(repo, a), _ancestors(repo, b)
        assert ahead_behind(repo, a, b) == (len(ours - theirs), len(theirs - ours), True)
    chain = [_commit(repo, [], 1000, recorded=True)]
    for n in range(1001, 1010):
        chain.append(_commit(repo, [chain[-1]], n, recorded=True))
    assert ahead_behind(repo, chain[-1], chain[0]) == (9, 0, True)
    assert ahead_behind(repo, chain[-1], chain[0], limit=3) == (3, 0, False)


def test_commits_and_merges_record_their_generation(repo: Repository) -> None:
    first = repo.commit({"a": b"1"}, "one")  # on the root commit `init`
    repo.create_branch("side")
    side = repo.commit({"b": b"2"}, "side", branch="side")
    repo.commit({"c": b"3"}, "main")
    merged = repo.merge("side")
    assert repo.commit_info(first).meta[GENERATION] == 2
    assert repo.commit_info(side).meta[GENERATION] == 3
    assert merged.commit is not None and repo.commit_info(merged.commit).meta[GENERATION] == 4


def test_a_merge_base_reads_only_the_commits_since_the_fork(
    repo: Repository, store: CountingStore
) -> None:
    """A fork 3 commits below the tip of a 300-commit history: the walk reads about as
    many commits, not the history (it read all of it: 1.6 s at 20,000 commits)."""
    for n in range(300):
        repo.commit({"f": str(n).encode()}, f"c{n}")
    repo.create_branch("side", "HEAD~3")
    side = repo.commit({"g": b"side"}, "side", branch="side")
    main = repo.resolve("main")
    repo._commits.clear()  # read every commit from the store again
    store.gets.clear()
    assert merge_bases(repo, main, side) == [repo.resolve("HEAD~3")]
    assert len(set(store.gets)) <= 10


def test_old_commits_get_their_generation_computed_once(
    repo: Repository, store: CountingStore
) -> None:
    commits = [_commit(repo, [], 0, recorded=False)]
    for n in range(1, 200):
        commits.append(_commit(repo, [commits[-1]], n, recorded=False))
    fork = _commit(repo, [commits[-4]], 1000, recorded=False)
    repo.generations.clear()
    assert merge_bases(repo, commits[-1], fork) == [commits[-4]]
    assert generation(repo, commits[-1]) == 200
    repo._commits.clear()
    store.gets.clear()
    assert merge_bases(repo, commits[-1], fork) == [commits[-4]]  # known now: a short walk
    assert len(set(store.gets)) <= 10


def test_a_commit_on_a_damaged_old_history_still_saves(
    repo: Repository, store: CountingStore
) -> None:
    """An old history (no generations recorded) with a commit lost to damage: the next
    commit cannot know its generation, and goes without it rather than failing."""
    chain = [_commit(repo, [], 0, recorded=False)]
    for n in range(1, 5):
        chain.append(_commit(repo, [chain[-1]], n, recorded=False))
    store.delete([ObjectId(chain[1])])
    repo.move_refs({"branches/main": chain[-1]})
    repo.generations.clear()
    repo._commits.clear()
    cid = repo.commit({"saved": b"anyway"}, "on damaged history")
    assert GENERATION not in repo.commit_info(cid).meta
    assert repo.read("HEAD", "saved") == b"anyway"
