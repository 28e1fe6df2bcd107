"""Random operation sequences against a plain dict model: the tree a commit records is
always exactly the model (minus editor temp files), and reopening changes nothing."""

from __future__ import annotations

import os
import random

import pytest

from helixfs.errors import HelixError
from helixfs.store.memory import MemoryStore
from helixfs.vcs import Node, Repository, Worktree, attrs
from helixfs.vcs.ephemeral import is_ephemeral

SEEDS = int(os.environ.get("HELIX_MODEL_SEEDS", "12"))  # raise it to hunt for bugs
NAMES = [b"a", b"b", b"c.txt", b".c.txt.swp", b"d", b"\xff\xfe", b"4913", b"e~"]


class Model:
    """Files (path -> bytes) and directories (paths) the worktree should hold."""

    def __init__(self) -> None:
        self.files: dict[bytes, bytes] = {}
        self.dirs: set[bytes] = set()

    def committed(self) -> dict[bytes, bytes]:
        return {p: d for p, d in self.files.items() if not is_ephemeral(p.rsplit(b"/", 1)[-1])}

    def below(self, path: bytes) -> bool:
        return any(p.startswith(path + b"/") for p in [*self.files, *self.dirs])


def _join(parent: bytes, name: bytes) -> bytes:
    return parent + b"/" + name if parent else name


def _node(tree: Worktree, path: bytes) -> Node:
    node = tree.root
    for part in path.split(b"/") if path else []:
        node = tree.lookup(node, part)
    return node


def _step(rng: random.Random, tree: Worktree, model: Model) -> None:
    parent = rng.choice([b"", *sorted(model.dirs)])
    name = rng.choice(NAMES)
    path = _join(parent, name)
    taken = path in model.files or path in model.dirs
    op = rng.choice(["write", "write", "mkdir", "unlink", "rmdir", "rename", "truncate"])
    p = _node(tree, parent)
    if op == "write" and path not in model.dirs:
        data = rng.randbytes(rng.choice([0, 5, 300]))
        node = tree.lookup(p, name) if taken else tree.create(p, name)
        tree.set_content(node, data)
        model.files[path] = data
    elif op == "truncate" and path in model.files:
        size = rng.choice([0, 2, 400])
        tree.set_attrs(tree.lookup(p, name), size=size)
        old = model.files[path]
        model.files[path] = old[:size] + bytes(max(0, size - len(old)))
    elif op == "mkdir" and not taken:
        tree.mkdir(p, name)
        model.dirs.add(path)
    elif op == "unlink" and path in model.files:
        tree.unlink(p, name)
        del model.files[path]
    elif op == "rmdir" and path in model.dirs and not model.below(path):
        tree.rmdir(p, name)
        model.dirs.discard(path)
    elif op == "rename" and taken:
        _rename(rng, tree, model, p, name, path)


def _rename(
    rng: random.Random, tree: Worktree, model: Model, p: Node, name: bytes, path: bytes
) -> None:
    new_parent = rng.choice([b"", *sorted(model.dirs)])
    new_name = rng.choice(NAMES)
    target = _join(new_parent, new_name)
    exchange = rng.random() < 0.25 and (target in model.files or target in model.dirs)
    try:
        tree.rename(p, name, _node(tree, new_parent), new_name, exchange=exchange)
    except HelixError:
        return  # refused (into itself, over a non-empty dir, type clash): model unchanged
    if target == path:
        return
    if exchange:
        _swap(model, path, target)
        return
    moved_files = {k: v for k, v in model.files.items() if k == path or k.startswith(path + b"/")}
    moved_dirs = {d for d in model.dirs if d == path or d.startswith(path + b"/")}
    model.files.pop(target, None)
    model.dirs.discard(target)
    for k in moved_files:
        del model.files[k]
    model.dirs -= moved_dirs
    for k, v in moved_files.items():
        model.files[target + k[len(path) :]] = v
    model.dirs |= {target + d[len(path) :] for d in moved_dirs}


def _subtree(model: Model, path: bytes) -> tuple[dict[bytes, bytes], set[bytes]]:
    """The files and dirs at or below `path`, keyed relative to it, taken out of the model."""
    inside = path + b"/"
    files = {k: model.files.pop(k) for k in list(model.files) if k == path or k.startswith(inside)}
    dirs = {d for d in model.dirs if d == path or d.startswith(inside)}
    model.dirs -= dirs
    return {k[len(path) :]: v for k, v in files.items()}, {d[len(path) :] for d in dirs}


def _swap(model: Model, a: bytes, b: bytes) -> None:
    (a_files, a_dirs), (b_files, b_dirs) = _subtree(model, a), _subtree(model, b)
    for root, files, dirs in ((b, a_files, a_dirs), (a, b_files, b_dirs)):
        model.files.update({root + k: v for k, v in files.items()})
        model.dirs |= {root + d for d in dirs}


def _check_listings(node: Node) -> None:
    """Every loaded directory's cached listing is its children in name order."""
    if node.children is None:
        return
    if node.listing is not None:
        assert list(node.listing) == sorted(node.children.items()), node.name
    for child in node.children.values():
        _check_listings(child)


def _brute_last_commit(repo: Repository, path: bytes) -> bytes | None:
    """Compare the path's entry commit by commit, the slow obvious way."""

    def key(tree: bytes) -> object:
        try:
            entry = repo.trees.entry(tree, path)  # type: ignore[arg-type]
        except HelixError:
            return None
        return attrs.change_key(entry)  # times are no change (ADR 0042)

    commits = list(repo.log())
    if key(commits[0].tree) is None:
        return None
    for commit, parent in zip(commits, commits[1:], strict=False):
        if key(commit.tree) != key(parent.tree):
            return commit.id
    return commits[-1].id


def _check_last_commits(repo: Repository, tree: Worktree, model: Model) -> None:
    paths = {*model.committed(), *model.dirs}
    paths |= {b"gone", b"a/b/c"}
    for path in sorted(paths):
        assert tree.last_commit(path) == _brute_last_commit(repo, path), path


def _check(repo: Repository, model: Model) -> None:
    files = {}
    dirs = set()
    for path, entry in repo.trees.walk(repo.commit_info("HEAD").tree):
        if entry.is_dir():
            dirs.add(path)
        else:
            files[path] = repo.contents.read(entry.oid)
    assert files == model.committed()
    assert dirs == model.dirs


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_operations_match_the_model(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore()
    repo = Repository.create(store)
    tree = repo.worktree("main")
    model = Model()
    for _ in range(400):
        _step(rng, tree, model)
        _check_listings(tree.root)
        roll = rng.random()
        if roll < 0.15:
            tree.commit()
            _check(repo, model)
        elif roll < 0.2:
            tree.save()
        elif roll < 0.22:
            tree.commit()
            tree.reload()
    tree.commit()
    _check_last_commits(repo, tree, model)
    tree.save()
    reopened = Repository.wrap(store)  # recovery commits what was only saved
    _check(reopened, model)
    assert reopened.fsck().ok
