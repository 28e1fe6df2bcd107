"""Shared by the benchmark scripts: percentiles, an aligned table, a JSON results file.

Every script measures HelixFS and its baseline in the same run and writes both side by
side; nothing here asserts on timing (tests never do, and neither do benchmarks).
"""

from __future__ import annotations

import json
import mmap
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
_POPULATE_WRITE = 23  # Linux's MADV_POPULATE_WRITE (5.14+): the kernel faults the range in
_TOUCHED = Path("/dev/shm")  # a marker per boot: the touch is needed once


def touch_guest_memory(keep_free: int = 2 << 30) -> None:
    """Touch the machine's free memory once per boot, before anything is timed.

    A VM's host backs a guest page only when the guest first touches it. On a freshly
    booted VM the page cache of the first big read (and a spool's memory) lands on such
    pages: a 1 GiB cold read through HelixFS gave 377-408 MB/s (daemon CPU 2.25-2.42 s,
    57% of it in the kernel's copy to the pages) and 750-855 MB/s once 18 GiB had been
    touched, the same as every later read (2026-12-04). Whichever side of a benchmark
    ran first paid it alone.
    """
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    marker = _TOUCHED / f"helix-bench-touched-{boot}"
    if marker.exists():
        return
    available = next(
        int(line.split()[1]) << 10
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemAvailable:")
    )
    size = max(0, available - keep_free) & ~(mmap.PAGESIZE - 1)
    start = time.perf_counter()
    blocks = []  # all held until the end: a block freed first would be touched again
    try:
        for at in range(0, size, 1 << 30):
            block = mmap.mmap(-1, min(1 << 30, size - at))
            blocks.append(block)
            try:
                block.madvise(_POPULATE_WRITE)
            except OSError:  # an older kernel: one write a page
                block[:: mmap.PAGESIZE] = b"\1" * (len(block) // mmap.PAGESIZE)
    finally:
        for block in blocks:
            block.close()
    marker.touch()
    took = time.perf_counter() - start
    print(f"guest memory: {size >> 30} GiB touched once this boot ({took:.1f} s)", flush=True)


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
