"""When a commit was made, as every surface shows it (`helix log`, `.helix/log`): one
rule, so the two never show one commit at two different times."""

from __future__ import annotations

import re
import time

from helixfs.vcs.objects import Commit

_GIT_ZONE = re.compile(r"-?\d+ ([+-])(\d\d)(\d\d)")


def author_zone(commit: Commit) -> tuple[int, str]:
    """The author's UTC offset, in seconds and as `+HHMM`, for a commit that kept its
    zone (an import from git keeps the author date as `SECONDS +HHMM`); else UTC: a
    HelixFS commit keeps only UTC ns, and the daemon's own zone is not the author's."""
    git = commit.meta.get("git")
    date = git.get("author_date") if isinstance(git, dict) else None
    zone = _GIT_ZONE.fullmatch(date) if isinstance(date, str) else None
    sign, hours, minutes = zone.groups() if zone else ("+", "00", "00")
    offset = (-1 if sign == "-" else 1) * (int(hours) * 3600 + int(minutes) * 60)
    return offset, f"{sign}{hours}{minutes}"


def shown_time(commit: Commit, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """The commit's time in its author's zone (strftime `fmt`), the zone after it, as
    git shows a date: `2020-09-13 13:26 +0100`."""
    offset, zone = author_zone(commit)
    return f"{time.strftime(fmt, time.gmtime(commit.time_ns / 1e9 + offset))} {zone}"
