"""The blame cache (ADR 0066): the same answer as the walk without it, on random
histories, and a second blame that reads only what is new."""

from __future__ import annotations

import random

import pytest

from helixfs.ids import CommitId
from helixfs.store import RefUpdate
from helixfs.vcs import Repository
from helixfs.vcs.blame import blame, label
from helixfs.vcs.blamecache import _HEAD_V1, BLAME, MAGIC, decode, ref_name

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
    assert [(b.number, b.commit, b.text, b.label) for b in got] == [
        (b.number, b.commit, b.text, b.label) for b in fresh
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


def _labelled_history(store: CountingStore) -> tuple[Repository, CommitId]:
    repo = Repository.create(store)
    lines = [f"line {n}\n".encode() for n in range(50)]
    for step in range(30):
        lines[step] = f"edit {step}\n".encode()
        meta = {"process": "vim" if step % 2 else "claude", "pid": step + 1}
        repo.commit({"f": b"".join(lines)}, f"edit {step}", meta, author=f"dev{step % 3} <d@x>")
    return repo, repo.resolve("HEAD")


def test_a_cached_blame_labels_its_lines_without_reading_their_commits() -> None:
    """ADR 0085: blame's text needs each owner's author, processes and date; the entry
    keeps them, so a cached blame on a store opened afresh reads no owner's record."""
    store = CountingStore()
    repo, head = _labelled_history(store)
    walked = blame(repo, head, b"f")
    fresh = Repository.wrap(store)  # no commit decoded yet
    store.gets.clear()
    got = blame(fresh, head, b"f")
    assert [(b.commit, b.label) for b in got] == [(b.commit, b.label) for b in walked]
    owners = {b.commit for b in got} - {head}
    parent = fresh.commit_info(head).parents[0]  # read by the walk: did head change f?
    assert len(owners) == 30 - 1 and owners & set(store.gets) <= {parent}
    assert all(b.label == label(fresh.commit_info(b.commit)) for b in got)
    assert {b.label.rsplit(" ", 2)[0] for b in got} == {
        f"dev{n % 3} [{'vim' if n % 2 else 'claude'} {n + 1}]" for n in range(30)
    }


def test_a_version_1_entry_is_read_and_replaced_by_one_with_labels() -> None:
    store = CountingStore()
    repo, head = _labelled_history(store)
    expected = blame(repo, head, b"f", cached=False)
    owners = [b.commit for b in expected]
    index = list(dict.fromkeys(owners))
    runs = b"".join(
        (1).to_bytes(4, "little") + index.index(o).to_bytes(4, "little") for o in owners
    )
    blob = repo.trees.entry(repo.commit_info(head).tree, b"f").oid
    old = _HEAD_V1.pack(MAGIC, 1, blob, len(owners), len(index)) + b"".join(index) + runs
    name = ref_name(b"f", head)
    store.write({}, [RefUpdate(name, old)])
    got = blame(Repository.wrap(store), head, b"f")
    assert [(b.commit, b.label) for b in got] == [(b.commit, b.label) for b in expected]
    value = store.ref(name)
    assert value is not None and value != old and value[3] == 2
    cached = decode(value, blob, len(owners))
    assert cached is not None and cached.current and cached.owners == owners
    assert cached.labels == {b.commit: b.label for b in expected}


def test_a_label_holding_a_nul_never_gives_a_wrong_answer() -> None:
    repo = Repository.create(CountingStore())
    repo.commit({"f": b"a\nb\n"}, "one", author="odd\0name <o@x>")
    head = repo.commit({"f": b"a\nB\n"}, "two")
    for _ in range(2):
        assert [b.label for b in repo.blame("f")] == [
            b.label for b in blame(repo, head, b"f", cached=False)
        ]
