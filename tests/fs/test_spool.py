"""The spool of an open file holds only what was written: every read and every store
still sees exactly the file's bytes."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from helixfs.fs import spool as spool_module
from helixfs.fs.spool import MEMORY_BUDGET, SPILL_AT, Spool, SpoolTable


class Stored:
    """The content the store holds for the file, as `Worktree.read` serves it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads = 0

    def read(self, offset: int, size: int) -> bytes:
        self.reads += size
        return self.data[offset : offset + size]


def _content(source: io.BufferedIOBase | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    source.seek(0)
    return source.read()


@pytest.mark.parametrize("seed", range(10))
def test_random_writes_truncates_and_stores_read_back_exactly(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if seed % 2:
        monkeypatch.setattr(spool_module, "SPILL_AT", 64 << 10)  # spill early, often
    rng = random.Random(seed)
    stored = Stored(rng.randbytes(rng.choice([0, 3000, 5 << 20])))
    base_holes = []  # the stored content's own holes (ZERO_CHUNK runs), for seeds 6-9
    if seed >= 6:
        stored.data = rng.randbytes(5 << 20)
    for at in range(0, len(stored.data) - 300_000, 1 << 20) if seed >= 6 else []:
        size = rng.choice([1, 4096, 300_000])
        stored.data = stored.data[:at] + bytes(size) + stored.data[at + size :]
        base_holes.append((at, at + size))
    spool = Spool(tmp_path, stored.read, len(stored.data), base_holes=base_holes)
    model = bytearray(stored.data)
    for _ in range(300):
        op = rng.random()
        if op < 0.5:
            at = rng.randrange(len(model) + 70_000)
            data = rng.randbytes(rng.choice([1, 10, 4096, 100_000]))
            spool.write(at, data)
            if at > len(model):
                model.extend(bytes(at - len(model)))
            model[at : at + len(data)] = data
        elif op < 0.6:
            size = rng.randrange(len(model) * 2 + 10)
            spool.truncate(size)
            del model[size:]
            model.extend(bytes(size - len(model)))
        elif op < 0.9:
            at = rng.randrange(len(model) + 10)
            size = rng.choice([1, 4096, 200_000])
            assert spool.read(at, size) == bytes(model[at : at + size])
        else:  # stored: the store now holds what the spool shows, as after a close
            assert _content(spool.source()) == bytes(model)
            edits = spool.edits()
            assert edits is not None
            _check_edits_cover_the_changes(stored.data, bytes(model), edits)
            for low, high in spool.holes():  # storing skips them: they must be zeros
                assert not model[low:high].strip(b"\0"), (low, high)  # (any() is too slow)
            stored.data = bytes(model)
            spool.stored()
        assert spool.size == len(model)
        # st_blocks while open: the bytes outside the holes, kept without a walk
        assert spool.data_bytes() == spool.size - sum(b - a for a, b in spool.holes())
    assert _content(spool.source()) == bytes(model)
    spool.close()


def _check_edits_cover_the_changes(old: bytes, new: bytes, edits: list[tuple[int, int]]) -> None:
    covered = bytearray(max(len(old), len(new)))
    for low, high in edits:
        covered[low:high] = b"\1" * (high - low)
    for at in range(0, min(len(old), len(new)), 997):  # sampled: the files are MBs
        if old[at] != new[at]:
            assert covered[at], f"byte {at} changed outside the edits"
    if len(old) != len(new):
        assert all(covered[min(len(old), len(new)) : max(len(old), len(new))])


def test_appending_to_a_big_file_reads_nothing_of_it(tmp_path: Path) -> None:
    stored = Stored(bytes(range(256)) * (400 << 10))  # 100 MB
    spool = Spool(tmp_path, stored.read, len(stored.data))
    spool.write(spool.size, b"one more line\n")
    assert stored.reads == 0
    assert spool.edits() == [(len(stored.data), len(stored.data) + 14)]
    assert spool.read(len(stored.data) - 2, 16) == stored.data[-2:] + b"one more line\n"
    spool.close()


def test_scattered_page_writes_read_the_stored_content_once_a_range(tmp_path: Path) -> None:
    """A close re-cuts a file of page writes through reads of a MiB: the stored bytes
    between the pages come in one read of the store, not one read a gap."""
    stored = Stored(random.Random(3).randbytes(4 << 20))
    spool = Spool(tmp_path, stored.read, len(stored.data))
    model = bytearray(stored.data)
    for at in range(10_000, 1 << 20, 50_000):  # 21 pages in the first MiB
        spool.write(at, b"p" * 4096)
        model[at : at + 4096] = b"p" * 4096
    calls = []
    spool._read_base = lambda offset, size: calls.append(size) or stored.read(offset, size)
    assert spool.read(0, 1 << 20) == bytes(model[: 1 << 20])
    assert calls == [1 << 20]
    assert spool.read(12_000, 100) == bytes(model[12_000:12_100])  # inside one page
    assert spool.read(13_000, 9_000) == bytes(model[13_000:22_000])  # one gap: as it is
    assert calls == [1 << 20, 22_000 - 14_096]
    spool.close()


def test_open_spools_share_one_memory_budget_and_the_rest_go_to_files(tmp_path: Path) -> None:
    """Each open file kept up to SPILL_AT in memory, with no bound over all of them:
    200 files held open while written took 800 MB of the daemon."""
    table = SpoolTable(tmp_path)
    count = 2 * MEMORY_BUDGET // SPILL_AT
    nodes = [object() for _ in range(count)]
    contents = [bytes([n]) * (SPILL_AT - 1) for n in range(count)]
    for node, data in zip(nodes, contents, strict=True):
        table.opened(node)
        spool = table.ensure(node, Stored(b"").read, 0)
        spool.write(0, data[:1000])
        spool.write(1000, data[1000:])
    spools = [table.get(node) for node in nodes]
    in_memory = [s for s in spools if s is not None and not s.on_disk]
    assert table.budget.used == len(in_memory) * (SPILL_AT - 1) <= MEMORY_BUDGET
    assert len(in_memory) < count
    for spool, data in zip(spools, contents, strict=True):
        assert spool is not None and _content(spool.source()) == data
    for node in nodes:
        table.closed(node)
    assert table.budget.used == 0 and len(table) == 0
