"""What an operator watches beside the store's sizes (`helix stats`): commits per hour
by branch, active branches and snapshots, and every cache's hit ratio.

Cheap by design: the walks stop at the first commit older than a day (first parents,
newest first), the cache and RocksDB figures are counters kept in memory. No scan of
the objects: `Repository.stats` already does that one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from helixfs.errors import HelixError
from helixfs.vcs import retention

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS


@dataclass(frozen=True)
class BranchActivity:
    branch: str
    last_hour: int  # commits made in the last hour
    last_day: int  # ... in the last 24 hours (so per hour: last_day / 24)


def branch_activity(repo: Repository, now_ns: int | None = None) -> list[BranchActivity]:
    """Per branch, the commits of the last hour and day on its first-parent line."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    found = []
    for info in repo.branches():
        hour = day = 0
        try:
            for commit in repo.log(info.commit.hex()):
                if commit.time_ns < now_ns - DAY_NS:
                    break
                day += 1
                hour += commit.time_ns >= now_ns - HOUR_NS
        except HelixError:
            pass  # an unreadable history: `problems` of the store stats names it
        found.append(BranchActivity(info.name, hour, day))
    return found


def summary(repo: Repository, now_ns: int | None = None) -> dict[str, Any]:
    """The activity figures, as one JSON-able document."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    with repo.lock:
        branches = branch_activity(repo, now_ns)
        ages = retention.ages(repo)
    ttl = float(repo.settings["gc.snapshot_ttl"])
    expiring = retention.expired(repo, ttl) if ttl > 0 else []
    return {
        "commits_last_hour": sum(b.last_hour for b in branches),
        "commits_last_day": sum(b.last_day for b in branches),
        "commits_per_hour_last_day": round(sum(b.last_day for b in branches) / 24, 2),
        "per_branch": {
            b.branch: {"last_hour": b.last_hour, "last_day": b.last_day} for b in branches
        },  # fmt: skip
        "active_branches": sum(1 for b in branches if b.last_day),
        "snapshots": len(ages),
        "snapshots_pinned": sum(1 for a in ages if a.pinned),
        "snapshots_expired": len(expiring),  # past gc.snapshot_ttl: the next gc takes them
        "active_snapshots": len(ages) - len(expiring),
    }


def caches(repo: Repository) -> dict[str, dict[str, float]]:
    """Each in-process cache: bytes held, bound, hits, misses, hit ratio."""
    figures: dict[str, dict[str, float]] = {}
    extra = _store_counters(repo)
    for name in ("frame", "record"):
        if f"{name}_cache_hits" in extra:
            figures[f"{name}s"] = _cache(
                extra[f"{name}_cache_bytes"],
                extra.get(f"{name}_cache_limit_bytes", 0),
                extra[f"{name}_cache_hits"],
                extra[f"{name}_cache_misses"],
            )
    blobs = repo.contents.records
    figures["blobs"] = _cache(blobs.size_bytes, blobs.max_bytes, blobs.hits, blobs.misses)
    return figures


def _store_counters(repo: Repository) -> dict[str, int]:
    counters = getattr(repo.store, "cache_counters", None)  # RocksStore's; others: none
    return dict(counters()) if counters is not None else {}


def _cache(held: int, limit: int, hits: int, misses: int) -> dict[str, float]:
    total = hits + misses
    ratio = round(hits / total, 4) if total else 0.0
    return {"bytes": held, "limit_bytes": limit, "hits": hits, "misses": misses,
            "hit_ratio": ratio}  # fmt: skip
