"""Workspace knowledge: chunking, indexing, search by passage, the BLAKE3 embedding cache."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import apsw
import pytest

from helixfs.errors import InvalidInput
from helixfs.memory import Memory
from helixfs.memory.workspace import MAX_LINES, chunk_text


def _module(name: str, functions: int) -> bytes:
    parts = [f'"""The {name} module."""\n']
    for i in range(functions):
        parts.append(
            f"\n\ndef {name}_step_{i}(value):\n"
            f"    # step {i} of the {name} pipeline\n"
            f"    result = value + {i}\n"
            f"    return result\n"
        )
    return "".join(parts).encode()


BRANCH_MAIN = {
    "src/auth.py": b'def refresh_token(session):\n    """Renew the OAuth token."""\n'
    b"    return session.renew()\n",
    "src/billing.py": _module("billing", 12),
    "docs/setup.md": b"# Setup\n\nInstall with `pip install -e .` then run `helix init`.\n",
}
BRANCH_FEATURE = {
    "src/auth.py": BRANCH_MAIN["src/auth.py"] + b"\n\ndef revoke(session):\n    pass\n",
    "src/billing.py": BRANCH_MAIN["src/billing.py"],
    "src/search.py": _module("search", 5),
}


def test_chunks_cover_the_file_with_true_line_ranges() -> None:
    text = _module("alpha", 30).decode()
    lines = text.splitlines()
    chunks = chunk_text(text)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.end_line - chunk.start_line < MAX_LINES
        body = "\n".join(lines[chunk.start_line - 1 : chunk.end_line]).strip("\n")
        assert body == chunk.text
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert {i + 1 for i, line in enumerate(lines) if line.strip()} <= covered


def test_search_finds_passages_with_path_and_lines(mem: Memory) -> None:
    mem.index_workspace(BRANCH_MAIN, "c1")
    hit = mem.search("refresh token")[0]
    assert (hit.kind, hit.path, hit.start_line, hit.end_line) == ("chunk", "src/auth.py", 1, 3)
    assert hit.commit_id == "c1"
    assert mem.search("pip install")[0].path == "docs/setup.md"
    assert mem.recall("refresh token") == []  # recall is memories only


def test_search_by_meaning_with_vectors(vmem: Memory) -> None:
    vmem.index_workspace(BRANCH_MAIN, "c1")
    assert vmem.search("how do I renew an expired login credential")[0].path == "src/auth.py"


def test_switching_branches_never_embeds_the_same_text_twice(vmem: Memory) -> None:
    first = vmem.index_workspace(BRANCH_MAIN, "c1")
    assert first.embedded == first.chunks_added > 0
    feature = vmem.index_workspace(BRANCH_FEATURE, "c2")
    assert feature.files_removed == 1  # docs/setup.md
    assert feature.files_indexed == 2  # auth.py changed, search.py new; billing unchanged
    back = vmem.index_workspace(BRANCH_MAIN, "c3")
    assert back.embedded == 0
    assert back.cache_hits == back.chunks_added
    again = vmem.index_workspace(BRANCH_FEATURE, "c4")
    assert again.embedded == 0
    assert vmem.embed_count == first.embedded + feature.embedded


def test_identical_text_in_two_files_is_embedded_once(vmem: Memory) -> None:
    report = vmem.index_workspace({"a.py": b"print('same')\n", "b.py": b"print('same')\n"}, "c1")
    assert (report.chunks_added, report.embedded) == (2, 1)


def test_removed_files_leave_the_index(mem: Memory) -> None:
    mem.index_workspace(BRANCH_MAIN, "c1")
    mem.index_workspace(BRANCH_FEATURE, "c2")
    assert all(h.path != "docs/setup.md" for h in mem.search("pip install helix init"))
    assert mem.stats()["chunks"] > 0


def test_unchanged_files_are_skipped(mem: Memory) -> None:
    mem.index_workspace(BRANCH_MAIN, "c1")
    report = mem.index_workspace(BRANCH_MAIN, "c2")
    assert (report.files_indexed, report.chunks_added, report.chunks_removed) == (0, 0, 0)
    assert mem.search("refresh token")[0].commit_id == "c2"


def test_binary_and_non_utf8_files_are_not_indexed(mem: Memory) -> None:
    report = mem.index_workspace(
        {
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "latin1.txt": "café".encode("latin-1"),
            "ok.txt": b"plain text file about caching\n",
        },
        "c1",
    )
    assert (report.files_seen, report.chunks_added) == (1, 1)


@pytest.mark.parametrize(
    ("files", "commit"),
    [
        ([("a.py", b"x")], "c1"),
        ({"a.py": "not bytes"}, "c1"),
        ({"": b"x"}, "c1"),
        ({"a.py": b"x"}, ""),
    ],
)
def test_bad_workspace_input_is_refused(mem: Memory, files: object, commit: str) -> None:
    with pytest.raises(InvalidInput):
        mem.index_workspace(files, commit)  # type: ignore[arg-type]
    assert mem.stats()["chunks"] == 0


def test_a_diff_updates_the_index_like_a_full_pass(mem: Memory) -> None:
    mem.index_workspace(BRANCH_MAIN, "c1")
    # main -> feature as a diff: auth.py changed, search.py added, setup.md removed
    changed = {p: BRANCH_FEATURE[p] for p in ("src/auth.py", "src/search.py")}
    report = mem.index_workspace(changed, "c2", removed=["docs/setup.md"])
    assert (report.files_indexed, report.files_removed) == (2, 1)
    assert all(h.path != "docs/setup.md" for h in mem.search("pip install helix init"))
    assert mem.search("revoke session")[0].path == "src/auth.py"
    billing = mem.search("billing pipeline step")[0]
    assert (billing.path, billing.commit_id) == ("src/billing.py", "c2")  # untouched, kept
    full = mem.index_workspace(BRANCH_FEATURE, "c3")  # a full pass finds nothing to do
    assert (full.files_indexed, full.files_removed) == (0, 0)


def test_a_one_file_pass_writes_that_file_only_whatever_the_workspace_size(mem: Memory) -> None:
    """Each pass set every chunk's commit id: 43 MB written per one-line change at
    50,000 chunks (the daemon indexes after saves). The commit is now one meta row."""
    workspace = {f"pkg/mod{n}.py": _module(f"mod{n}", 12) for n in range(100)}
    mem.index_workspace(workspace, "c1")
    before = mem._conn.total_changes()
    mem.index_workspace({"pkg/mod7.py": _module("renamed", 12)}, "c2", removed=[])
    chunks = len(chunk_text(_module("renamed", 12).decode()))
    assert mem._conn.total_changes() - before < 10 * chunks  # not the 100 files' chunks
    assert {h.commit_id for h in mem.search("step pipeline", k=20)} == {"c2"}


def test_a_pass_over_lazy_files_reads_them_batch_by_batch(mem: Memory, db_path: Path) -> None:
    """The daemon hands a full pass the commit's files as a lazy mapping; the pass read
    them all before writing any (+228 MB of RSS for 95 MB of sources, 38 MB now)."""
    from helixfs.memory.workspace import FILES_PER_BATCH

    contents = {f"m{n:03}.py": _module(f"m{n}", 3) for n in range(FILES_PER_BATCH + 2)}
    watcher = apsw.Connection(str(db_path))
    chunks_when_read: dict[str, int] = {}

    class Lazy(Mapping[str, bytes]):
        def __getitem__(self, name: str) -> bytes:
            (count,) = watcher.execute("SELECT count(*) FROM chunks").fetchone()
            chunks_when_read[name] = count  # the last read of it is the one indexed
            return contents[name]

        def __iter__(self) -> Iterator[str]:
            return iter(contents)

        def __len__(self) -> int:
            return len(contents)

    try:
        mem.index_workspace(Lazy(), "c1")
    finally:
        watcher.close()
    last = sorted(contents)[-1]
    assert chunks_when_read[sorted(contents)[0]] == 0 and chunks_when_read[last] > 0
    assert mem.stats()["chunks"] == sum(len(chunk_text(t.decode())) for t in contents.values())


def test_passages_of_a_pass_that_failed_midway_say_their_commit(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass writes its files in batches: until it completes, the passages it wrote are
    from its commit, and the others from the last complete pass's."""
    from helixfs.memory import workspace

    mem.index_workspace({"old.py": _module("legacy", 3)}, "c1")
    changed = {
        f"new{n:03}.py": _module(f"fresh{n}", 3) for n in range(workspace.FILES_PER_BATCH + 1)
    }
    batches = workspace._index_batch

    def second_batch_fails(*args: object, **kwargs: object) -> tuple[int, int, int]:
        if args[2][0][0] != "new000.py":  # type: ignore[index]
            raise OSError("disk full")
        return batches(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(workspace, "_index_batch", second_batch_fails)
    with pytest.raises(OSError):
        mem.index_workspace(changed, "c2", removed=[])
    monkeypatch.undo()
    assert mem.search("fresh0 pipeline")[0].commit_id == "c2"
    assert mem.search("legacy pipeline")[0].commit_id == "c1"
    mem.index_workspace({**changed, "old.py": _module("legacy", 3)}, "c3")
    assert {h.commit_id for h in mem.search("pipeline step", k=50)} == {"c3"}


def test_a_changed_file_that_is_no_longer_text_leaves_the_index(mem: Memory) -> None:
    mem.index_workspace(BRANCH_MAIN, "c1")
    report = mem.index_workspace({"src/auth.py": b"\x00\x01binary"}, "c2", removed=[])
    assert report.files_removed == 1
    assert all(h.path != "src/auth.py" for h in mem.search("refresh token"))
    with pytest.raises(InvalidInput, match="removed"):
        mem.index_workspace({}, "c3", removed=[""])
