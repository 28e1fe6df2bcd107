"""Shared by the benchmark scripts: percentiles, an aligned table, a JSON results file.

Every script measures HelixFS and its baseline in the same run and writes both side by
side; nothing here asserts on timing (tests never do, and neither do benchmarks).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation, like numpy's default."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50": percentile(samples, 50),
        "p95": percentile(samples, 95),
        "mean": statistics.fmean(samples) if samples else float("nan"),
    }


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Left-aligned first column, right-aligned figures; one blank line after."""
    cells = [list(headers)] + [[fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        parts = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        print("  " + "  ".join(parts))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def environment() -> dict[str, Any]:
    try:
        git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        git = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "git": git,
        "load_average": os.getloadavg(),
    }


def write_results(name: str, doc: dict[str, Any], *, quick: bool) -> Path:
    """benchmarks/results/NAME[-quick]-TIMESTAMP.json, with the environment recorded."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS / f"{name}-{'quick-' if quick else ''}{stamp}.json"
    full = {"benchmark": name, "quick": quick, "environment": environment(), **doc}
    path.write_text(json.dumps(full, indent=2, default=str) + "\n")
    return path


def dir_bytes(path: Path) -> int:
    """Bytes the files below `path` take (apparent sizes, like `du --apparent-size -b`)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total
