"""kill -9 in the middle of work loses nothing that returned: real RocksDB, real SIGKILL."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helixfs.ids import ObjectId
from helixfs.store.rocks import RocksStore
from helixfs.vcs import Repository, journal, treeops

from .chains import chain_problems

pytestmark = pytest.mark.timeout(120)

COMMIT_STREAM = """
import sys
from helixfs.vcs import Repository
repo = Repository.open(sys.argv[1])
i = 0
while True:
    cid = repo.commit({f"dir{i % 7}/file{i % 50}.txt".encode(): (f"version {i}\\n" * 300).encode()},
                      f"commit {i}", {"i": i})
    print(cid.hex(), flush=True)
    i += 1
"""

WORKTREE_STREAM = """
import sys
from helixfs.vcs import Repository
repo = Repository.open(sys.argv[1])
tree = repo.worktree("main")
i = 0
while True:
    node = tree.create(tree.root, f"w{i}.txt".encode())
    tree.set_content(node, f"worktree {i}\\n".encode() * 100)
    if i % 3 == 0:
        print("commit", tree.commit().hex(), flush=True)
    else:
        tree.save()
        print("saved", i, flush=True)
    i += 1
"""


def _run_then_kill(script: str, store: Path, lines: int, until: str | None = None) -> list[str]:
    """Kill the writer once it printed `lines` lines (or the line `until`)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(store)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        while len(seen) < lines or (until is not None and until not in seen):
            line = proc.stdout.readline()
            assert line.endswith("\n"), f"writer died early: {proc.wait()}"
            seen.append(line.strip())
        proc.send_signal(signal.SIGKILL)
        # What it printed before dying, but only whole lines: under PYTHONUNBUFFERED
        # (set on our machines) print() writes each argument and the newline on its own,
        # so the kill can cut a line after "commit", before the id.
        rest = proc.stdout.read()
        seen.extend(line.strip() for line in rest.splitlines(keepends=True) if line.endswith("\n"))
    finally:
        proc.kill()
        proc.wait()
    return seen


CUT_LINE = """
import os, time
os.write(1, b"saved 0\\ncommit")  # a print cut short by the kill, as under PYTHONUNBUFFERED
time.sleep(600)
"""


def test_a_line_cut_by_the_kill_is_not_taken_as_printed(tmp_path: Path) -> None:
    assert _run_then_kill(CUT_LINE, tmp_path, 1) == ["saved 0"]


def test_sigkill_mid_commit_stream_loses_no_returned_commit(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Repository.init(store).close()
    printed = _run_then_kill(COMMIT_STREAM, store, 200)
    with Repository.open(store) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        history = {c.id.hex() for c in repo.log()}
        for cid in printed:
            assert repo.store.contains(ObjectId(bytes.fromhex(cid)))
            assert cid in history
        last = repo.commit_info(printed[-1])
        assert repo.read(printed[-1], f"dir{last.meta['i'] % 7}/file{last.meta['i'] % 50}.txt")


def test_sigkill_after_save_recovers_and_commits_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Repository.init(store).close()
    printed = _run_then_kill(WORKTREE_STREAM, store, 40)
    saved = [int(line.split()[1]) for line in printed if line.startswith("saved")]
    committed = [line.split()[1] for line in printed if line.startswith("commit")]
    with Repository.open(store) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        history = {c.id.hex() for c in repo.log()}
        assert set(committed) <= history
        names = {e.name for e in repo.ls()}
        for i in saved:
            assert f"w{i}.txt".encode() in names
            assert repo.read("HEAD", f"w{i}.txt") == f"worktree {i}\n".encode() * 100
        assert repo.recover() == []  # the open left nothing pending
        if printed[-1].startswith("saved"):
            # saved work is committed on open, unless a commit slipped in before the kill
            assert repo.commit_info("HEAD").message in ("recovered pending changes", "save 3 paths")


SAVE_THEN_WAIT = """
import sys, time
from helixfs.vcs import Repository
repo = Repository.open(sys.argv[1])
tree = repo.worktree("main")
docs = tree.mkdir(tree.root, b"docs")
tree.set_content(tree.create(docs, b"plan.md"), b"saved, never committed")
tree.save()
print("saved", flush=True)
time.sleep(600)
"""


def test_sigkill_right_after_save_commits_it_on_open(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Repository.init(store).close()
    _run_then_kill(SAVE_THEN_WAIT, store, 1)
    with Repository.open(store) as repo:
        head = repo.commit_info("HEAD")
        assert head.message == "recovered pending changes" and head.meta["recovered"] is True
        assert head.meta["changed"] == ["docs"]  # a new directory: its path covers it all
        assert repo.read("HEAD", "docs/plan.md") == b"saved, never committed"
        assert repo.fsck().ok


GC_BESIDE_COMMITS = """
import os, sys, threading
from helixfs.vcs import Repository
repo = Repository.open(sys.argv[1])

def collect():
    while True:
        repo.gc()

threading.Thread(target=collect, daemon=True).start()
i = 0
while True:
    data = (f"version {i}\\n" * (1 + i % 3000)).encode()  # chunked now and then
    cid = repo.commit({f"f{i % 9}".encode(): data}, f"c{i}", {"i": i})
    if i % 4 == 0:  # garbage for the gc: a branch made and deleted
        repo.create_branch("tmp")
        repo.commit({b"junk": os.urandom(60_000)}, "junk", branch="tmp")
        repo.delete_branch("tmp")
    print(cid.hex(), flush=True)
    i += 1
"""


@pytest.mark.parametrize("lines", [40, 120, 300])
def test_sigkill_while_gc_runs_beside_commits_loses_nothing(tmp_path: Path, lines: int) -> None:
    """gc deletes in batches while commits go on (ADR 0024): killed anywhere in that,
    the store is whole and every commit that returned reads back."""
    store = tmp_path / "store"
    Repository.init(store).close()
    printed = _run_then_kill(GC_BESIDE_COMMITS, store, lines)
    with Repository.open(store) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        for cid in printed:
            i = repo.commit_info(cid).meta["i"]
            assert repo.read(cid, f"f{i % 9}") == (f"version {i}\n" * (1 + i % 3000)).encode()
        repo.gc()
        assert repo.fsck().ok


GC_PRINTING_BATCHES = """
import sys
from helixfs.store import rocks
from helixfs.vcs import Repository

batch = rocks.RocksStore._repack_batch

def batch_then_say_so(self, pairs):
    packed = batch(self, pairs)
    print("batch", packed, flush=True)
    return packed

rocks.RocksStore._repack_batch = batch_then_say_so
with Repository.open(sys.argv[1]) as repo:
    print("gc", repo.gc().repacked, flush=True)
"""

BIG_FOLDERS = [[f"pkg{d}/mod_{n:03}.py" for n in range(120)] for d in range(3)]


def _long_history(store: Path) -> dict[str, dict[str, bytes]]:
    """900 saves in three folders of 120 files (one in ten touches two), a side
    branch, a revert: each commit's id -> the files it wrote."""
    written: dict[str, dict[str, bytes]] = {}
    with Repository.init(store) as repo:
        files = {name: b"%s = 0\n" % name.encode() for names in BIG_FOLDERS for name in names}
        written[repo.commit(files, "project").hex()] = files
        for n in range(900):
            folder = BIG_FOLDERS[n % 3]
            changes = {folder[(n * 7) % 120]: b"x = %d\n" % n}
            if n % 10 == 0:
                changes[BIG_FOLDERS[(n + 1) % 3][n % 120]] = b"y = %d\n" % n
            branch = "side" if 400 <= n < 500 else "main"
            if n == 400:
                repo.create_branch("side", "HEAD")
            written[repo.commit(changes, f"save {n}", branch=branch).hex()] = changes
        undo = repo.commit_tree(repo.commit_info("HEAD~20").tree, "back to an older tree")
        written[undo.hex()] = {}
    return written


def _every_listing(repo: Repository) -> dict[str, list[tuple[bytes, object]]]:
    commits = {c.id for ref in ("main", "side") for c in repo.log(ref, first_parent=False)}
    return {cid.hex(): list(repo.trees.walk(repo.commit_info(cid).tree)) for cid in commits}


@pytest.mark.timeout(600)
def test_sigkill_in_the_middle_of_a_repack_loses_nothing_and_a_later_gc_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gc re-encodes trees as deltas in batches (ADR 0027). Killed between or inside
    them, again and again: the store is clean, every commit reads as before, no chain
    is too long, and a last gc packs all that an uninterrupted one packs. (The history
    is written without patches, ADR 0095, so that its folders are RAW for gc to pack,
    as a store's from before them are.)"""
    store, untouched = tmp_path / "store", tmp_path / "untouched"
    monkeypatch.setattr(treeops, "PATCH_FROM", 1 << 62)
    written = _long_history(store)
    monkeypatch.undo()
    shutil.copytree(store, untouched)
    with Repository.open(store) as repo:
        listings = _every_listing(repo)
    rng = random.Random(27)
    for _ in range(3):
        printed = _run_then_kill(GC_PRINTING_BATCHES, store, rng.randint(1, 3))
        assert not any(line.startswith("gc") for line in printed), "gc finished: kill sooner"
        with Repository.open(store) as repo:
            assert repo.fsck().ok, repo.fsck().problems[:3]
            assert chain_problems(repo.store) == []
            assert _every_listing(repo) == listings
            for cid, files in written.items():
                assert all(repo.read(cid, path) == data for path, data in files.items())
    with Repository.open(untouched) as repo:
        repo.gc()
        packed = repo.store.stats().extra["delta_objects"]
    with Repository.open(store) as repo:
        assert repo.gc().repacked
        assert repo.fsck().ok and chain_problems(repo.store) == []
        assert repo.store.stats().extra["delta_objects"] == packed
        assert repo.gc().repacked == 0
        assert _every_listing(repo) == listings


# Each step changes the work tree in a way a journal must carry (a new folder with a file,
# a folder renamed while its content is unsaved, a file removed, a file rewritten and
# chmodded), then saves. `_journal_model(n)` is the state after n steps.
JOURNAL_STREAM = """
import sys, time
from helixfs.vcs import Repository, journal
repo = Repository.open(sys.argv[1])
tree = repo.worktree("main")
i = 0
while True:
    kind = i % 4
    if kind == 0:
        folder = tree.mkdir(tree.root, b"n%d" % i)
        tree.set_content(tree.create(folder, b"f"), b"new %d" % i)
    elif kind == 1:
        folder = tree.mkdir(tree.root, b"tmp%d" % i)
        tree.set_content(tree.create(folder, b"g"), b"moved %d" % i)
        tree.rename(tree.root, b"tmp%d" % i, tree.root, b"moved%d" % i)
    elif kind == 2:
        tree.unlink(tree.lookup(tree.root, b"n%d" % (i - 2)), b"f")
    else:
        node = tree.lookup(tree.lookup(tree.root, b"moved%d" % (i - 2)), b"g")
        tree.set_content(node, b"rewritten %d" % i)
        tree.set_attrs(node, mode=0o600)
    tree.save()
    print("saved", i, flush=True)
    if i >= 29 and journal.has_journal(repo.store.ref("work/main")):
        # parked between two journal records, for the kill: a save past 29 may fold
        # (JOURNAL_MAX), and a kill sent after the line could land after a fold
        print("parked", flush=True)
        time.sleep(3600)
    i += 1
"""


def _journal_model(steps: int) -> dict[str, tuple[bytes, int]]:
    files: dict[str, tuple[bytes, int]] = {}
    for i in range(steps):
        kind = i % 4
        if kind == 0:
            files[f"n{i}/f"] = (b"new %d" % i, 0o100644)
        elif kind == 1:
            files[f"moved{i}/g"] = (b"moved %d" % i, 0o100644)
        elif kind == 2:
            del files[f"n{i - 2}/f"]
        else:
            files[f"moved{i - 2}/g"] = (b"rewritten %d" % i, 0o100600)
    return files


def test_sigkill_between_journal_records_loses_no_saved_change(tmp_path: Path) -> None:
    """Saves write journals, not trees (ADR 0032): killed between two of them, the open
    replays the last one, and the recovered commit holds every saved change."""
    store = tmp_path / "store"
    Repository.init(store).close()
    printed = _run_then_kill(JOURNAL_STREAM, store, 0, until="parked")
    last = max(int(line.split()[1]) for line in printed if line.startswith("saved"))
    raw = RocksStore(store / "objects")
    try:
        saved = raw.ref("work/main")
    finally:
        raw.close()
    assert saved is not None and journal.has_journal(saved)  # not folded: a journal to replay
    with Repository.open(store) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        head = repo.commit_info("HEAD")
        assert head.message == "recovered pending changes"
        found = {
            path.decode(): (repo.contents.read(entry.oid), entry.mode)
            for path, entry in repo.trees.walk(head.tree)
            if not entry.is_dir()
        }
        assert found == _journal_model(last + 1)  # killed parked after save `last`
        assert repo.store.ref("work/main") is None or not journal.has_journal(
            repo.store.ref("work/main")
        )


OVERLAY_STREAM = """
import sys, time
from helixfs.vcs import Repository, journal
repo = Repository.open(sys.argv[1])
park = int(sys.argv[2])
tree = repo.worktree("main")

def folder(name):
    try:
        return tree.lookup(tree.root, name)
    except Exception:
        return tree.mkdir(tree.root, name)

def write(folder_name, name, data):
    parent = folder(folder_name)
    try:
        node = tree.lookup(parent, name)
    except Exception:
        node = tree.create(parent, name)
    tree.set_content(node, data)

write(b"src", b".gitignore", b"*.o\\n")
tree.set_content(tree.create(tree.root, b".gitignore"), b"/build/\\n")
tree.commit()
i = 0
while True:
    write(b"src", b"f%d.c" % (i % 5), b"c %d" % i)
    if i % 3 == 0:
        write(b"src", b"f%d.o" % (i % 5), b"o %d" % i)  # an ignored file: a new overlay
    if i % 7 == 0:
        write(b"build", b"out%d" % (i % 4), b"b %d" % i)  # an ignored folder
    if i % 4 == 3:
        tree.save()
        print("saved", i, flush=True)
    else:
        tree.commit()
        value = repo.store.ref("work/main")
        form = "overlay" if journal.parse(value).overlay is not None else "plain"
        print("commit", i, form, flush=True)
        if park and i >= park and form == "overlay" and i % 3 == 0:
            print("parked", flush=True)  # the overlay just written holds f%d.o's change
            time.sleep(3600)
    i += 1
"""


def _overlay_model(steps: int) -> dict[str, bytes]:
    files = {".gitignore": b"/build/\n", "src/.gitignore": b"*.o\n"}
    for i in range(steps):
        files[f"src/f{i % 5}.c"] = b"c %d" % i
        if i % 3 == 0:
            files[f"src/f{i % 5}.o"] = b"o %d" % i
        if i % 7 == 0:
            files[f"build/out{i % 4}"] = b"b %d" % i
    return files


def _live_files(repo: Repository) -> dict[str, bytes]:
    tree = repo.worktree("main")
    found = {}
    for folder in (b"", b"src", b"build"):
        node = tree.root if not folder else tree.lookup(tree.root, folder)
        for name, child in tree.listdir(node):
            if not child.is_dir():
                path = (folder + b"/" + name if folder else name).decode()
                found[path] = tree.read(child, 0, 1 << 20)
    return found


@pytest.mark.parametrize("park", [0, 30])
def test_sigkill_after_a_commit_that_writes_an_overlay_loses_no_file(
    tmp_path: Path, park: int
) -> None:
    """A commit whose work tree holds ignored files saves it as the commit tree plus an
    overlay of what that lacks (ADR 0086), in the commit's one write, and rewrites the
    overlay only when an ignored file changed: killed anywhere in a stream of such
    commits and saves (park 0), or right after one that rewrote it, the open brings
    back every saved file, committed or ignored, with its last content."""
    store = tmp_path / "store"
    Repository.init(store).close()
    script = OVERLAY_STREAM.replace("sys.argv[2]", str(park))
    printed = _run_then_kill(script, store, 0 if park else 45, until="parked" if park else None)
    done = [line.split() for line in printed if line.startswith(("saved", "commit"))]
    assert any(line[-1] == "overlay" for line in done)  # the new write order ran
    last = int(done[-1][1])
    with Repository.open(store) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        live = _live_files(repo)
        # the kill may land after the next step's write, before its line
        models = (
            [_overlay_model(last + 1)]
            if park
            else [_overlay_model(n) for n in (last + 1, last + 2)]
        )
        assert live in models
        committed = {
            path.decode(): repo.contents.read(entry.oid)
            for path, entry in repo.trees.walk(repo.commit_info("HEAD").tree)
            if not entry.is_dir()
        }
        assert committed == {
            p: d for p, d in live.items() if not p.endswith(".o") and not p.startswith("build/")
        }
