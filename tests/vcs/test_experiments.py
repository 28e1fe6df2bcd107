"""Experiments (vcs/experiments.py): start, tag, stop, score, compare, pick, over a real
MemoryStore; the mount's saves are tested through a real mount in
tests/mount/test_mount_experiments.py."""

from __future__ import annotations

import pytest

from helixfs.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidName,
    MergeConflict,
    NotFound,
    UnsupportedVersion,
)
from helixfs.ids import hex_id
from helixfs.store import RefUpdate
from helixfs.vcs import Repository
from helixfs.vcs.experiments import EXPERIMENTS, RUNNING_ON, decode, encode


def _refs(repo: Repository) -> dict[str, bytes]:
    return dict(repo.store.refs())


def test_start_makes_a_branch_and_every_commit_on_it_is_tagged(repo: Repository) -> None:
    repo.commit({"app.py": b"v = 1\n"}, "base")
    exp = repo.experiments.start("fast-cache")
    assert exp.branch == "fast-cache" and exp.base == repo.branch_head("main")
    one = repo.commit({"app.py": b"v = 2\n"}, "try 1", branch="fast-cache")
    tree = repo.worktree("fast-cache")  # a mount's save path: Worktree.commit
    tree.set_content(tree.create(tree.root, b"cache.py"), b"cache = {}\n")
    two = tree.commit()
    assert two is not None
    assert repo.commit_info(one).meta["experiment"] == "fast-cache"
    assert repo.commit_info(two).meta["experiment"] == "fast-cache"
    main = repo.commit({"other.py": b"x\n"}, "elsewhere")
    assert "experiment" not in repo.commit_info(main).meta  # another branch: untagged
    (summary,) = repo.experiments.summaries()
    assert summary.commits == 2 and summary.head == two
    assert summary.first_ns == repo.commit_info(one).time_ns
    assert summary.last_ns == repo.commit_info(two).time_ns


def test_stop_ends_the_tagging_and_keeps_the_tip(repo: Repository) -> None:
    repo.experiments.start("a", rev="HEAD")
    tagged = repo.commit({"f": b"1\n"}, "in it", branch="a")
    stopped = repo.experiments.stop()  # the only one running
    assert not stopped.running and stopped.tip == tagged
    after = repo.commit({"f": b"2\n"}, "after", branch="a")
    assert "experiment" not in repo.commit_info(after).meta
    assert repo.experiments.summaries()[0].commits == 1
    assert RUNNING_ON + "a" not in _refs(repo)
    with pytest.raises(InvalidInput, match="stopped already"):
        repo.experiments.stop("a")
    with pytest.raises(NotFound, match="no experiment is running"):
        repo.experiments.stop()


def test_bad_starts_change_nothing(repo: Repository) -> None:
    repo.experiments.start("a")
    before = _refs(repo)
    with pytest.raises(AlreadyExists, match="exists"):
        repo.experiments.start("a", branch="other")
    with pytest.raises(AlreadyExists, match="runs experiment 'a'"):
        repo.experiments.start("b", branch="a")
    with pytest.raises(InvalidInput, match="--from applies to a new branch"):
        repo.experiments.start("c", branch="main", rev="HEAD")
    with pytest.raises(NotFound):
        repo.experiments.start("d", rev="no-such-rev")
    with pytest.raises(InvalidName):
        repo.experiments.start("bad name")
    assert _refs(repo) == before


def test_an_existing_branch_is_used_from_its_head(repo: Repository) -> None:
    repo.create_branch("work")
    repo.commit({"f": b"before\n"}, "before", branch="work")
    exp = repo.experiments.start("on-work", branch="work")
    assert exp.base == repo.branch_head("work")
    assert repo.experiments.summaries()[0].commits == 0


def test_scores_are_recorded_on_the_current_commit(repo: Repository) -> None:
    repo.experiments.start("a")
    cid = repo.commit({"f": b"1\n"}, "one", branch="a")
    score = repo.experiments.score("a", 0.75)
    assert score.commit == cid and score.metric == "score"
    repo.experiments.score("a", 12, metric="latency_ms")
    repo.experiments.score("a", 0.8)
    exp = repo.experiments.get("a")
    assert exp.score().value == 0.8 and exp.score("latency_ms").value == 12.0  # type: ignore[union-attr]
    assert list(exp.latest_scores()) == ["score", "latency_ms"]
    before = _refs(repo)
    for bad in (float("nan"), float("inf"), "high", True):
        with pytest.raises(InvalidInput):
            repo.experiments.score("a", bad)
    with pytest.raises(InvalidInput):
        repo.experiments.score("a", 1, metric="has space")
    with pytest.raises(NotFound, match="no experiment 'zz'"):
        repo.experiments.score("zz", 1)
    assert _refs(repo) == before


def test_compare_shows_changes_and_line_counts_against_the_common_base(
    repo: Repository,
) -> None:
    repo.commit({"app.py": b"a\nb\nc\n"}, "base")
    base = repo.branch_head("main")
    repo.experiments.start("x")
    repo.experiments.start("y")
    repo.commit({"app.py": b"a\nB\nc\n", "x.txt": b"1\n2\n"}, "x", branch="x")
    repo.commit({"app.py": b"a\nb\nc\nd\n", "bin": b"\0\1"}, "y", branch="y")
    repo.experiments.score("x", 0.9)
    result = repo.experiments.compare(["x", "y"])
    assert result.base == base and result.shared == [b"app.py"]
    x, y = result.entries
    assert [c.path for c in x.changes] == [b"app.py", b"x.txt"]
    assert (x.added, x.removed, x.uncounted) == (3, 1, 0)
    assert (y.added, y.removed, y.uncounted) == (1, 0, 1)
    assert x.summary.experiment.score().value == 0.9  # type: ignore[union-attr]
    with pytest.raises(NotFound):
        repo.experiments.compare(["x", "nope"])
    with pytest.raises(InvalidInput):
        repo.experiments.compare(["x", "x"])


def test_pick_merges_the_winner_and_marks_it(repo: Repository) -> None:
    repo.commit({"app.py": b"a\n"}, "base")
    repo.experiments.start("win")
    won = repo.commit({"app.py": b"a\nwin\n"}, "win", branch="win")
    done, result = repo.experiments.pick("win")
    assert result.status == "fast-forward" and repo.branch_head("main") == won
    assert done.picked is not None and done.picked.into == "main" and not done.running
    assert repo.experiments.get("win") == done
    with pytest.raises(InvalidInput, match="check out the branch"):
        repo.experiments.pick("win", into="win")


def test_a_conflicting_pick_changes_nothing(repo: Repository) -> None:
    repo.commit({"app.py": b"a\n"}, "base")
    repo.experiments.start("lose")
    repo.commit({"app.py": b"lose\n"}, "lose", branch="lose")
    repo.commit({"app.py": b"main\n"}, "main moved")
    before = _refs(repo)
    with pytest.raises(MergeConflict):
        repo.experiments.pick("lose")
    assert _refs(repo) == before and repo.experiments.get("lose").running


def test_the_record_round_trips_and_a_newer_one_is_refused(repo: Repository) -> None:
    repo.experiments.start("a")
    repo.experiments.score("a", 1.5)
    exp = repo.experiments.get("a")
    assert decode("a", encode(exp)) == exp
    raw = repo.store.ref(EXPERIMENTS + "a")
    assert raw is not None and raw.startswith(b"HXX\x01")
    with pytest.raises(Exception, match="newer HelixFS"):
        decode("a", b"HXX\x09{}")


def test_an_explicit_experiment_meta_wins(repo: Repository) -> None:
    repo.experiments.start("a")
    cid = repo.commit({"f": b"1"}, "m", meta={"experiment": "mine"}, branch="a")
    assert repo.commit_info(cid).meta["experiment"] == "mine"
    assert hex_id(cid)


def test_a_running_experiments_branch_keeps_its_name(repo: Repository) -> None:
    repo.experiments.start("a")
    before = _refs(repo)
    with pytest.raises(InvalidInput, match="experiment 'a' runs on it"):
        repo.rename_branch("a", "b")
    with pytest.raises(InvalidInput, match="experiment 'a' runs on it"):
        repo.delete_branch("a")
    assert _refs(repo) == before
    repo.experiments.stop("a")
    repo.delete_branch("a")
    assert repo.experiments.summaries()[0].head is not None  # its tip, kept in the record


def test_status_names_the_experiment_running_on_the_branch(repo: Repository) -> None:
    from helixfs.vcs.status import status, status_lines

    repo.experiments.start("here", branch="main")
    state = status(repo, mounted=False)
    assert state.experiment == "here"
    assert any("experiment here runs here" in line for line in status_lines(state, repr))
    repo.experiments.stop()
    assert status(repo, mounted=False).experiment is None


def test_gc_keeps_every_commit_an_experiment_record_names(repo: Repository) -> None:
    """A score on a commit its branch was reset past, and the tip of a stopped
    experiment whose branch was deleted: no branch reaches them, the record does."""
    repo.commit({"app.py": b"v = 1\n"}, "base")
    repo.experiments.start("a")
    scored = repo.commit({"app.py": b"v = 2\n"}, "try", branch="a")
    repo.experiments.score("a", 0.9)
    repo.reset_hard(hex_id(repo.branch_head("main")), branch="a")  # the try undone
    repo.experiments.start("b")
    tip = repo.commit({"app.py": b"v = 3\n"}, "other try", branch="b")
    repo.experiments.stop("b")
    repo.delete_branch("b")
    repo.experiments.stop("a")
    dropped = repo.commit({"junk": b"x\n"}, "junk", branch="a")
    repo.reset_hard(hex_id(repo.commit_info(dropped).parents[0]), branch="a")  # gc takes it
    assert repo.gc(dry_run=True).unreachable > 0
    repo.gc()
    assert repo.read(hex_id(scored), "app.py") == b"v = 2\n"
    assert repo.read(hex_id(tip), "app.py") == b"v = 3\n"
    assert not repo.store.contains(dropped)
    repo.gc(without=[EXPERIMENTS + "a", EXPERIMENTS + "b"])  # counted as gone: they go
    assert not repo.store.contains(scored)


def test_gc_stops_at_an_experiment_record_it_cannot_read(repo: Repository) -> None:
    repo.commit({"app.py": b"v = 1\n"}, "base")
    repo.experiments.start("a")
    record = repo.store.ref(EXPERIMENTS + "a")
    assert record is not None
    repo.store.write({}, [RefUpdate(EXPERIMENTS + "a", record[:3] + b"\x09{}")])
    with pytest.raises(UnsupportedVersion, match="upgrade"):
        repo.gc()
