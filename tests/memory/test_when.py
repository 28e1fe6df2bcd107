"""Query-side dates (issue 30): the period a query names, and the boost it gives."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import Clock

from helixfs.memory import Memory, Source
from helixfs.memory.when import period_of

NOW = dt.datetime(2024, 2, 10, 12, tzinfo=dt.UTC).timestamp()


def _day(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("How did Jon's race go in July 2023?", "2023-07-01", "2023-08-01"),
        ("what happened in May?", "2023-05-01", "2023-06-01"),
        ("what happened in February?", "2024-02-01", "2024-03-01"),
        ("the trip in December 2023", "2023-12-01", "2024-01-01"),
        ("what did we decide in 2023", "2023-01-01", "2024-01-01"),
        ("what did she say last week", "2024-01-27T12:00", "2024-02-10T12:00"),
    ],
)
def test_a_named_period_is_found(query: str, start: str, end: str) -> None:
    assert period_of(query, NOW) == (_day(start), _day(end))


@pytest.mark.parametrize("query", ["May I ask what the port is?", "march through the docs"])
def test_words_that_only_look_like_months_name_no_period(query: str) -> None:
    assert period_of(query, NOW) is None


def test_three_weeks_ago_is_around_that_day() -> None:
    start, end = period_of("what happened three weeks ago", NOW) or (0.0, 0.0)
    assert start < NOW - 21 * 86400 < end < NOW


def test_a_question_naming_a_month_finds_that_months_turn(vmem: Memory, clock: Clock) -> None:
    """Two turns alike but for their day: the month in the question picks one."""
    for day in ("2023-05-14T19:00", "2023-07-09T19:00"):
        clock.now = _day(day)
        vmem.remember(
            f"Jon: Went for a long run by the river, my knee felt fine (on {day[:10]}).",
            source=Source(agent="Jon", when=clock.now),
        )
    clock.now = _day("2023-08-01")
    top = vmem.recall("How was Jon's run in July 2023?", k=1, reinforce=False)[0]
    assert "2023-07-09" in top.content
    top = vmem.recall("How was Jon's run in May 2023?", k=1, reinforce=False)[0]
    assert "2023-05-14" in top.content
