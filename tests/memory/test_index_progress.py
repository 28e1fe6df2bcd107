"""Workspace index progress (issue 30): how far a pass is, for `helix stats` and
`.helix/search`'s first line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helixfs.daemon.memoryfiles import MemoryFiles
from helixfs.memory import Memory
from helixfs.memory import workspace as ws
from helixfs.memory.db import set_meta, writing


def _files(count: int) -> dict[str, bytes]:
    return {
        f"src/mod_{i}.py": "".join(
            f"def f_{i}_{j}():\n    return {j}\n\n" for j in range(80)
        ).encode()
        for i in range(count)
    }


def test_a_pass_counts_its_passages_as_it_goes(mem: Memory) -> None:
    files = _files(ws.FILES_PER_BATCH + 6)
    seen: list[tuple[int, int] | None] = []
    index_batch = ws._index_batch

    def watching(*args: object, **kwargs: object) -> tuple[int, int, int]:
        seen.append(mem.workspace_progress())
        return index_batch(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ws, "_index_batch", watching)
        report = mem.index_workspace(files, "c1")
    total = report.chunks_added
    assert total > ws.FILES_PER_BATCH
    assert seen[0] == (0, total)  # the total is known before the first passage
    assert seen[1] is not None and 0 < seen[1][0] < total
    assert mem.workspace_progress() == (total, total)
    assert mem.stats()["workspace_index"] == {"passages_indexed": total, "passages_total": total}


def test_helix_stats_shows_the_workspace_index(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run = [sys.executable, "-m", "helixfs.cli.main", "--store", str(store)]
    subprocess.run([*run, "init"], check=True, capture_output=True)
    with Memory.open(store / "memory.db", None, warn_lexical=False) as memory:
        memory.index_workspace(_files(3), "c1")
        done, total = memory.workspace_progress() or (0, 0)
    shown = subprocess.run([*run, "stats"], check=True, capture_output=True, text=True).stdout
    assert re.search(rf"workspace_index +{done:,} of {total:,} passages", shown), shown


def test_helix_search_starts_with_the_progress_of_a_pass_under_way(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "memory.db", None, warn_lexical=False) as memory:
        memory.remember("The dev server runs on port 8080.")
        with writing(memory._conn):
            set_meta(memory._conn, ws.PROGRESS, "1200 3480")
    files = MemoryFiles(tmp_path)
    try:
        answer = files.search("dev server port")
    finally:
        files.close()
    assert answer.splitlines()[0] == "# workspace index: 1,200 of 3,480 passages"
    assert "port 8080" in answer


def test_the_files_named_first_are_indexed_first(mem: Memory) -> None:
    files = _files(ws.FILES_PER_BATCH * 2 + 3)
    wanted = ["src/mod_130.py", "src/mod_7.py", "no/such/file.py"]
    batches: list[list[str]] = []
    index_batch = ws._index_batch

    def watching(conn: object, lock: object, batch: list[tuple[str, str, str]], *rest: object):  # type: ignore[no-untyped-def]
        batches.append([path for path, _, _ in batch])
        return index_batch(conn, lock, batch, *rest)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ws, "_index_batch", watching)
        report = mem.index_workspace(files, "c1", first=wanted)
    assert batches[0][:2] == ["src/mod_130.py", "src/mod_7.py"]
    assert sorted(p for b in batches for p in b) == sorted(files)
    assert report.files_indexed == len(files)
