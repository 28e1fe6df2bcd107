"""The history page's walk, without a browser: every commit of every branch and
snapshot once, newest first, page after page; merged branches in their own lane."""

from __future__ import annotations

import pytest

from helixfs.errors import InvalidInput
from helixfs.store.memory import MemoryStore
from helixfs.vcs import Repository
from helixfs.web import history


@pytest.fixture
def repo() -> Repository:
    repo = Repository.create(MemoryStore())
    repo.create_branch("agent")
    for i in range(120):
        branch = "main" if i % 3 else "agent"
        repo.commit({f"{branch}.txt": f"{i}\n".encode()}, f"save {i}", branch=branch)
    repo.merge("agent", into="main", message="merge agent")
    repo.create_snapshot("mid", "main~10")
    repo.reset_hard("main~5", branch="agent")  # agent's newest saves: reached by main only
    return repo


def test_pages_show_every_commit_once_newest_first(repo: Repository) -> None:
    seen, after, pages = [], None, 0
    while True:
        page = history.walk(repo, after, 25)
        seen += [row.commit for row in page.rows]
        pages += 1
        if page.after is None:
            break
        after = page.after
    ids = [c.id for c in seen]
    assert len(ids) == len(set(ids)) == 122  # init, 120 saves, the merge
    assert pages == 5
    times = [c.time_ns for c in seen]
    assert times == sorted(times, reverse=True)
    everything = {c.id for c in repo.log("main", first_parent=False)}
    assert set(ids) == everything


def test_lanes_follow_first_parents_and_merges(repo: Repository) -> None:
    page = history.walk(repo, None, 200)
    by_message = {row.commit.message: row for row in page.rows}
    assert by_message["merge agent"].ref == "main"
    assert by_message["save 117"].ref == "agent"  # only a merge reaches it now
    assert by_message["save 119"].ref == "main"
    assert "snapshot mid" in by_message[repo.commit_info("main~10").message].tips
    assert page.lanes[0] == "main"
    svg = history.graph_svg(page)
    assert svg.count("<circle") == len(page.rows)


def test_a_damaged_cursor_is_refused_clearly(repo: Repository) -> None:
    for bad in ("zzz", "", "eJwDAAAAAAE", history.encode_cursor([])):
        with pytest.raises(InvalidInput, match="damaged"):
            history.walk(repo, bad or "x", 10)
    with pytest.raises(InvalidInput, match="1..500"):
        history.walk(repo, None, 0)
