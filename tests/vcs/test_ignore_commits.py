"""Ignore rules in a work tree: ignored paths live in it, never in a commit (ADR 0061)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from helixfs.errors import NotFound
from helixfs.vcs import Repository, Worktree, journal
from helixfs.vcs.ignore import RuleFiles
from helixfs.vcs.objects import FLAT_MAX
from helixfs.vcs.refs import work_ref
from helixfs.vcs.transfer import import_dir
from helixfs.vcs.treeops import Trees
from helixfs.vcs.worktree import Node


def _folder(tree: Worktree, parts: list[bytes]) -> Node:
    node = tree.root
    for part in parts:
        try:
            node = tree.lookup(node, part)
        except NotFound:
            node = tree.mkdir(node, part)
    return node


def _file(tree: Worktree, path: bytes, data: bytes) -> None:
    *dirs, name = path.split(b"/")
    folder = _folder(tree, dirs)
    try:
        node = tree.lookup(folder, name)
    except NotFound:
        node = tree.create(folder, name)
    tree.set_content(node, data)


def _paths(repo: Repository, rev: str = "HEAD") -> set[str]:
    head = repo.commit_info(rev).tree
    return {path.decode() for path, entry in repo.trees.walk(head) if not entry.is_dir()}


def _rm(tree: Worktree, path: bytes) -> None:
    *dirs, name = path.split(b"/")
    tree.unlink(_folder(tree, dirs), name)


def test_ignored_paths_stay_in_the_work_tree_and_out_of_commits(repo: Repository) -> None:
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.o\nbuild/\n/top.log\n")
    _file(tree, b"src/main.c", b"int main;")
    _file(tree, b"src/main.o", b"\x7fELF")
    _file(tree, b"build/out/app", b"bin")
    _file(tree, b"top.log", b"t")
    _file(tree, b"src/top.log", b"kept: anchored rules match at their folder only")
    tree.commit()
    assert _paths(repo) == {".gitignore", "src/main.c", "src/top.log"}
    src = tree.lookup(tree.root, b"src")
    assert tree.read(tree.lookup(src, b"main.o"), 0, 10) == b"\x7fELF"  # still there
    assert tree.ignored_paths() == [b"build/", b"src/main.o", b"top.log"]
    assert repo.ignored_paths("main") == [b"build/", b"src/main.o", b"top.log"]

    head = repo.resolve("HEAD")
    _file(tree, b"src/main.o", b"\x7fELF2")  # a rebuild: nothing a commit holds changes
    _file(tree, b"src/util.o", b"\x7fELF")
    _file(tree, b"build/more", b"x")
    assert tree.commit() is None and repo.resolve("HEAD") == head
    assert tree.pending_paths() == []


def test_nested_rule_files_negation_and_helixignore(repo: Repository) -> None:
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.tmp\n")
    _file(tree, b".helixignore", b"secrets/\n")
    _file(tree, b"lib/.gitignore", b"!keep.tmp\n")
    _file(tree, b"lib/keep.tmp", b"k")
    _file(tree, b"lib/drop.tmp", b"d")
    _file(tree, b"secrets/key", b"s")
    _file(tree, b"a.tmp", b"a")
    cid = tree.commit()
    assert _paths(repo) == {".gitignore", ".helixignore", "lib/.gitignore", "lib/keep.tmp"}
    changed = repo.commit_info(cid).meta["changed"] if cid else []
    assert "a.tmp" not in changed and "secrets/key" not in changed


def test_a_rule_change_takes_effect_on_later_saves(repo: Repository) -> None:
    """Purity said "nothing left out below": a rule removed must bring the files it
    ignored into the next commit, even from folders the save did not touch."""
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.log\n")
    _file(tree, b"deep/er/run.log", b"1")
    _file(tree, b"deep/er/code.py", b"c")
    tree.commit()
    assert _paths(repo) == {".gitignore", "deep/er/code.py"}
    _file(tree, b".gitignore", b"# nothing ignored now\n")
    tree.commit()
    assert "deep/er/run.log" in _paths(repo)
    _file(tree, b".gitignore", b"*.log\n*.py\n")  # a tracked file stays tracked
    _file(tree, b"deep/er/code.py", b"c2")
    _file(tree, b"deep/new.py", b"n")
    _file(tree, b"deep/er/run.log", b"2")
    tree.commit()
    assert repo.read("HEAD", "deep/er/code.py") == b"c2"
    assert repo.read("HEAD", "deep/er/run.log") == b"2"
    assert "deep/new.py" not in _paths(repo)
    _rm(tree, b".gitignore")  # the rule file gone: its rules with it
    tree.commit()
    assert "deep/new.py" in _paths(repo)


def test_a_folder_moved_under_a_rule_takes_the_rules_of_its_new_place(repo: Repository) -> None:
    """A committed folder is pure (nothing below left out); moved where a rule ignores
    something deep inside it, its files there are new, untracked and ignored."""
    tree = repo.worktree("main")
    _file(tree, b"out/.gitignore", b"gen/\n")
    _file(tree, b"x/gen/b.c", b"b")
    _file(tree, b"x/keep.c", b"k")
    tree.commit()
    assert "x/gen/b.c" in _paths(repo)
    tree.rename(tree.root, b"x", tree.lookup(tree.root, b"out"), b"x")
    tree.commit()
    assert _paths(repo) == {"out/.gitignore", "out/x/keep.c"}
    assert tree.ignored_paths() == [b"out/x/gen/"]


def test_an_excluded_folder_cannot_be_re_included(repo: Repository) -> None:
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"logs/\n!logs/keep.log\n/out/*\n!/out/keep\n")
    _file(tree, b"logs/keep.log", b"k")
    _file(tree, b"out/keep", b"k")
    _file(tree, b"out/drop", b"d")
    tree.commit()
    assert _paths(repo) == {".gitignore", "out/keep"}


def test_ignored_files_survive_a_reset_like_untracked_files(repo: Repository) -> None:
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"node_modules/\n*.o\n")
    _file(tree, b"a.c", b"1")
    tree.commit()
    _file(tree, b"node_modules/pkg/index.js", b"js")
    _file(tree, b"a.o", b"obj")
    _file(tree, b"a.c", b"2")
    tree.commit()
    repo.reset_hard("HEAD~1")
    assert tree.read(tree.lookup(tree.root, b"a.c"), 0, 9) == b"1"
    assert tree.read(tree.lookup(tree.root, b"a.o"), 0, 9) == b"obj"
    modules = tree.lookup(tree.lookup(tree.root, b"node_modules"), b"pkg")
    assert tree.read(tree.lookup(modules, b"index.js"), 0, 9) == b"js"
    assert repo.ignored_paths("main") == [b"a.o", b"node_modules/"]


def test_recovery_commits_a_saved_work_tree_without_its_ignored_paths(
    disk_repo: Repository,
) -> None:
    tree = disk_repo.worktree()
    _file(tree, b".gitignore", b"*.pyc\n")
    _file(tree, b"m.py", b"x")
    _file(tree, b"m.pyc", b"bytecode")
    tree.save()
    disk_repo.recover()
    assert _paths(disk_repo) == {".gitignore", "m.py"}
    tree.reload()
    assert tree.read(tree.lookup(tree.root, b"m.pyc"), 0, 10) == b"bytecode"


def test_a_paged_folder_with_ignored_names(repo: Repository) -> None:
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.o\n")
    big = _folder(tree, [b"big"])
    for n in range(FLAT_MAX + 50):
        tree.set_content(tree.create(big, b"f%05d.c" % n), b"c")
    tree.commit()
    tree.set_content(tree.create(big, b"f00007.o"), b"o")
    tree.set_content(tree.lookup(big, b"f00008.c"), b"changed")
    tree.commit()
    paths = _paths(repo)
    assert "big/f00007.o" not in paths and repo.read("HEAD", "big/f00008.c") == b"changed"
    assert len(paths) == FLAT_MAX + 51


def test_import_leaves_ignored_paths_out_but_keeps_tracked_ones(
    repo: Repository, tmp_path: Path
) -> None:
    src = tmp_path / "project"
    (src / "src").mkdir(parents=True)
    (src / "build").mkdir()
    (src / ".gitignore").write_text("*.o\nbuild/\n")
    (src / "src" / "main.c").write_text("int main;")
    (src / "src" / "main.o").write_bytes(b"\x7fELF")
    (src / "build" / "app").write_bytes(b"bin")
    summary = import_dir(repo, src)
    assert _paths(repo) == {".gitignore", "src/main.c"}
    assert summary.ignored == 2
    repo.commit({"src/vendored.o": b"v"}, "a tracked object file")
    (src / "src" / "vendored.o").write_bytes(b"v2")
    import_dir(repo, src)
    assert repo.read("HEAD", "src/vendored.o") == b"v2"  # tracked: still imported


NO_OUTSIDE = False
RULE_TEXTS = [b"*.o\n", b"*.o\n!keep.o\ncache/\n", b"/b/\n*.log\n", b"# none\n", b"**/cache/**\n"]


def _random_step(rng: random.Random, tree: Worktree) -> None:
    folders = [[], [b"a"], [b"a", b"b"], [b"c"], [b"c", b"cache"], [b"a", b"cache"]]
    folder = rng.choice(folders)
    action = rng.random()
    if action < 0.05:
        tree.save()  # a journal between commits: the names changed must still count
    elif action < 0.08 and not NO_OUTSIDE:
        tree.repo.commit({"outside.txt": b"%d" % rng.randrange(1000)}, "from outside")
    elif action < 0.45:
        name = rng.choice([b"x.o", b"keep.o", b"y.c", b"z.log", b"w.txt", b".f.swp"])
        _file(tree, b"/".join([*folder, name]), b"%d" % rng.randrange(1000))
    elif action < 0.6:
        rules_at = rng.choice([[], [b"a"], [b"c"]])
        _file(tree, b"/".join([*rules_at, b".gitignore"]), rng.choice(RULE_TEXTS))
    elif action < 0.75:
        node = _folder(tree, folder)
        names = [n for n, child in tree.listdir(node) if not child.is_dir()]
        if names:
            tree.unlink(node, rng.choice(names))
    elif folder:
        moved = _folder(tree, folder)
        parent = _folder(tree, folder[:-1])
        target = _folder(tree, rng.choice(folders[:4]))
        new_name = rng.choice([b"b", b"cache", b"d"])
        inside = target
        while inside is not None and inside is not moved:
            inside = inside.parent
        if inside is None and new_name not in {n for n, _ in tree.listdir(target)}:
            tree.rename(parent, folder[-1], target, new_name)


@pytest.mark.parametrize("seed", range(6))
def test_each_commit_tree_is_the_work_tree_filtered_from_scratch(
    repo: Repository, seed: int
) -> None:
    """A commit makes again only the names changed since the last one (the head's tree
    at each folder, patched): the tree must be what a fresh filter of the whole work
    tree gives, whatever rules, files and folders came and went. A commit may leave its
    work trees journaled (dirty folders across commits): the check folds them, at
    every other commit or so, and checks that the work tree saved as the commit tree
    plus an overlay (ADR 0086) is the live one."""
    rng = random.Random(seed)
    tree = repo.worktree("main")
    for step in range(150):
        _random_step(rng, tree)
        if rng.random() < 0.4:
            before = repo.commit_info("HEAD").tree
            tree.commit()
            if rng.random() < 0.5:
                continue
            saved = repo.store.ref(work_ref("main"))
            grafted = None
            if saved is not None and journal.parse(saved).overlay is not None:
                grafted = Worktree(repo, "main")  # the saved state, as a reload reads it
            tree.fold()
            if grafted is not None:
                assert grafted._encode(grafted.root, {}) == tree.root.oid, f"seed {seed}, {step}"
            fresh = Trees(repo.store)
            fresh.rule_files = RuleFiles(repo.contents.read)
            assert tree.root.oid is not None
            expected = fresh.without_ephemeral(tree.root.oid, {}, before)
            assert repo.commit_info("HEAD").tree == expected, f"seed {seed}, step {step}"


def test_the_root_s_own_mode_is_committed_beside_ignored_paths(repo: Repository) -> None:
    """A root whose commit tree is patched from the head's (it holds ignored paths)
    still records a change of its own mode (ADR 0044)."""
    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.o\n")
    _file(tree, b"a.o", b"o")
    tree.commit()
    _file(tree, b"b.o", b"o")
    tree.commit()  # the root is walked: the next commit patches the head's
    tree.set_attrs(tree.root, mode=0o700)
    _file(tree, b"c.o", b"o")  # a name changed there too: the head's tree is patched
    assert tree.commit() is not None
    own = repo.trees.get(repo.commit_info("HEAD").tree).own
    assert own is not None and own.mode & 0o777 == 0o700
    assert _paths(repo) == {".gitignore"}


def test_a_repository_s_info_exclude_applies_inside_it_and_its_changes_take_effect(
    disk_repo: Repository,
) -> None:
    """`.git/info/exclude` of the nearest folder holding `.git`, under every .gitignore;
    written, replaced or removed, it decides from the next save on (ADR 0061)."""
    tree = disk_repo.worktree()
    _file(tree, b".git/info/exclude", b"*.log\n")
    _file(tree, b"app/.git/info/exclude", b"/dist/\n")
    _file(tree, b"a.log", b"a")
    _file(tree, b"app/b.log", b"not the outer repository's rule")
    _file(tree, b"app/dist/bundle.js", b"js")
    _file(tree, b"app/src/dist/x", b"anchored at app/")
    _file(tree, b"app/.gitignore", b"!keep.log\n")
    tree.commit()
    paths = _paths(disk_repo)
    assert {"app/b.log", "app/src/dist/x"} <= paths
    assert not {"a.log", "app/dist/bundle.js"} & paths
    assert tree.ignored_paths() == [b"a.log", b"app/dist/"]

    _file(tree, b"deep/er/c.log", b"c")
    _file(tree, b".git/info/exclude", b"*.tmp\n")  # rewritten: *.log no longer ignored
    _file(tree, b"app/keep.log", b"k")
    tree.commit()
    assert {"a.log", "deep/er/c.log", "app/keep.log"} <= _paths(disk_repo)
    _file(tree, b"d.tmp", b"d")
    _rm(tree, b"app/.git/info/exclude")
    tree.commit()
    assert "app/dist/bundle.js" in _paths(disk_repo) and "d.tmp" not in _paths(disk_repo)
    tree.save()
    assert disk_repo.ignored_paths(disk_repo.current_branch()) == [b"d.tmp"]  # saved tree


def test_the_user_s_excludes_come_last(
    repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ignore").write_text("*.swp\n!*.keep\n")
    (tmp_path / "cfg").write_text(f"[core]\n\texcludesFile = {tmp_path / 'ignore'}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "cfg"))
    repo.trees.rule_files = RuleFiles(repo.contents.read)  # read the user's file afresh
    tree = repo.worktree("main")
    _file(tree, b".git/info/exclude", b"*.keep\n")
    _file(tree, b"x.swp", b"s")
    _file(tree, b"y.keep", b"exclude wins over the user's !*.keep")
    _file(tree, b"z.c", b"z")
    tree.commit()
    assert _paths(repo) == {".git/info/exclude", "z.c"}


def test_a_commit_that_journals_its_work_trees_loses_nothing_in_a_crash(
    disk_repo: Repository,
) -> None:
    """Where the saved folders hold ignored paths, a commit writes the commit trees and
    saves the work trees as a save does, as a journal over the last fold (ADR 0061):
    recovery replays it, makes no commit, and the ignored files' content is the last
    one saved."""
    tree = disk_repo.worktree()
    branch = disk_repo.current_branch()
    _file(tree, b".gitignore", b"*.o\n")
    _file(tree, b"src/a.c", b"1")
    _file(tree, b"src/a.o", b"obj1")
    tree.commit()
    _file(tree, b"src/a.c", b"2")
    tree.commit()
    _file(tree, b"src/a.o", b"obj2")
    _file(tree, b"src/b.c", b"b")
    tree.commit()
    assert journal.has_journal(disk_repo.store.ref(work_ref(branch)))
    assert _paths(disk_repo) == {".gitignore", "src/a.c", "src/b.c"}
    head = disk_repo.resolve("HEAD")
    assert disk_repo.recover() == [] and disk_repo.resolve("HEAD") == head
    tree.reload()
    src = tree.lookup(tree.root, b"src")
    assert tree.read(tree.lookup(src, b"a.o"), 0, 9) == b"obj2"
    assert tree.read(tree.lookup(src, b"a.c"), 0, 9) == b"2"
    assert disk_repo.ignored_paths(branch) == [b"src/a.o"]
    disk_repo.reset_hard("HEAD~1")  # a ref move folds the journal first: a.o is carried
    assert tree.read(tree.lookup(tree.lookup(tree.root, b"src"), b"a.o"), 0, 9) == b"obj2"


def _overlay_of(repo: Repository) -> journal.Saved:
    value = repo.store.ref(work_ref(repo.current_branch()))
    assert value is not None
    return journal.parse(value)


def test_a_commit_saves_its_work_tree_as_the_commit_tree_and_an_overlay(
    disk_repo: Repository,
) -> None:
    """Where the saved folders hold ignored paths, a commit writes the commit trees and
    saves the work tree as the commit tree plus an overlay of what that lacks (ADR
    0086): the overlay stays the same object while only tracked files change, and is
    written again when an ignored file or folder changes. A reload grafts it back."""
    tree = disk_repo.worktree()
    _file(tree, b".gitignore", b"*.o\nbuild/\n")
    _file(tree, b"src/a.c", b"1")
    _file(tree, b"src/a.o", b"obj1")
    _file(tree, b"build/lib/x.a", b"lib")
    tree.commit()
    _file(tree, b"src/a.c", b"2")
    tree.commit()
    first = _overlay_of(disk_repo)
    assert first.overlay is not None and first.on_head  # over the head's tree, whichever
    for n in range(3, 6):
        _file(tree, b"src/a.c", b"%d" % n)
        _file(tree, b"src/b%d.c" % n, b"new")
        assert tree.commit() is not None
        assert _overlay_of(disk_repo) == first  # nothing ignored changed: no ref written
    _file(tree, b"src/a.o", b"obj2")
    _file(tree, b"src/a.c", b"6")
    tree.commit()
    changed = _overlay_of(disk_repo)
    assert changed.overlay not in (None, first.overlay)
    _file(tree, b"build/lib/y.a", b"lib2")  # only ignored: no commit, a new overlay
    assert tree.commit() is None
    assert _overlay_of(disk_repo).overlay not in (None, changed.overlay)
    assert _paths(disk_repo) == {".gitignore", "src/a.c", "src/b3.c", "src/b4.c", "src/b5.c"}

    fresh = Worktree(disk_repo, disk_repo.current_branch())  # what a reload reads
    src = fresh.lookup(fresh.root, b"src")
    assert fresh.read(fresh.lookup(src, b"a.o"), 0, 9) == b"obj2"
    assert fresh.read(fresh.lookup(src, b"a.c"), 0, 9) == b"6"
    lib = fresh.lookup(fresh.lookup(fresh.root, b"build"), b"lib")
    assert [name for name, _ in fresh.listdir(lib)] == [b"x.a", b"y.a"]
    assert fresh.root.subdirs == tree.root.subdirs == 2
    assert disk_repo.fsck().ok
    tree.fold()
    assert fresh._encode(fresh.root, {}) == tree.root.oid  # the same work tree


def test_gc_keeps_what_only_an_overlay_or_its_journal_base_names(disk_repo: Repository) -> None:
    """An ignored file lives in no commit: after a commit that saved the work tree as
    an overlay, its content is named by the overlay alone, and the tree the live work
    tree journals on by the work ref alone. gc keeps both: a save after it journals on
    that tree, and an open after a crash reads the file back."""
    tree = disk_repo.worktree()
    branch = disk_repo.current_branch()
    _file(tree, b".gitignore", b"*.log\n")
    _file(tree, b"app/main.py", b"v1")
    _file(tree, b"app/run.log", b"log1")
    tree.commit()
    _file(tree, b"app/main.py", b"v2")
    _file(tree, b"app/run.log", b"log2")
    tree.commit()
    assert _overlay_of(disk_repo).overlay is not None
    disk_repo.gc()
    _file(tree, b"app/main.py", b"v3")  # a save's journal, on the tree gc had to keep
    tree.save()
    assert journal.parse(disk_repo.store.ref(work_ref(branch)) or b"").changes is not None
    disk_repo.gc()
    assert disk_repo.fsck().ok
    fresh = Worktree(disk_repo, branch)
    app = fresh.lookup(fresh.root, b"app")
    assert fresh.read(fresh.lookup(app, b"run.log"), 0, 9) == b"log2"
    assert fresh.read(fresh.lookup(app, b"main.py"), 0, 9) == b"v3"
    assert tree.commit() is not None and _paths(disk_repo) == {".gitignore", "app/main.py"}
    assert disk_repo.read("HEAD", "app/main.py") == b"v3"


def test_an_open_after_a_crash_grafts_the_overlay_and_makes_no_commit(
    tmp_path: Path,
) -> None:
    """The store left as a crash leaves it, right after a commit that wrote an overlay:
    the open's recovery folds it into plain trees and commits nothing, and the ignored
    files are there; `helix status` without a mount lists them from the overlay."""
    store = tmp_path / "store"
    repo = Repository.init(store)
    tree = repo.worktree()
    _file(tree, b".gitignore", b"__pycache__/\n*.tmp\n")
    _file(tree, b"pkg/mod.py", b"1")
    _file(tree, b"pkg/__pycache__/mod.pyc", b"pyc1")
    _file(tree, b"pkg/scratch.tmp", b"t")
    tree.commit()
    _file(tree, b"pkg/mod.py", b"2")
    _file(tree, b"pkg/__pycache__/mod.pyc", b"pyc2")
    tree.commit()
    head = repo.resolve("HEAD")
    assert _overlay_of(repo).overlay is not None
    assert repo.ignored_paths(repo.current_branch()) == [b"pkg/__pycache__/", b"pkg/scratch.tmp"]
    repo.store.close()  # no fold: as kill -9 leaves it
    with Repository.open(store) as again:
        assert again.resolve("HEAD") == head
        value = again.store.ref(work_ref(again.current_branch()))
        assert value is not None and not journal.has_journal(value)  # folded on open
        assert again.ignored_paths(again.current_branch()) == [
            b"pkg/__pycache__/",
            b"pkg/scratch.tmp",
        ]
        live = again.worktree()
        pkg = live.lookup(live.root, b"pkg")
        pyc = live.lookup(live.lookup(pkg, b"__pycache__"), b"mod.pyc")
        assert live.read(pyc, 0, 9) == b"pyc2"


def test_a_lost_cas_saves_the_commit_tree_and_overlay_by_id(repo: Repository) -> None:
    """A commit that loses its compare-and-swap (another writer moved the branch) saves
    its work tree naming its commit tree, not the head's (the head is theirs): the reload
    shows the saved files and the ignored ones over their commit, and the next commit
    holds the saved change on top of it."""
    from helixfs.errors import RefConflict
    from helixfs.ids import object_id
    from helixfs.store import RefUpdate
    from helixfs.vcs.objects import Commit, encode_commit

    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.log\n")
    _file(tree, b"src/a.py", b"1")
    _file(tree, b"src/run.log", b"log1")
    tree.commit()
    _file(tree, b"src/a.py", b"2")
    tree.commit()
    assert _overlay_of(repo).on_head
    other = repo.commit_info("HEAD")
    record = encode_commit(Commit(other.tree, (other.id,), 1, "x", "elsewhere", {}))
    theirs = object_id(record)
    repo.store.write({theirs: record}, [RefUpdate("branches/main", theirs, expected=other.id)])
    _file(tree, b"src/a.py", b"mine")
    _file(tree, b"src/run.log", b"log2")
    with pytest.raises(RefConflict):
        tree.commit()
    saved = _overlay_of(repo)
    assert saved.overlay is not None and not saved.on_head  # its own commit tree, by id
    tree.reload()
    src = tree.lookup(tree.root, b"src")
    assert tree.read(tree.lookup(src, b"run.log"), 0, 9) == b"log2"
    assert tree.commit() is not None
    assert repo.read("HEAD", "src/a.py") == b"mine" and repo.resolve("HEAD~1") == theirs
    assert _paths(repo) == {".gitignore", "src/a.py"}


def test_an_overlay_naming_a_folder_its_tree_lacks_is_shown_without_it(
    repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    """Only a writer that moves the branch without its work ref (none of ours does)
    could leave an overlay on the head's tree that names a folder the tree lacks: the
    work tree opens all the same, without that part, and says so in the log."""
    from helixfs.ids import object_id
    from helixfs.store import RefUpdate
    from helixfs.vcs.objects import Commit, encode_commit
    from helixfs.vcs.treeops import EMPTY_TREE_ID

    tree = repo.worktree("main")
    _file(tree, b".gitignore", b"*.log\n")
    _file(tree, b"src/a.py", b"1")
    _file(tree, b"src/run.log", b"log1")
    tree.commit()
    _file(tree, b"src/a.py", b"2")
    tree.commit()
    assert _overlay_of(repo).on_head
    head = repo.resolve("HEAD")
    record = encode_commit(Commit(EMPTY_TREE_ID, (head,), 1, "x", "emptied elsewhere", {}))
    emptied = object_id(record)
    repo.store.write({emptied: record}, [RefUpdate("branches/main", emptied, expected=head)])
    fresh = Worktree(repo, "main")
    assert fresh.listdir(fresh.root) == []
    assert "names a folder src its tree lacks" in caplog.text
