"""The period a query names ("in May 2023", "last week", "three days ago"), if any.

A memory's event time is `source_time` (when its source observed it: the session a turn
was said in, `Source.when`), stored as a number, not only as words in its text. A query
that names a period boosts the memories whose event time falls in it (ranking.py):
"How did Jon's race go in July 2023?" finds the July turn that says "I did it!
Finished the marathon", which names no month at all.
"""

from __future__ import annotations

import datetime as dt
import re

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
# "May" alone is too common a word: a month needs "in"/"during"/"of"/"since" before it,
# or a year after it.
_MONTH = re.compile(
    rf"(?i)\b(?:(?:in|during|of|since|early|late|mid)\s+(?P<m1>{_MONTH_NAMES})\b(?:\s+"
    rf"(?P<y1>(?:19|20)\d\d))?|(?P<m2>{_MONTH_NAMES})\s+(?P<y2>(?:19|20)\d\d)\b)"
)
_YEAR = re.compile(r"(?i)\b(?:in|during|since)\s+(?P<y>(?:19|20)\d\d)\b")
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_AGO = re.compile(
    r"(?i)\b(?P<n>\d+|a|one|two|three|four|five|six)\s+(?P<unit>day|week|month)s?\s+ago\b"
)
_LAST = re.compile(r"(?i)\b(?:last|past)\s+(?P<unit>week|month|year)\b|\b(?P<y>yesterday)\b")
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_DAY = 86400.0

Period = tuple[float, float]  # unix seconds, [start, end)


def period_of(query: str, now: float) -> Period | None:
    """The span of time the query asks about, or None when it names none."""
    match = _MONTH.search(query)
    if match:
        month = _MONTHS[(match.group("m1") or match.group("m2")).lower()]
        year_text = match.group("y1") or match.group("y2")
        return _month(month, int(year_text) if year_text else None, now)
    match = _YEAR.search(query)
    if match:
        year = int(match.group("y"))
        return _stamp(dt.date(year, 1, 1)), _stamp(dt.date(year + 1, 1, 1))
    match = _AGO.search(query)
    if match:
        count = (
            int(match.group("n"))
            if match.group("n").isdigit()
            else _NUMBERS[match.group("n").lower()]
        )
        days = count * _UNIT_DAYS[match.group("unit").lower()]
        centre = now - days * _DAY
        slack = max(1.0, days * 0.25) * _DAY
        return centre - slack, centre + slack
    match = _LAST.search(query)
    if match:
        days = 1 if match.group("y") else _UNIT_DAYS[match.group("unit").lower()]
        return now - 2 * days * _DAY, now
    return None


def _month(month: int, year: int | None, now: float) -> Period:
    """That month of `year`, or its latest occurrence up to now."""
    today = dt.datetime.fromtimestamp(now, dt.UTC).date()
    if year is None:
        year = today.year if month <= today.month else today.year - 1
    start = dt.date(year, month, 1)
    end = dt.date(year + month // 12, month % 12 + 1, 1)
    return _stamp(start), _stamp(end)


def _stamp(day: dt.date) -> float:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()


def within(period: Period | None, when: float | None) -> bool:
    return period is not None and when is not None and period[0] <= when < period[1]
