"""Saves as journals on the saved tree (ADR 0032): replayed on open, kept by gc, checked
by fsck, folded into trees by a commit, by a long journal and by close."""

from __future__ import annotations

from pathlib import Path

from helixfs.store import ANY, RefUpdate
from helixfs.store.memory import MemoryStore
from helixfs.vcs import Repository, Worktree, journal
from helixfs.vcs.refs import work_ref


def _files(tree: Worktree) -> dict[bytes, bytes]:
    found = {}
    stack = [(b"", tree.root)]
    while stack:
        prefix, node = stack.pop()
        for name, child in tree.listdir(node):
            if child.is_dir():
                stack.append((prefix + name + b"/", child))
            else:
                found[prefix + name] = tree.read(child, 0, child.size)
    return found


def _saved(repo: Repository) -> bytes:
    value = repo.store.ref(work_ref("main"))
    assert value is not None
    return value


def test_a_save_writes_a_journal_that_a_new_work_tree_replays() -> None:
    repo = Repository.create(MemoryStore())
    tree = repo.worktree()
    docs = tree.mkdir(tree.root, b"docs")
    tree.set_content(tree.create(docs, b"a.md"), b"a")
    tree.commit("docs")
    tree.set_content(tree.create(docs, b"b.md"), b"b")
    tree.set_attrs(tree.lookup(docs, b"a.md"), mode=0o600)
    new = tree.mkdir(tree.lookup(tree.root, b"docs"), b"new")
    tree.set_content(tree.create(new, b"c.md"), b"c")
    tree.rename(tree.root, b"docs", tree.root, b"papers")  # a folder moved, unsaved inside
    tree.save()
    assert journal.has_journal(_saved(repo))
    replayed = Worktree(repo, "main")
    assert (
        _files(replayed)
        == _files(tree)
        == {
            b"papers/a.md": b"a",
            b"papers/b.md": b"b",
            b"papers/new/c.md": b"c",
        }
    )
    papers = replayed.lookup(replayed.root, b"papers")
    assert replayed.lookup(papers, b"a.md").mode & 0o777 == 0o600
    # the replayed state commits as the live one would have
    assert replayed.commit("replayed") is not None
    assert not journal.has_journal(_saved(repo) if repo.store.ref(work_ref("main")) else b"")
    assert repo.read("HEAD", "papers/new/c.md") == b"c"


def test_a_save_in_a_big_directory_journals_only_what_changed() -> None:
    repo = Repository.create(MemoryStore())
    repo.commit({f"big/f{i:05}": b"%d" % i for i in range(20_000)}, "fill")
    tree = repo.worktree()
    big = tree.lookup(tree.root, b"big")
    tree.set_content(tree.create(big, b"new"), b"new")
    before = set(repo.store.ids())
    tree.save()
    assert set(repo.store.ids()) - before == {tree.lookup(big, b"new").oid}  # no tree
    assert len(_saved(repo)) < 500  # the listing is ~1 MB
    assert _files(Worktree(repo, "main"))[b"big/new"] == b"new"


def test_a_long_journal_is_folded_into_trees() -> None:
    repo = Repository.create(MemoryStore())
    tree = repo.worktree()
    for i in range(journal.JOURNAL_MAX // 40):
        tree.set_content(tree.create(tree.root, b"file-%05d" % i), b"%d" % i)
        tree.save()
        value = _saved(repo)
        assert len(value) <= 32 + len(journal.MAGIC) + journal.JOURNAL_MAX
    assert not journal.has_journal(value) or len(value) < journal.JOURNAL_MAX  # it folded
    assert _files(Worktree(repo, "main")) == _files(tree)


def test_gc_keeps_what_only_a_journal_names_and_fsck_checks_it(tmp_path: Path) -> None:
    repo = Repository.init(tmp_path / "store")
    tree = repo.worktree()
    folder = tree.mkdir(tree.root, b"folder")
    tree.set_content(tree.create(folder, b"kept"), b"only the journal names this")
    tree.set_content(tree.create(tree.root, b"top"), b"nor this")
    tree.save()
    assert journal.has_journal(_saved(repo))
    repo.gc()
    assert repo.fsck().ok, repo.fsck().problems
    repo.close()  # folds
    with Repository.open(tmp_path / "store") as reopened:
        assert reopened.read("HEAD", "folder/kept") == b"only the journal names this"
        assert reopened.read("HEAD", "top") == b"nor this"


def test_fsck_reports_what_a_journal_names_and_the_store_lacks() -> None:
    repo = Repository.create(MemoryStore())
    tree = repo.worktree()
    node = tree.create(tree.root, b"f")
    tree.set_content(node, b"content")
    tree.save()
    value = _saved(repo)
    assert node.oid is not None and value.count(node.oid) == 1
    missing = value.replace(node.oid, b"\x01" * 32)  # not a stored id
    repo.store.write({}, [RefUpdate(work_ref("main"), missing, expected=ANY)])
    problems = repo.fsck().problems
    assert any("journal names" in problem for problem in problems), problems
    repo.store.write({}, [RefUpdate(work_ref("main"), value[:-3], expected=ANY)])
    assert any("journal" in problem for problem in repo.fsck().problems)
