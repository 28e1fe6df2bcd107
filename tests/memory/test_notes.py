"""Checkpoints, resume and briefings."""

from __future__ import annotations

import pytest
from conftest import Clock

from helixfs.errors import InvalidInput, NotFound
from helixfs.memory import Memory
from helixfs.memory.tokens import estimate_tokens


def test_resume_prints_the_latest_checkpoint_as_markdown(mem: Memory, clock: Clock) -> None:
    mem.checkpoint("old task", next=["nothing"])
    clock.advance(1)
    mem.remember("We decided to store memories in SQLite with WAL.")
    mem.checkpoint(
        "Ship the memory engine",
        done=["schema", "pipeline"],
        next=["benchmarks"],
        hypotheses=["MMR lambda 0.75 is enough"],
        blocked=["waiting for the daemon socket"],
        files=["helixfs/memory/engine.py"],
    )
    text = mem.resume()
    assert text.startswith("# Resume: Ship the memory engine")
    for line in (
        "## Done",
        "- schema",
        "## Next",
        "- benchmarks",
        "## Hypotheses",
        "## Blocked",
        "- waiting for the daemon socket",
        "## Files",
        "- `helixfs/memory/engine.py`",
        "## Recent decisions and gotchas",
    ):
        assert line in text
    assert "old task" not in text


def test_checkpoints_are_per_scope(mem: Memory) -> None:
    mem.checkpoint("alpha work", scope="alpha")
    mem.checkpoint("beta work", scope="beta")
    assert mem.resume("alpha").startswith("# Resume: alpha work")
    assert mem.last_checkpoint().task == "beta work"


def test_resume_without_checkpoint_says_how_to_make_one(mem: Memory) -> None:
    with pytest.raises(NotFound, match="helix checkpoint"):
        mem.resume()


def test_checkpoint_refuses_bad_input(mem: Memory) -> None:
    with pytest.raises(InvalidInput):
        mem.checkpoint("")
    with pytest.raises(InvalidInput):
        mem.checkpoint("task", done=[""])
    with pytest.raises(NotFound):
        mem.resume()


def test_checkpoint_is_redacted(mem: Memory) -> None:
    cp = mem.checkpoint("rotate ghp_R8kLm2Nq7Xb4Lv6Pz0Hj8Ut1Ry3Ge5Da7Cf9B")
    assert "ghp_" not in cp.task


def test_brief_groups_a_topic_by_type_under_budget(mem: Memory) -> None:
    mem.remember("We decided to shard the search index by tenant.")
    mem.remember("Beware: the search index rebuild takes an hour on big tenants.")
    mem.remember("The search index lives in Elasticsearch 8.")
    mem.remember("Lunch is at noon.")
    text = mem.brief("search index", budget_tokens=200)
    assert text.startswith("# Brief: search index")
    assert "## decision (1)" in text and "## gotcha (1)" in text
    assert "Lunch" not in text
    assert estimate_tokens(text) <= 200


def test_brief_of_everything_and_of_nothing(mem: Memory) -> None:
    assert "Nothing remembered yet" in mem.brief()
    for i in range(50):
        mem.remember(f"Component c{i} is maintained by squad {i % 7} in repo r{i}.")
    text = mem.brief(budget_tokens=120)
    assert text.startswith("# Brief: everything remembered")
    assert estimate_tokens(text) <= 120
    with pytest.raises(InvalidInput):
        mem.brief(budget_tokens=5)
