"""The stats page: commits per hour per branch, save latency, store size against logical
size over time, memories by type. Every figure comes from the core API: the newest
commits of every branch (the history page's walk), each commit's `latency_us`, the size
samples (sizes.py: `Repository.stats()`), `Memory.counts()`."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from helixfs.web import charts, history
from helixfs.web.html import e, page, table
from helixfs.web.site import Site
from helixfs.web.sizes import INTERVAL

HOUR = 3600
DAY_HOURS = 24
RECENT = 1000  # commits read for the commit and latency charts (the newest, all refs)
MAX_DOTS = 300  # per branch in the latency chart (evenly taken); the summary uses all
STATUS_COLOURS = {
    "active": "#2ca02c",
    "superseded": "#ff7f0e",
    "archived": "#7f7f7f",
    "forgotten": "#d62728",
}
SIZE_COLOURS = {
    "store on disk": "#d62728",
    "logical (records)": "#1f77b4",
    "files shown": "#2ca02c",
}


def recent_rows(site: Site) -> list[history.Row]:
    rows: list[history.Row] = []
    after: str | None = None
    with site.repo.lock:
        while len(rows) < RECENT:
            found = history.walk(site.repo, after, min(history.MAX_PAGE, RECENT - len(rows)))
            rows += found.rows
            if found.after is None:
                break
            after = found.after
    return rows


def stats_page(site: Site) -> str:
    rows = recent_rows(site)
    colours = {ref: history.colour(ref) for ref in {row.ref for row in rows}}
    sections = [
        _section("Commits per hour, per branch", _per_hour(rows, colours)),
        _section("Save latency (each commit's own time in the store)", _latency(rows, colours)),
        _section("Store size against logical size", _sizes(site)),
        _section("Memories by type", _memories(site)),
    ]
    note = f"<p>From the newest {len(rows):,} commits of every branch and snapshot.</p>"
    return page("Stats", note + "".join(sections), active="stats")


def _section(title: str, inner: str) -> str:
    return f'<section class="stat"><h2>{e(title)}</h2>{inner}</section>'


def _per_hour(rows: list[history.Row], colours: dict[str, str]) -> str:
    """The day up to the hour of the newest commit, each hour counted (zeros too)."""
    if not rows:
        return '<p class="empty">No commits.</p>'
    counts: dict[str, Counter[int]] = defaultdict(Counter)
    for row in rows:
        counts[row.ref][int(row.commit.time_ns // 1_000_000_000 // HOUR) * HOUR] += 1
    last = max(hour for c in counts.values() for hour in c)
    hours = [last - HOUR * i for i in reversed(range(DAY_HOURS))]
    series = {ref: [(float(h), float(c.get(h, 0))) for h in hours] for ref, c in counts.items()}
    return charts.line_chart(series, colours, unit="", label="commits per hour")


def _latency(rows: list[history.Row], colours: dict[str, str]) -> str:
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        value = row.commit.meta.get("latency_us")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            series[row.ref].append((row.commit.time_ns / 1e9, value / 1000.0))
    values = sorted(v for pts in series.values() for _, v in pts)
    series = {ref: pts[:: max(1, len(pts) // MAX_DOTS)] for ref, pts in series.items()}
    if not values:
        return '<p class="empty">No commit here records its latency.</p>'
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    p50 = statistics.median(values)
    summary = f"<p>p50 {p50:.2f} ms, p95 {p95:.2f} ms over {len(values):,} commits.</p>"
    return summary + charts.line_chart(series, colours, unit="ms", label="save latency", dots=True)


def _sizes(site: Site) -> str:
    samples = site.sizes.samples() if site.sizes is not None else []
    why = site.sizes.stopped_because if site.sizes is not None else ""
    note = f'<p class="note">{e(why)}.</p>' if why else ""
    if not samples:
        return '<p class="empty">No size sample yet (the first is taken as the server starts).</p>'
    series = {
        "store on disk": [(s.at, float(s.disk_bytes)) for s in samples],
        "logical (records)": [(s.at, float(s.logical_bytes)) for s in samples],
        "files shown": [(s.at, float(s.referenced_bytes)) for s in samples],
    }
    last = samples[-1]
    summary = (
        f"<p>Last sample: {last.disk_bytes:,} bytes on disk, {last.logical_bytes:,} bytes of"
        f" records, {last.referenced_bytes:,} bytes of files at the heads of branches and"
        f" snapshots ({len(samples):,} samples, one per {INTERVAL / 60:.0f} minutes while"
        " the web view runs).</p>"
    )
    return (
        summary + note + charts.line_chart(series, SIZE_COLOURS, unit="bytes", label="store size")
    )


def _memories(site: Site) -> str:
    counts = site.memory().counts()
    total = {status: sum(c.get(status, 0) for c in counts.values()) for status in STATUS_COLOURS}
    rows = [(e(status), e(f"{n:,}")) for status, n in total.items()]
    ordered = dict(sorted(counts.items(), key=lambda kv: -sum(kv[1].values())))
    return charts.bar_chart(ordered, STATUS_COLOURS, label="memories by type") + table(
        ("status", "memories"), rows, "counts"
    )
