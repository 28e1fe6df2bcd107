"""Inline SVG charts: lines over time, and stacked bars. No script, no library."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from helixfs.web.html import e

W, H = 720, 240  # the drawing, in px
LEFT, RIGHT, TOP, BOTTOM = 64, 32, 12, 40  # margins for the axes' labels

Points = Sequence[tuple[float, float]]


class Scale:
    """A linear map of values [lo, hi] onto pixels [start, end]."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        self.lo, self.span = lo, (hi - lo) or 1.0
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / self.span * (self.end - self.start)


def line_chart(
    series: Mapping[str, Points],
    colours: Mapping[str, str],
    *,
    unit: str,
    label: str,
    dots: bool = False,
) -> str:
    """x: unix seconds; y: values in `unit`. One polyline (or dots) per series."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return f'<p class="empty">No data yet for {e(label)}.</p>'
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y1 = max(max(p[1] for p in points), 1e-9) * 1.1
    x1 = x1 if x1 > x0 else x0 + 1
    sx, sy = Scale(x0, x1, LEFT, W - RIGHT), Scale(0, y1, H - BOTTOM, TOP)
    marks: list[str] = []
    for name, pts in series.items():
        stroke = colours.get(name, "#444")
        if dots or len(pts) == 1:
            marks += [
                f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{stroke}"/>'
                for x, y in pts
            ]
        else:
            coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(pts))
            marks.append(
                f'<polyline points="{coords}" fill="none" stroke="{stroke}" stroke-width="2"/>'
            )
    axes = _axes(x0, x1, y1, unit, sx, sy)
    return _svg(label, axes + "".join(marks)) + legend(list(series), colours)


def bar_chart(
    bars: Mapping[str, Mapping[str, int]], colours: Mapping[str, str], *, label: str
) -> str:
    """One bar per key, stacked by its parts (e.g. memory type -> status -> count)."""
    if not bars:
        return f'<p class="empty">No data yet for {e(label)}.</p>'
    top = max(sum(parts.values()) for parts in bars.values()) * 1.1 or 1
    slot = (W - LEFT - RIGHT) / len(bars)
    sy = Scale(0, top, H - BOTTOM, TOP)
    marks: list[str] = []
    parts_seen: list[str] = []
    for i, (name, parts) in enumerate(bars.items()):
        x = LEFT + i * slot + slot * 0.15
        base = 0.0
        for part, count in parts.items():
            if part not in parts_seen:
                parts_seen.append(part)
            y_top, y_base = sy(base + count), sy(base)
            marks.append(
                f'<rect x="{x:.1f}" y="{y_top:.1f}" width="{slot * 0.7:.1f}"'
                f' height="{y_base - y_top:.1f}" fill="{colours.get(part, "#888")}">'
                f"<title>{e(name)} {e(part)}: {count:,}</title></rect>"
            )
            base += count
        middle = f'x="{x + slot * 0.35:.1f}" text-anchor="middle"'
        marks.append(
            f'<text {middle} y="{H - BOTTOM + 14}">{e(name)}</text>'
            f'<text {middle} y="{sy(base) - 3:.1f}">{base:,.0f}</text>'
        )
    axis = f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" stroke="#999"/>'
    return _svg(label, axis + "".join(marks)) + legend(parts_seen, colours)


def legend(names: Sequence[str], colours: Mapping[str, str]) -> str:
    items = "".join(
        f'<span><i style="background:{colours.get(n, "#888")}"></i>{e(n)}</span>' for n in names
    )
    return f'<p class="chart-legend">{items}</p>'


def _svg(label: str, inner: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"'
        f' aria-label="{e(label)}">{inner}</svg>'
    )


def _axes(x0: float, x1: float, y1: float, unit: str, sx: Scale, sy: Scale) -> str:
    out = [
        f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" stroke="#999"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}" stroke="#999"/>',
    ]
    for i in range(5):
        y = y1 / 1.1 * i / 4
        out.append(
            f'<text x="{LEFT - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">'
            f"{e(_amount(y, unit))}</text>"
            f'<line x1="{LEFT}" y1="{sy(y):.1f}" x2="{W - RIGHT}" y2="{sy(y):.1f}" stroke="#eee"/>'
        )
    span = x1 - x0
    fmt = "%H:%M:%S" if span < 3600 else "%H:%M" if span < 2 * 86400 else "%m-%d"
    for i in range(5):
        x = x0 + (x1 - x0) * i / 4
        out.append(
            f'<text x="{sx(x):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">'
            f"{e(time.strftime(fmt, time.gmtime(x)))}</text>"
        )
    out.append(f'<text x="{W - RIGHT}" y="{H - 6}" text-anchor="end">UTC</text>')
    return "".join(out)


def _amount(value: float, unit: str) -> str:
    if unit == "bytes":
        for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= size:
                return f"{value / size:.1f} {name}"
        return f"{value:.0f} B"
    return f"{value:.3g} {unit}".strip()
