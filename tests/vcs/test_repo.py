"""The Repository API: commits by path copying, revisions, log, diff, refs, restore."""

from __future__ import annotations

import contextvars
import gc
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from helixfs.errors import (
    AlreadyExists,
    AmbiguousRevision,
    FileTooBig,
    InvalidInput,
    InvalidName,
    IsADirectory,
    NotADirectory,
    NotFound,
    ReadOnly,
    StoreLocked,
)
from helixfs.ids import ObjectId
from helixfs.vcs import Repository, content, history, transfer
from helixfs.vcs.objects import MODE_FILE, TreeEntry, decode_tree, encode_tree
from helixfs.vcs.refs import FolderHead
from helixfs.vcs.treeops import Trees, flat_tree_bytes, tree_bytes

from .conftest import CountingStore


def _tree(dirs: int, files: int) -> dict[bytes, bytes]:
    return {
        f"d{d:03}/f{f:03}.txt".encode(): f"{d} {f}\n".encode()
        for d in range(dirs)
        for f in range(files)
    }


def test_commit_by_path_copying_writes_only_the_changed_path(
    repo: Repository, store: CountingStore
) -> None:
    repo.commit(_tree(50, 40), "2000 files")
    before = set(store.ids())
    repo.commit({b"d007/f003.txt": b"changed\n" * 1000}, "one file")
    new = set(store.ids()) - before
    assert len(new) == 4  # blob, d007 tree, root tree, commit
    assert repo.read("HEAD", "d007/f003.txt") == b"changed\n" * 1000
    assert repo.read("HEAD", "d008/f003.txt") == b"8 3\n"
    assert [c.path for c in repo.diff("HEAD~1", "HEAD")] == [b"d007/f003.txt"]


def test_commit_records_changed_paths_latency_and_metadata(repo: Repository) -> None:
    cid = repo.commit({"a.txt": b"1", "b/c.txt": b"2"}, "msg", {"agent": "claude", "exp": 3})
    info = repo.commit_info(cid)
    assert info.meta["changed"] == ["a.txt", "b/c.txt"]
    assert info.meta["agent"] == "claude" and info.meta["exp"] == 3
    assert isinstance(info.meta["latency_us"], int)
    assert info.message == "msg" and info.id == cid


def test_commit_deletes_and_rejects_bad_input_without_changing_anything(repo: Repository) -> None:
    repo.commit({"a/b.txt": b"1", "c.txt": b"2"}, "one")
    head = repo.resolve("HEAD")
    repo.commit({"a/b.txt": None}, "delete")
    assert repo.ls("HEAD", "a") == []
    for bad in ({"nope.txt": None}, {"c.txt/x": b"1"}, {"../x": b"1"}, {}, {"x": 3}):
        before = repo.resolve("HEAD")
        with pytest.raises((NotFound, NotADirectory, InvalidInput)):
            repo.commit(bad, "bad")  # type: ignore[arg-type]
        assert repo.resolve("HEAD") == before
    assert repo.resolve("HEAD~1") == head


def test_a_file_over_a_directory_is_refused_like_the_reverse(repo: Repository) -> None:
    """QA #7: `b=FILE` over directory `b` silently dropped the whole subtree."""
    head = repo.commit({"b/c.txt": b"1", "f": b"2"}, "one")
    with pytest.raises(IsADirectory, match="b is a directory"):
        repo.commit({"b": b"file"}, "over a dir")
    with pytest.raises(NotADirectory):
        repo.commit({"f/deeper": b"x"}, "under a file")
    assert repo.resolve("HEAD") == head
    repo.commit({"b": None}, "delete the directory")
    repo.commit({"b": b"now a file"}, "then write")  # the explicit way still works
    assert repo.read("HEAD", "b") == b"now a file"


def test_a_write_under_the_root_control_folder_is_refused(repo: Repository) -> None:
    """The mount serves root `.helix` as its virtual folder: a committed `.helix/x` was
    shadowed there for good (and could not be deleted through the mount)."""
    head = repo.commit({"a/.helix/x": b"deeper is an ordinary name"}, "one")
    for bad in ({".helix/x": b"1"}, {"/.helix": b"1"}, {".helix/d/e": b"1", "ok": b"2"}):
        with pytest.raises(InvalidInput, match="control folder"):
            repo.commit(bad, "bad")  # type: ignore[arg-type]
    assert repo.resolve("HEAD") == head
    assert repo.read("HEAD", "a/.helix/x") == b"deeper is an ordinary name"


def test_one_path_changed_twice_is_refused(repo: Repository) -> None:
    head = repo.commit({"a": b"1"}, "one")
    for bad in ({"a": b"2", "/a": None}, {"d/x": b"1", "/d/x/": b"2"}):
        with pytest.raises(InvalidInput, match="changed twice"):
            repo.commit(bad, "twice")  # type: ignore[arg-type]
    assert repo.resolve("HEAD") == head


def test_changed_paths_are_recorded_normalised_and_found_by_last_change(
    repo: Repository,
) -> None:
    """QA #6: `/abs` was listed raw, so last_change walked past it to `init`."""
    repo.commit({"/abs": b"1"}, "first")
    repo.commit({"other": b"2"}, "second")
    third = repo.commit({"/abs": b"2", "d/x/": b"3"}, "third")
    repo.commit({"z": b"1"}, "fourth")
    assert repo.commit_info(third).meta["changed"] == ["abs", "d/x"]
    head = repo.resolve("HEAD")
    assert history.last_change(repo, head, b"abs") == third
    assert history.last_change(repo, head, b"/d/x") == third


def test_last_change_never_names_a_commit_without_the_path(repo: Repository) -> None:
    """A commit whose changed list misses a path (older stores listed `/abs` raw) must
    not send last_change on to a commit where the path does not exist."""
    root = repo.resolve("HEAD")
    tree = repo.commit_info(repo.commit({"abs": b"1"}, "real", branch=None)).tree
    repo.reset_hard(root.hex())
    lying = repo.write_commit("main", tree, [root], "listed wrong", {"changed": ["other"]}, {})
    assert history.last_change(repo, lying, b"abs") == lying


@pytest.mark.parametrize("seed", range(4))
def test_last_changes_kept_answer_as_a_fresh_walk(repo: Repository, seed: int) -> None:
    """history.LastChanges: queried between commits, on two branches, across a merge,
    a deletion, a reset and a walk cut short by its limit, every answer equals the walk
    without it; and a query repeated or one commit later walks (almost) nothing."""
    import random

    rng = random.Random(seed)
    known = history.LastChanges()
    paths = [b"a", b"b", b"d/c", b"d/e", b"gone"]
    repo.create_branch("side")
    tips = []
    for step in range(150):
        branch = "side" if rng.random() < 0.3 else "main"
        path = rng.choice(paths).decode()
        change = None if rng.random() < 0.1 else f"{step}".encode()
        try:
            repo.commit({path: change, f"noise{step % 3}": b"%d" % step}, f"s{step}", branch=branch)
        except NotFound:  # deleting what is not there
            continue
        if step == 100:
            repo.merge("side", message="merge", allow_conflicts=True)
        if step == 120:
            repo.reset_hard(rng.choice(tips).hex())
        head = repo.resolve(branch)
        tips.append(head)
        for query in rng.sample(paths, 3):
            limit = rng.choice((1000, 5))
            fresh = history.last_change(repo, head, query, limit)
            assert history.last_change(repo, head, query, limit, known) == fresh, (step, query)


def test_a_repeated_last_change_reads_no_commit() -> None:
    from .conftest import CountingStore

    store = CountingStore()
    repo = Repository.create(store)
    repo.commit({"f": b"1"}, "f")
    for n in range(50):
        repo.commit({f"other{n}": b"x"}, f"other {n}")
    known = history.LastChanges()
    first = history.last_change(repo, repo.resolve("HEAD"), b"f", known=known)
    fresh = Repository.wrap(store)  # no commit decoded: every step would read
    store.gets.clear()
    head = fresh.resolve("HEAD")
    assert history.last_change(fresh, head, b"f", known=known) == first
    fresh.commit({"other": b"y"}, "one more")
    store.gets.clear()
    assert history.last_change(fresh, fresh.resolve("HEAD"), b"f", known=known) == first
    assert len(store.gets) <= 3  # the new head, its tree (f is there), its parent


def test_unchanged_tree_does_not_make_a_commit(repo: Repository) -> None:
    cid = repo.commit({"a": b"1"}, "one")
    assert repo.commit({"a": b"1"}, "same again") == cid


def test_names_are_bytes_end_to_end(repo: Repository) -> None:
    name = b"caf\xe9 \xff.bin"
    repo.commit({name: b"x"}, "latin-1 name")
    assert repo.read("HEAD", name) == b"x"
    assert [e.name for e in repo.ls()] == [name]
    assert repo.commit_info("HEAD").meta["changed"] == [name.decode("utf-8", "surrogateescape")]


def test_resolve_forms(repo: Repository) -> None:
    first = repo.commit({"a": b"1"}, "one")
    second = repo.commit({"a": b"2"}, "two")
    repo.create_branch("feat", "HEAD~1")
    repo.create_snapshot("snap", "HEAD")
    assert repo.resolve("HEAD") == second
    assert repo.resolve("HEAD~1") == first == repo.resolve("HEAD^") == repo.resolve("main~1")
    assert repo.resolve("HEAD~2") == repo.resolve("feat~1")
    assert repo.resolve("feat") == first
    assert repo.resolve("snap") == second == repo.resolve("snapshots/snap")
    assert repo.resolve(second.hex()) == second
    assert repo.resolve(second.hex()[:10]) == second
    assert repo.resolve(second.hex()[:10].upper()) == second


def test_resolve_errors(repo: Repository) -> None:
    repo.commit({"a": b"1"}, "one")
    for bad in ("nope", "HEAD~5", "HEAD^2", "zzzz", "0000000000", ""):
        with pytest.raises((NotFound, InvalidInput)):
            repo.resolve(bad)


def test_resolve_counts_are_ascii_digits_of_any_length(repo: Repository) -> None:
    """`HEAD~<5000 digits>` was a ValueError traceback (int() refuses 4,301 digits), and
    `HEAD~٣` (an Arabic-Indic three, which \\d and int() accept) was HEAD~3."""
    root = repo.resolve("HEAD")
    repo.commit({"a": b"1"}, "one")
    assert repo.resolve("HEAD~00001") == root == repo.resolve("HEAD^01")
    huge = "9" * 5000
    for rev in (f"HEAD~{huge}", f"HEAD^{huge}", "HEAD~\u0663", "HEAD^\uff11"):
        with pytest.raises(NotFound):
            repo.resolve(rev)


def test_a_message_or_author_that_is_not_text_is_refused_and_changes_nothing(
    repo: Repository,
) -> None:
    """A lone surrogate (json.loads of "\\ud800" gives one) was a UnicodeEncodeError
    out of encode_commit, an int author an AttributeError; escaped bytes still work."""
    head = repo.resolve("HEAD")
    bad: list[dict[str, Any]] = [
        {"message": "fix \ud800"},
        {"message": "m", "author": "Ada \udfff"},
        {"message": "m", "author": 5},
    ]
    for kwargs in bad:
        with pytest.raises(InvalidInput, match="commit (message|author)"):
            repo.commit({"a": b"1"}, **kwargs)
    assert repo.resolve("HEAD") == head
    repo.commit({"a": b"1"}, "caf\udce9", author="J\udcf6rg")
    assert repo.commit_info("HEAD").message == "caf\udce9"


def test_ambiguous_prefix(repo: Repository) -> None:
    seen: dict[str, bytes] = {}
    for i in range(5000):
        cid = repo.commit({"a": str(i).encode()}, f"c{i}")
        prefix = cid.hex()[:4]
        if prefix in seen:
            with pytest.raises(AmbiguousRevision, match="matches 2 commits"):
                repo.resolve(prefix)
            assert repo.resolve(cid.hex()[:12]) == cid
            return
        seen[prefix] = cid
    pytest.fail("no two commits shared a 4-digit prefix")


def test_log_first_parent_and_full(repo: Repository) -> None:
    repo.commit({"a": b"1"}, "one")
    repo.create_branch("feat")
    repo.commit({"b": b"1"}, "feat work", branch="feat")
    repo.commit({"c": b"1"}, "main work")
    result = repo.merge("feat")
    assert result.status == "merged"
    first = [c.message for c in repo.log()]
    assert first == ["merge feat into main", "main work", "one", "init"]
    full = [c.message for c in repo.log(first_parent=False)]
    assert set(full) == {*first, "feat work"} and full[0] == first[0]
    assert len(repo.commit_info("HEAD").parents) == 2
    assert [c.message for c in repo.log(limit=2)] == first[:2]


def test_ls_read_errors(repo: Repository) -> None:
    repo.commit({"d/f": b"1"}, "one")
    with pytest.raises(IsADirectory):
        repo.read("HEAD", "d")
    with pytest.raises(NotFound):
        repo.read("HEAD", "d/nope")
    assert [e.name for e in repo.ls("HEAD", "d/f")] == [b"f"]  # a file lists itself
    with pytest.raises(NotADirectory):
        repo.ls("HEAD", "d/f/g")


def test_diff_name_status_and_text(repo: Repository) -> None:
    repo.commit(
        {"keep": b"same\n", "mod.txt": b"a\nb\nc\n", "gone.txt": b"x\n", "bin": b"\0\1"}, "one"
    )
    repo.commit(
        {"mod.txt": b"a\nB\nc\n", "gone.txt": None, "new.txt": b"n\n", "bin": b"\0\2"}, "two"
    )
    changes = {(c.status, c.path) for c in repo.diff("HEAD~1", "HEAD")}
    assert changes == {("M", b"mod.txt"), ("D", b"gone.txt"), ("A", b"new.txt"), ("M", b"bin")}
    text = repo.diff_text("HEAD~1", "HEAD")
    assert "-b\n+B\n" in text
    assert "Binary files a/bin and b/bin differ" in text
    assert "--- /dev/null\n+++ b/new.txt" in text
    assert "--- a/gone.txt\n+++ /dev/null" in text


def test_diff_ends_lines_only_at_newlines(repo: Repository) -> None:
    """QA #9: form feeds and U+2028 split lines and moved the hunk, as git does not."""
    old = "line1\nform\x0cfeed\nsep\u2028here\nend\n".encode()
    repo.commit({"t": old}, "a")
    repo.commit({"t": old.replace(b"end", b"END")}, "b")
    text = repo.diff_text("HEAD~1", "HEAD")
    hunk = text.split("@@ -1,4 +1,4 @@\n", 1)[1]
    assert hunk == " line1\n form\x0cfeed\n sep\u2028here\n-end\n+END\n"
    repo.commit({"t": b"a\nno newline"}, "c")
    assert repo.diff_text("HEAD~1", "HEAD").endswith("+no newline\n\\ No newline at end of file\n")


def test_branches_are_refs(repo: Repository) -> None:
    repo.commit({"a": b"1"}, "one")
    repo.create_branch("feat")
    assert {b.name for b in repo.branches()} == {"main", "feat"}
    with pytest.raises(AlreadyExists):
        repo.create_branch("feat")
    for bad in ("", "a/b", "a b", ".hidden", "x~1", "HEAD", "a" * 300):
        with pytest.raises(InvalidName):
            repo.create_branch(bad)
    repo.rename_branch("feat", "feature")
    assert {b.name for b in repo.branches()} == {"main", "feature"}
    with pytest.raises(NotFound):
        repo.rename_branch("feat", "x")
    with pytest.raises(AlreadyExists):
        repo.rename_branch("feature", "main")
    repo.rename_branch("feature", "feature")  # nothing to do, as for a snapshot (QA)
    assert {b.name for b in repo.branches()} == {"main", "feature"}
    with pytest.raises(InvalidInput):
        repo.delete_branch("main")
    repo.delete_branch("feature")
    with pytest.raises(NotFound):
        repo.delete_branch("feature")
    assert [b.name for b in repo.branches()] == ["main"]


def test_renaming_the_head_branch_moves_head(repo: Repository) -> None:
    repo.rename_branch("main", "trunk")
    assert repo.head_branch() == "trunk"
    repo.resolve("HEAD")


def test_snapshots_are_immutable_names(repo: Repository) -> None:
    repo.commit({"a": b"1"}, "one")
    snap = repo.create_snapshot("before")
    repo.commit({"a": b"2"}, "two")
    assert repo.read("before", "a") == b"1"
    assert repo.resolve("before") == snap
    with pytest.raises(AlreadyExists):
        repo.create_snapshot("before")
    assert [s.name for s in repo.snapshots()] == ["before"]
    repo.delete_snapshot("before")
    with pytest.raises(NotFound):
        repo.delete_snapshot("before")


def test_a_snapshot_renames_to_a_free_name_only(repo: Repository) -> None:
    snap = repo.create_snapshot("a")
    repo.commit({"f": b"1"}, "one")
    other = repo.create_snapshot("b")
    with pytest.raises(AlreadyExists):
        repo.rename_snapshot("a", "b")
    with pytest.raises(NotFound):
        repo.rename_snapshot("missing", "c")
    repo.rename_snapshot("a", "a")  # rename(2) of a name onto itself: nothing to do
    repo.rename_snapshot("a", "c")
    assert [(s.name, s.commit) for s in repo.snapshots()] == [("b", other), ("c", snap)]


def test_snapshot_subscribers_hear_every_change_of_a_snapshot_ref(repo: Repository) -> None:
    """A mount's view of a snapshot follows its ref: whoever makes, deletes, moves or
    renames one (the CLI through the daemon) tells it; a refused change tells nothing."""
    heard: list[tuple[str, str | None]] = []
    repo.subscribe_snapshots(lambda name, renamed_to: heard.append((name, renamed_to)))
    first = repo.commit({"a": b"1"}, "one")
    repo.create_snapshot("a")
    repo.create_snapshot("b")
    with pytest.raises(AlreadyExists):
        repo.rename_snapshot("a", "b")
    repo.rename_snapshot("a", "c")
    repo.delete_snapshot("b")
    repo.move_refs({"snapshots/c": first})
    assert heard == [("a", None), ("b", None), ("a", "c"), ("b", None), ("c", None)]


def test_checkout_and_reset_hard(repo: Repository) -> None:
    heard: list[str] = []
    repo.subscribe(heard.append)
    one = repo.commit({"a": b"1"}, "one")
    repo.commit({"a": b"2"}, "two")
    repo.create_branch("other", "HEAD~1")
    repo.checkout("other")
    assert repo.head_branch() == "other" and repo.read("HEAD", "a") == b"1"
    with pytest.raises(NotFound):
        repo.checkout("nope")
    repo.checkout("main")
    assert repo.reset_hard("HEAD~1") == one
    assert repo.read("HEAD", "a") == b"1"
    with pytest.raises(NotFound):
        repo.reset_hard("nope")
    assert repo.resolve("HEAD") == one
    assert "main" in heard and "other" in heard


def test_head_is_the_folder_a_command_runs_in_for_that_command_only(repo: Repository) -> None:
    """In a branch's folder of a mount HEAD is that branch (a git worktree's own HEAD):
    its log, its reset, merges into it. Other contexts (the mount's own requests, served
    beside the command) and other repositories keep the store's HEAD."""
    one = repo.commit({"a": b"1"}, "one")
    repo.create_branch("try")
    two = repo.commit({"a": b"2"}, "two", branch="try")
    outside = contextvars.copy_context()
    with repo.heading(FolderHead("branch", "try")):
        assert repo.resolve("HEAD") == repo.resolve("@") == two
        assert repo.current_branch() == "try" and repo.head_branch() == "main"
        assert outside.run(repo.resolve, "HEAD") == one
        assert repo.reset_hard("HEAD~1") == one
        assert repo.resolve("try") == one
        repo.commit({"b": b"x"}, "on try")
        merged = repo.merge("main")
        assert merged.status in ("up-to-date", "fast-forward", "merged")
    assert repo.resolve("HEAD") == one and repo.current_branch() == "main"
    assert repo.read("try", "b") == b"x"


@pytest.mark.parametrize("kind", ["snapshot", "commit"])
def test_a_snapshot_or_commit_folder_reads_as_head_and_never_moves(
    repo: Repository, kind: str
) -> None:
    one = repo.commit({"a": b"1"}, "one")
    repo.create_snapshot("s")
    repo.commit({"a": b"2"}, "two")
    name = "s" if kind == "snapshot" else one.hex()[:12]
    with repo.heading(FolderHead(kind, name)):  # type: ignore[arg-type]
        assert repo.resolve("HEAD~0") == one and repo.read("HEAD", "a") == b"1"
        before = repo.resolve("main")
        for move in (
            lambda: repo.reset_hard(one.hex()),
            lambda: repo.commit({"a": b"3"}, "three"),
            lambda: repo.merge("main"),
        ):
            with pytest.raises(ReadOnly, match="never moves"):
                move()
        assert repo.resolve("main") == before
    with repo.heading(FolderHead("snapshot", "gone")), pytest.raises(NotFound, match="gone"):
        repo.resolve("HEAD")


def test_on_disk_init_open_and_single_writer(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        cid = repo.commit({"a": b"1"}, "one")
        with pytest.raises(StoreLocked):
            Repository.open(tmp_path / "s")
    with pytest.raises(AlreadyExists):
        Repository.init(tmp_path / "s")
    with Repository.open(tmp_path / "s") as again:
        assert again.resolve("HEAD") == cid and again.read("HEAD", "a") == b"1"
    with pytest.raises(NotFound):
        Repository.open(tmp_path / "missing")


def test_the_decoded_tree_cache_is_bounded_by_bytes_not_trees(repo: Repository) -> None:
    """4,096 cached trees of 256 entries each held ~370 MB in a soak; the budget is in
    bytes, so big directories take their share of it."""
    trees = Trees(repo.store, limit=400_000)
    for n in range(20):
        entries = [TreeEntry(f"{n}-{i}".encode(), MODE_FILE, bytes(32), i, 0) for i in range(256)]
        objects: dict[ObjectId, bytes] = {}
        oid = trees.build(entries, objects)
        assert trees.get(oid).entries[0].name == f"{n}-0".encode()
    assert 0 < trees.cached_bytes <= 400_000
    assert trees.cached_bytes == sum(map(tree_bytes, trees._cache.values()))


def test_a_directory_bigger_than_the_tree_cache_does_not_blow_it(repo: Repository) -> None:
    """Counted in entries, a directory over the whole budget was kept anyway, beside
    what was cached: the bound did not hold. It is read again from the store instead."""
    trees = Trees(repo.store, limit=1_000_000)
    small = trees.build([TreeEntry(b"a", MODE_FILE, bytes(32))], {})
    entries = [TreeEntry(b"f%06d" % i, MODE_FILE, bytes(32), i, 0) for i in range(5_000)]
    objects: dict[ObjectId, bytes] = {}
    big = trees.build(entries, objects)
    repo.store.write(objects)
    assert tree_bytes(trees.get(big)) > 1_000_000
    assert trees.get(big).names[4_999] == b"f004999"
    assert trees.cached_bytes <= 1_000_000
    assert small in trees._cache  # and it flushed nothing out


def test_the_tree_cache_counts_about_the_memory_a_decoded_tree_holds(repo: Repository) -> None:
    """`tree_bytes` is what bounds the cache: it must not undercount much (the bound
    would not hold) nor overcount much (the cache would hold little)."""
    for name_length in (4, 40, 200):
        entries = [
            TreeEntry(b"%d-" % i + b"n" * name_length, MODE_FILE, os.urandom(32), 1000 + i, i)
            for i in range(2_000)
        ]
        record = encode_tree(entries)
        gc.collect()
        tracemalloc.start()
        try:
            tree = decode_tree(record)
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert 0.85 * held <= tree_bytes(tree) <= 1.15 * held, (name_length, held)
        # what a commit counts for the trees it makes, from the record's length alone
        assert flat_tree_bytes(len(record), len(entries)) == tree_bytes(tree)


def test_the_decoded_commit_cache_is_bounded_by_bytes_not_commits(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit records up to 1,000 changed paths: 16,384 cached commits of a bulk
    import could hold ~1 GB. The budget is in record bytes."""
    from helixfs.vcs import repo as repo_module

    monkeypatch.setattr(repo_module, "COMMIT_CACHE_BYTES", 200_000, raising=False)
    for n in range(10):  # each record ~50 KB: its 1,000 changed paths
        repo.commit({f"dir{n}/file-with-a-longish-name-{i}": b"x" for i in range(1000)}, f"c{n}")
    assert len(list(repo.log())) == 11
    assert sum(len(repo.store.get(cid)) for cid in repo._commits) <= 200_000
    assert repo._commit_bytes <= 200_000


def test_export_progress_counts_every_file_it_reports(repo: Repository, tmp_path: Path) -> None:
    """Symlinks were counted in the summary's files but not in progress: a bar on a
    terminal ended at 'exporting files 7' over 'exported 8 files'."""
    repo.commit({"a": b"1", "d/b": b"2"}, "files")
    repo.worktree().symlink(repo.worktree().root, b"link", b"a")
    repo.worktree().commit("a link")
    seen: list[int] = []
    summary = transfer.export(repo, "HEAD", tmp_path / "out", progress=seen.append)
    assert sum(seen) == summary.files == 3


def test_export_of_a_sparse_file_leaves_its_holes_unwritten(
    repo: Repository, tmp_path: Path
) -> None:
    """Export wrote every zero of a hole: a 64 GiB sparse file took 64 GiB of disk."""
    work = repo.worktree()
    node = work.create(work.root, b"sparse", 0o644)
    work.set_content(node, b"head")
    work.set_attrs(node, size=(1 << 30) + 5)  # zero chunks, and a short zero tail
    work.commit("sparse")
    transfer.export(repo, "HEAD", tmp_path / "out")
    out = tmp_path / "out" / "sparse"
    assert out.stat().st_size == (1 << 30) + 5
    assert out.stat().st_blocks * 512 < 16 << 20
    with open(out, "rb") as f:
        assert f.read(8) == b"head" + bytes(4)
        f.seek(-(1 << 20), 2)
        assert f.read() == bytes(1 << 20)


def test_init_finishes_a_store_an_interrupted_init_left(tmp_path: Path) -> None:
    """An init stopped after RocksDB made its files (a full disk, ^C) left a store that
    open called uninitialised and init called existing: no command could use it."""
    from helixfs.store.rocks import RocksStore

    RocksStore(tmp_path / "store" / "objects").close()
    with pytest.raises(NotFound, match="helix init"):
        Repository.open(tmp_path / "store")
    Repository.init(tmp_path / "store").close()
    with Repository.open(tmp_path / "store") as repo:
        assert [c.message for c in repo.log()] == ["init"]
    with pytest.raises(AlreadyExists):
        Repository.init(tmp_path / "store")


def test_negative_counts_are_refused_by_the_api(repo: Repository) -> None:
    """log(limit=-1) and stats(last=-1) were islice's ValueError; diff_text(context=-1)
    printed hunks like `@@ -7,-1 +7,-1 @@`."""
    repo.commit({"a": b"1\n2\n"}, "one")
    repo.commit({"a": b"1\n3\n"}, "two")
    for call in (
        lambda: repo.log(limit=-1),
        lambda: repo.stats(last=-1),
        lambda: repo.diff_text("HEAD~1", "HEAD", context=-1),
        lambda: repo.log(limit="2"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidInput, match="0 or more"):
            call()
    assert len(list(repo.log(limit=0))) == 0
    assert "@@ -2 +2 @@" in repo.diff_text("HEAD~1", "HEAD", context=0)


def test_a_file_past_the_largest_size_is_refused_before_it_is_read(
    repo: Repository, tmp_path: Path
) -> None:
    """The mount refuses sizes past MAX_FILE_SIZE (EFBIG): a commit or an import of such a
    file must not put one in the store that no mount could open."""
    history = [c.id for c in repo.log()]
    huge = tmp_path / "huge.img"
    with open(huge, "wb") as f:
        f.truncate(content.MAX_FILE_SIZE + 1)  # sparse: nothing is written or read
    with open(huge, "rb") as f, pytest.raises(FileTooBig, match="largest file size"):
        repo.commit({"disk.img": f}, "a 1 TiB disk image")
    assert [c.id for c in repo.log()] == history
