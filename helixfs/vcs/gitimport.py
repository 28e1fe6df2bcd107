"""`import_git`: every commit of a git repository, with messages, authors, times, merges.

Reads git through one long-lived `git cat-file --batch` process (plumbing, streaming,
no checkout). Blobs are content-addressed like ours, so each is converted once and
memoised by its git id. Our trees also hold mtimes, which git does not have: an entry
gets the time of the commit that changed it, judged against the first parent's tree.
So a commit that changes one file converts one blob and the trees on its path, whatever
the size of the project, and its tree depends only on its own first-parent history, not
on which other branches the import saw first: importing the same history twice (or again
with new branches) yields the same commits and only moves refs.

Branches become branches (`/` in a git name becomes `-`), tags become snapshots. A
branch that already exists is only moved if it is the empty commit `helix init` made, or
a fast-forward of an earlier import of the same git branch; otherwise the import is
refused before anything is written (`prefix` imports side by side instead). Into a
fresh store, HEAD follows git's HEAD branch, and an empty `main` left behind goes. Commits
that only git's detached HEAD reaches have no name to land under: the summary counts them.

REPO is a repository's top folder or git folder (git finds one above any other folder),
read whatever GIT_DIR & co. the caller has set, and without replace refs: commits are
imported as stored. A submodule becomes an empty folder, as a plain checkout leaves it.
A partial clone (`git clone --filter`) works while git can fetch what it left out, in
one request before the import; once its remote is out of reach, the error says what to
fetch.
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from helixfs.errors import (
    AlreadyExists,
    CorruptObject,
    HelixError,
    InvalidInput,
    InvalidName,
    NotFound,
)
from helixfs.ids import CommitId, ObjectId, object_id
from helixfs.vcs.ancestry import GENERATION, generation
from helixfs.vcs.attrs import folder_entry
from helixfs.vcs.content import pack_bytes
from helixfs.vcs.objects import (
    MODE_DIR,
    MODE_FILE,
    MODE_LINK,
    Commit,
    Tree,
    TreeEntry,
    encode_commit,
    valid_name,
)
from helixfs.vcs.refs import branch_ref, check_name, snapshot_ref
from helixfs.vcs.transfer import _Batch
from helixfs.vcs.treeops import CONTROL_DIR, EMPTY_TREE, EMPTY_TREE_ID, EMPTY_TREE_RECORD, find

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

Progress = Callable[[int, int], None]
_MODES = {b"100644": MODE_FILE, b"100755": MODE_FILE | 0o111, b"120000": MODE_LINK}
_GITLINK = b"160000"
_GIT_NAME = b".git"
_DIR = b"40000"


@dataclass(frozen=True)
class GitImportSummary:
    commits: int  # converted by this import
    skipped: int  # already in the store (an earlier import of the same history)
    branches: list[str] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)
    head: str | None = None
    submodules_skipped: int = 0  # gitlinks: empty folders here, their commits not imported
    refs_skipped: list[str] = field(default_factory=list)
    # git's HEAD detached at a commit no imported branch or tag reaches: its commits
    # are not imported (nothing here could name them), so the summary says how many
    detached_head: str | None = None
    detached_commits_skipped: int = 0
    # root trees that held a `.helix` entry: a mount's control folder is never part of
    # a tree (`import DIR` and the commit API leave it out too), so it is left out here
    helix_folders_skipped: int = 0
    # tree entries named `.git` (any case): git refuses to check them out, since git run
    # in the checkout would take them for its repository (its config, its hooks)
    git_entries_skipped: int = 0


_REPOSITORY_VARIABLES = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
    }
)
"""What `git rev-parse --local-env-vars` lists: variables that point git at another
repository than the one it runs in (a git hook, `git rebase --exec`, set GIT_DIR)."""


def _git_env() -> dict[str, str]:
    """git for the repository named by its path, whatever the caller's environment,
    and its objects as stored: replace refs (which a clone leaves behind) would give
    other trees and parents than the commit ids meta["git"] names."""
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_NO_REPLACE_OBJECTS="1")
    return env


def _git(
    repo_path: Path, *args: str, check: bool = True, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", "-C", str(repo_path), *args],
            input=stdin,
            capture_output=True,
            env=_git_env(),
            check=check,
        )
    except FileNotFoundError:
        raise InvalidInput(
            "git is not installed: it is needed to import a git repository"
        ) from None
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode(errors="replace").strip().splitlines()
        raise InvalidInput(
            f"git {args[0]} failed in {repo_path}: {detail[-1] if detail else exc}"
        ) from None


class _CatFile:
    """One `git cat-file --batch` process: request an object, read exactly its bytes."""

    def __init__(self, repo_path: Path) -> None:
        self.path = repo_path
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo_path), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_git_env(),
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout

    def get(self, sha: str, expected: bytes) -> bytes:
        self._in.write(sha.encode() + b"\n")
        self._in.flush()
        header = self._out.readline().split()
        if not header or header[1:] == [b"missing"]:  # none: git ended, a fetch failed
            raise _missing_object(self.path, sha)
        if len(header) != 3 or header[1] != expected:
            raise CorruptObject(f"git object {sha} is missing or not a {expected.decode()}")
        data = self._out.read(int(header[2]))
        self._out.read(1)  # the newline after each object
        return data

    def close(self) -> None:
        self._in.close()
        self.proc.wait()


def _missing_object(path: Path, sha: str) -> HelixError:
    """git asks the remote of a partial clone (`git clone --filter`) for an object it
    left out, and the import goes on; a remote out of reach leaves the object missing."""
    remote = _promisor_remote(path)
    if remote is None:
        return CorruptObject(f"git object {sha} is missing from {path} (see git fsck)")
    return InvalidInput(
        f"{path} is a partial clone (git clone --filter) and its remote {remote!r} did not "
        f"send git object {sha}: fetch every missing object (git -C {path} -c "
        f"remote.{remote}.partialclonefilter= fetch --refetch {remote}), or clone without "
        "--filter, and import again"
    )


def _fetch_left_out(path: Path, refs: list[_GitRef]) -> None:
    """A partial clone's left-out objects that the import will read, fetched in one
    request: `cat-file` has git fetch each one on its own, a round trip per blob (10,000
    files: 10,000 fetches). What this does not get is fetched, or named, as before."""
    remote = _promisor_remote(path)
    if remote is None or not refs:
        return
    listed = _git(
        path, "rev-list", "--objects", "--missing=print", *{r.sha for r in refs}, check=False
    )
    left_out = [line[1:] for line in listed.stdout.splitlines() if line.startswith(b"?")]
    if left_out:  # the command git itself runs to fetch what a partial clone lacks
        _git(
            path,
            *("-c", "fetch.negotiationAlgorithm=noop", "fetch", remote, "--no-tags"),
            *("--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none"),
            "--stdin",
            stdin=b"\n".join(left_out) + b"\n",
            check=False,
        )


def _promisor_remote(path: Path) -> str | None:
    """The remote a partial clone fetches its missing objects from, or None."""
    found = _git(path, "config", "--get-regexp", r"^remote\..*\.promisor$", check=False)
    for line in found.stdout.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lower() in ("true", "yes", "on", "1"):
            return key[len("remote.") : -len(".promisor")]
    older = _git(path, "config", "extensions.partialClone", check=False)  # before git 2.24
    return older.stdout.decode(errors="replace").strip() or None


class _Converter:
    """Git objects -> HelixFS objects, memoised by git id."""

    def __init__(
        self,
        repo: Repository,
        cat: _CatFile,
        id_size: int,
        batch: _Batch,
        known: dict[str, CommitId],
    ) -> None:
        self.repo = repo
        self.cat = cat
        self.id_size = id_size
        self.batch = batch
        self.tree_shas: dict[ObjectId, bytes] = {}  # our trees -> the git trees they came from
        self.roots: dict[str, ObjectId] = {}  # git commit -> our root tree
        self.blobs: dict[bytes, tuple[ObjectId, int]] = {}
        self.link_targets: set[bytes] = set()  # blobs checked as a symlink's target
        self.commits: dict[str, CommitId] = {}
        self.generations: dict[CommitId, int] = {}  # of the commits this import made
        self.known = known  # git commit -> ours, made by an earlier import
        self.submodules = 0
        self.helix_folders = 0
        self.git_folders = 0

    def blob(self, sha: bytes, *, link: bool = False) -> tuple[ObjectId, int]:
        found = self.blobs.get(sha)
        if found is None or (link and sha not in self.link_targets):
            data = self.cat.get(sha.hex(), b"blob")
            if link:
                _check_link_target(sha, data)
                self.link_targets.add(sha)
            stored = pack_bytes(data)
            self.batch.add(stored.objects)
            found = self.blobs[sha] = (stored.oid, stored.size)
        return found

    def tree(
        self, sha: bytes, time_ns: int, base: ObjectId | None, *, root: bool = False
    ) -> ObjectId:
        """Git tree `sha` as ours; `base` is our tree at the same path in the first parent.

        What `base` already holds keeps its entries (and their mtimes); the rest gets
        `time_ns`. A memo by git id alone would stamp a tree with the time of whichever
        commit the import met first, so a new branch could change older commits' ids."""
        if base is not None and self.tree_shas.get(base) == sha:
            return base
        old = self._listing(base) if base is not None else EMPTY_TREE
        raw = self.cat.get(sha.hex(), b"tree")
        entries = [e for e in self._entries(sha, raw, time_ns, old, root) if e]
        objects: dict[ObjectId, bytes] = {}
        oid = self.repo.trees.build(entries, objects)
        self.batch.add(objects)
        self.tree_shas[oid] = sha
        return oid

    def empty_tree(self) -> ObjectId:
        self.batch.add({EMPTY_TREE_ID: EMPTY_TREE_RECORD})
        return EMPTY_TREE_ID

    def _listing(self, oid: ObjectId) -> Tree:
        """A tree built earlier in this import, usually still in the tree cache; one
        dropped from it before its batch reached the store is read after a flush."""
        try:
            return self.repo.trees.get(oid)
        except NotFound:
            self.batch.flush()
            return self.repo.trees.get(oid)

    def _entries(
        self, sha_of_tree: bytes, raw: bytes, time_ns: int, old: Tree, root: bool
    ) -> list[TreeEntry | None]:
        entries: list[TreeEntry | None] = []
        seen: set[bytes] = set()
        pos = 0
        while pos < len(raw):
            space = raw.index(b" ", pos)
            nul = raw.index(b"\0", space)
            mode, name = raw[pos:space], raw[space + 1 : nul]
            sha = raw[nul + 1 : nul + 1 + self.id_size]
            pos = nul + 1 + self.id_size
            if root and name == CONTROL_DIR:
                self.helix_folders += 1
                continue
            if name.lower() == _GIT_NAME:  # git's checkout refuses it (fsck: hasDotgit)
                self.git_folders += 1
                continue
            _check_name(sha_of_tree, name, seen)
            entries.append(self._entry(_canon_mode(mode), name, sha, time_ns, find(old, name)))
        return entries

    def _entry(
        self, mode: bytes, name: bytes, sha: bytes, time_ns: int, old: TreeEntry | None
    ) -> TreeEntry | None:
        if mode == _DIR:
            sub = self.tree(sha, time_ns, old.oid if old is not None and old.is_dir() else None)
            made = TreeEntry(name, MODE_DIR, sub, 0, time_ns)
            entry = folder_entry(made, sub, self._listing(sub).entries)
        elif mode == _GITLINK:  # another repository's commit: an empty folder, as a
            # checkout without --recurse-submodules (and git archive) leaves it
            self.submodules += 1
            entry = TreeEntry(name, MODE_DIR, self.empty_tree(), 0, time_ns)
        else:
            oid, size = self.blob(sha, link=_MODES[mode] == MODE_LINK)
            entry = TreeEntry(name, _MODES[mode], oid, size, time_ns)
        unchanged = old is not None and (old.mode, old.oid) == (entry.mode, entry.oid)
        return old if unchanged else entry

    def commit(self, sha: str) -> tuple[CommitId, bool]:
        known = self.known.get(sha)
        if known is not None:  # kept as it is, even if an older version converted it
            self.commits[sha] = known
            return known, True
        headers, message = _parse_commit(self.cat.get(sha, b"commit"))
        encoding = _encoding(headers)
        author, author_ns, author_date = _parse_person(headers.get(b"author", [b""])[0], encoding)
        parents = tuple(self._parent(sha, p.decode()) for p in headers.get(b"parent", []))
        first = headers.get(b"parent", [b""])[0].decode()
        git_tree = bytes.fromhex(headers[b"tree"][0].decode())
        base = self._root(first) if first else None
        tree = self.roots[sha] = self.tree(git_tree, author_ns, base, root=True)
        meta: dict[str, Any] = {
            "git": {
                "commit": sha,
                "author_date": author_date,
                "committer": headers.get(b"committer", [b""])[0].decode(encoding, "replace"),
            },
            GENERATION: 1 + max(map(self._generation, parents), default=0),
        }
        record = encode_commit(Commit(tree, parents, author_ns, author, message, meta))
        cid = CommitId(object_id(record))
        self.generations[cid] = meta[GENERATION]
        self.batch.keep([ObjectId(cid)])  # stored already, it may be garbage until the refs move
        existed = self.repo.store.contains(ObjectId(cid))
        if not existed:
            self.batch.add({ObjectId(cid): record})
        self.commits[sha] = cid
        return cid, existed

    def _generation(self, cid: CommitId) -> int:
        """Made by this import (maybe not stored yet), else a stored commit's."""
        return self.generations.get(cid) or generation(self.repo, cid)

    def _root(self, sha: str) -> ObjectId:
        """Our root tree of a converted git commit (`_parent` checked it is one)."""
        found = self.roots.get(sha)
        if found is None:  # an earlier import's: read which git tree it came from
            headers, _ = _parse_commit(self.cat.get(sha, b"commit"))
            found = self.roots[sha] = self.repo.commit_info(self.commits[sha]).tree
            self.tree_shas[found] = bytes.fromhex(headers[b"tree"][0].decode())
        return found

    def _parent(self, sha: str, parent: str) -> CommitId:
        """rev-list gives parents first; one missing means git's history has a hole
        (a shallow or grafted repository)."""
        found = self.commits.get(parent)
        if found is None:
            raise InvalidInput(f"git commit {sha} has parent {parent}, which is missing")
        return found


def _check_name(tree: bytes, name: bytes, seen: set[bytes]) -> None:
    """A name git's fsck calls an error (empty, `.`, `..`, holding `/`, twice in a tree)
    would make a tree no checkout can write: refuse it, naming the git tree."""
    if name in seen or not valid_name(name):
        problem = " twice" if name in seen else ", which no file may be named"
        raise CorruptObject(
            f"git tree {tree.hex()} holds an entry named {name!r:.80}{problem} "
            "(git fsck says so too): not importing it"
        )
    seen.add(name)


def _check_link_target(blob: bytes, target: bytes) -> None:
    """No symlink can point at nothing or hold a NUL: git's checkout fails on one, and an
    export of it failed (with a traceback for the NUL)."""
    if not target or b"\0" in target:
        raise CorruptObject(
            f"git blob {blob.hex()} is a symbolic link to {target!r:.80}, which no link "
            "can hold: not importing it"
        )


def _canon_mode(mode: bytes) -> bytes:
    """A tree entry's mode as git's tree walk reads it (canon_mode): a zero-padded one
    (`040000`, written by old tools; fsck only warns) or one with other permission bits
    (`100664`) is the usual mode of its kind, and a kind git does not know is a gitlink."""
    if mode in _MODES or mode in (_DIR, _GITLINK):
        return mode
    try:
        value = int(mode, 8)
    except ValueError:
        raise CorruptObject(f"git tree entry with the mode {mode!r}") from None
    kind = value & 0o170000
    if kind == 0o100000:
        return b"100755" if value & 0o100 else b"100644"
    return {0o120000: b"120000", 0o040000: _DIR}.get(kind, _GITLINK)


def _parse_commit(raw: bytes) -> tuple[dict[bytes, list[bytes]], str]:
    head, _, body = raw.partition(b"\n\n")
    headers: dict[bytes, list[bytes]] = {}
    for line in head.split(b"\n"):
        if line.startswith(b" "):  # continuation of a multi-line header (gpgsig, mergetag)
            continue
        key, _, value = line.partition(b" ")
        headers.setdefault(key, []).append(value)
    if b"tree" not in headers:
        raise CorruptObject("git commit without a tree")
    return headers, body.decode(_encoding(headers), "surrogateescape")


def _encoding(headers: dict[bytes, list[bytes]]) -> str:
    """The commit's `encoding` header (git writes one for i18n.commitEncoding other than
    UTF-8, e.g. ISO-8859-1), when Python knows it; UTF-8 otherwise."""
    name = headers.get(b"encoding", [b"utf-8"])[0].decode("ascii", "replace")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def _parse_person(value: bytes, encoding: str = "utf-8") -> tuple[str, int, str]:
    """`Name <email> 1700000000 +0100` -> ("Name <email>", time_ns, "1700000000 +0100").

    As git reads it: the date follows the last `>`, after any spaces (an old importer's
    `<email>  1700000000` came in as an author holding its date, at time 0)."""
    who, bracket, when = value.rpartition(b">")
    if not bracket:
        return _person_without_mail(value, encoding)
    try:
        date = " ".join(when.decode().split())
        return who.decode(encoding, "surrogateescape") + ">", _clamped_ns(date), date
    except ValueError:  # `Weird <a@b> junk 1600000000 +0100`: the date still ends it
        found = _DATE_AT_THE_END.fullmatch(when.strip())
        if found is None:
            return value.decode(encoding, "surrogateescape"), 0, ""
        date = " ".join(found[2].decode().split())
        return who.decode(encoding, "surrogateescape") + ">", _clamped_ns(date), date


_DATE_AT_THE_END = re.compile(rb"(?:(.*?)\s+)?(\d+\s+[+-]\d+)\s*")


def _person_without_mail(value: bytes, encoding: str) -> tuple[str, int, str]:
    """`NoBrackets 1600000000 +0100`: git shows no author and no date for it (it needs
    a `<...>`), but the date at the end is plainly the author's: better than 1970 (the
    files' mtimes come from it). The rest is the author. No date there: time 0."""
    found = _DATE_AT_THE_END.fullmatch(value)
    if found is None:
        return value.decode(encoding, "surrogateescape"), 0, ""
    who, when = found.groups()
    date = " ".join(when.decode().split())
    return (who or b"").decode(encoding, "surrogateescape"), _clamped_ns(date), date


def _clamped_ns(date: str) -> int:
    """The seconds of `SECONDS [ZONE]` in ns, kept within what a commit can hold."""
    return min(max(int(date.partition(" ")[0]) * 10**9, -_NS_LIMIT - 1), _NS_LIMIT)


_NS_LIMIT = 2**63 - 1
"""Commit times and mtimes are signed 64-bit ns (1677..2262). Git allows later dates
(a broken clock): they are kept at the limit, and meta's author_date keeps git's own."""


# -- refs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _GitRef:
    kind: str  # "branch" or "snapshot"
    name: str  # the HelixFS name
    sha: str  # the git commit it points at
    ref: str  # the helix ref name
    git_name: str  # the git ref name, for messages


def _git_refs(path: Path, prefix: str, skipped: list[str]) -> list[_GitRef]:
    """Branches and tags that point at commits, with their HelixFS names.

    Skipped (and listed in `skipped`): names that are not UTF-8 or not valid HelixFS
    names, and refs at anything but a commit (a tag, lightweight or annotated, can
    name a blob or a tree). Two git refs that map to one name are refused.
    """
    out = _git(
        path,
        "for-each-ref",
        "--format=%(objecttype) %(objectname) %(*objecttype) %(*objectname) %(refname)",
        "refs/heads",
        "refs/tags",
    ).stdout
    found = []
    for line in out.split(b"\n"):
        if line:
            ref = _git_ref(_peel_nested_tag(path, line), prefix)
            if ref is None:
                skipped.append(line.split(b" ", 4)[-1].decode("utf-8", "backslashreplace"))
            else:
                found.append(ref)
    _refuse_clashes(found)
    return found


def _peel_nested_tag(path: Path, line: bytes) -> bytes:
    """for-each-ref peels a tag once; a tag of a tag of a commit (git's `tag -a` of an
    annotated tag makes one) names that commit for git (`REF^{commit}`), so for us too."""
    kind, sha, peeled_kind, peeled, name = line.split(b" ", 4)
    if kind != b"tag" or peeled_kind != b"tag":
        return line
    found = _git(path, "rev-parse", "-q", "--verify", os.fsdecode(name) + "^{commit}", check=False)
    if found.returncode != 0:  # a tag of a tree or blob, in the end
        return line
    return b" ".join((kind, sha, b"commit", found.stdout.strip(), name))


def _git_ref(line: bytes, prefix: str) -> _GitRef | None:
    """One `for-each-ref` line as a ref to import, or None for one to skip."""
    kind, sha, peeled_kind, peeled, raw_name = line.split(b" ", 4)
    try:
        refname = raw_name.decode()
    except UnicodeDecodeError:
        return None
    # An annotated tag names what it peels to (_peel_nested_tag peeled tags of tags).
    target_kind, target = (peeled_kind, peeled) if kind == b"tag" else (kind, sha)
    if target_kind != b"commit":
        return None
    is_branch = refname.startswith("refs/heads/")
    name = prefix + refname.split("/", 2)[2].replace("/", "-")
    try:
        check_name(name, "branch" if is_branch else "snapshot")
    except InvalidName:
        return None
    ref = branch_ref(name) if is_branch else snapshot_ref(name)
    return _GitRef("branch" if is_branch else "snapshot", name, target.decode(), ref, refname)


def _refuse_clashes(refs: list[_GitRef]) -> None:
    """Two git refs that became one HelixFS name (`a/b` and `a-b`) would overwrite each
    other; guessing a third name would not survive the next import, so refuse."""
    by_ref: dict[str, _GitRef] = {}
    for ref in refs:
        other = by_ref.setdefault(ref.ref, ref)
        if other is not ref:
            raise InvalidInput(
                f"git refs {other.git_name!r} and {ref.git_name!r} would both become "
                f"{ref.kind} {ref.name!r}: rename one of them in git; nothing was imported"
            )


def _check_ref(repo: Repository, path: Path, ref: _GitRef) -> None:
    """Refuse, before writing anything, to move a ref that holds other work."""
    current = repo.store.ref(ref.ref)
    if current is None:
        return
    commit = repo.commit_info(CommitId(current))
    if _is_init_commit(commit):
        return  # the empty commit `helix init` made
    earlier = (
        commit.meta.get("git", {}).get("commit")
        if isinstance(commit.meta.get("git"), dict)
        else None
    )
    if (
        earlier
        and _git(path, "merge-base", "--is-ancestor", earlier, ref.sha, check=False).returncode == 0
    ):
        return  # a fast-forward of an earlier import
    raise AlreadyExists(
        f"{ref.kind} {ref.name!r} already exists with other commits: "
        "import into a fresh store, or give a prefix (helix import --from-git REPO --prefix git-)"
    )


def _check_prefix(prefix: str) -> None:
    """A prefix no name may start with would skip every ref: exit 0, nothing imported."""
    if prefix:
        try:
            check_name(prefix + "main")
        except InvalidName as err:
            raise InvalidName(f"--prefix {prefix!r} cannot start a name: {err}") from None


def import_git(
    repo: Repository, path: Path, *, prefix: str = "", progress: Progress | None = None
) -> GitImportSummary:
    """Import every commit reachable from the branches and tags of the git repo `path`."""
    _check_prefix(prefix)
    path = Path(path)
    if not path.is_dir():
        raise NotFound(f"no such folder: {path}")
    _refuse_all_but_a_repository_top(path)
    _refuse_shallow(path)
    id_size = (
        32
        if _git(path, "rev-parse", "--show-object-format", check=False).stdout.strip() == b"sha256"
        else 20
    )
    refs_skipped: list[str] = []
    refs = _git_refs(path, prefix, refs_skipped)
    if not refs and not refs_skipped:
        _refuse_no_commits(path)
    for ref in refs:
        _check_ref(repo, path, ref)
    shas = (
        _git(path, "rev-list", "--topo-order", "--reverse", *{r.sha for r in refs}).stdout.split()
        if refs
        else []
    )
    _fetch_left_out(path, refs)
    with _Batch(repo) as batch:
        cat = _CatFile(path)
        converter = _Converter(repo, cat, id_size, batch, _imported(repo, refs))
        made = skipped = 0
        try:
            for done, sha in enumerate(shas, 1):
                _, existed = converter.commit(sha.decode())
                skipped += existed
                made += not existed
                if progress is not None:
                    progress(done, len(shas))
        finally:
            cat.close()
        batch.flush()
        head_was_empty = _is_init_commit(repo.commit_info("HEAD"))
        _move_refs(repo, refs, converter.commits)
    head = _follow_git_head(repo, path, refs, prefix) if head_was_empty else repo.head_branch()
    detached, left_out = _detached_head_left_out(path, refs)
    return GitImportSummary(
        made,
        skipped,
        sorted(r.name for r in refs if r.kind == "branch"),
        sorted(r.name for r in refs if r.kind == "snapshot"),
        head,
        converter.submodules,
        refs_skipped,
        detached,
        left_out,
        converter.helix_folders,
        converter.git_folders,
    )


def _detached_head_left_out(path: Path, refs: list[_GitRef]) -> tuple[str | None, int]:
    """(git's detached HEAD, how many of its commits no imported ref reaches), or
    (None, 0). A clone checked out at a commit (CI does) may have no branch at all."""
    if _git(path, "symbolic-ref", "-q", "HEAD", check=False).returncode == 0:
        return None, 0  # on a branch
    found = _git(path, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    if found.returncode != 0:
        return None, 0  # no commit yet
    sha = found.stdout.strip().decode()
    wanted = "\n".join([sha, *(f"^{r.sha}" for r in refs)]) + "\n"
    listed = _git(path, "rev-list", "--count", "--stdin", stdin=wanted.encode(), check=False)
    count = listed.stdout.strip()
    left_out = int(count) if count.isdigit() else 0
    return (sha, left_out) if left_out else (None, 0)


def _imported(repo: Repository, refs: list[_GitRef]) -> dict[str, CommitId]:
    """Git commit -> ours, for the history earlier imports left under these refs. Those
    commits are not converted again: an import only costs its new commits, and one by
    an older version (other mtimes, say) still fast-forwards instead of forking."""
    todo = [CommitId(v) for r in refs if (v := repo.store.ref(r.ref)) is not None]
    seen = set(todo)
    known: dict[str, CommitId] = {}
    while todo:
        commit = repo.commit_info(todo.pop())
        git = commit.meta.get("git")
        if not isinstance(git, dict) or not isinstance(git.get("commit"), str):
            continue  # the init commit; other work is refused before (_check_ref)
        known[git["commit"]] = commit.id
        for parent in commit.parents:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return known


def _refuse_all_but_a_repository_top(path: Path) -> None:
    """REPO must be a work tree's top folder or a git folder (bare, or `.git`). git run in
    any other folder looks upwards and finds a repository above it: a subfolder, or a
    folder that merely sits inside someone's checkout, imported that one instead."""
    found = _git(path, "rev-parse", "--absolute-git-dir", check=False)
    if found.returncode != 0:  # git's first line says why: none, or not trusted (owner)
        said = found.stderr.decode(errors="replace").strip().splitlines() or ["no repository"]
        raise InvalidInput(f"{path} is not a git repository git can read: {said[0]}")
    git_dir = os.fsdecode(found.stdout.strip())
    top = os.fsdecode(_git(path, "rev-parse", "--show-toplevel", check=False).stdout.strip())
    here = os.path.realpath(path)
    if here not in (os.path.realpath(git_dir), top and os.path.realpath(top)):
        raise InvalidInput(
            f"{path} is not the top of a git repository but inside {top or git_dir}: "
            "import that folder instead"
        )


def _refuse_no_commits(path: Path) -> None:
    """No branch or tag names a commit: unless git's HEAD is detached at one (reported
    in the summary), there is nothing to import, and '0 commits' with exit 0 hid it."""
    head = _git(path, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        raise InvalidInput(f"{path} has no commits on a branch or tag: nothing to import")


def _refuse_shallow(path: Path) -> None:
    """A shallow clone lacks the parents of its oldest commits. Taking them as roots
    would give commit ids a later full import could not fast-forward, so refuse."""
    shallow = _git(path, "rev-parse", "--is-shallow-repository", check=False).stdout
    if shallow.strip() == b"true":
        raise InvalidInput(
            f"{path} is a shallow git clone (older commits are missing): "
            "fetch its whole history (git fetch --unshallow) and import again"
        )


def _move_refs(repo: Repository, refs: list[_GitRef], commits: dict[str, CommitId]) -> None:
    """All refs in one compare-and-swap write."""
    repo.move_refs({ref.ref: commits[ref.sha] for ref in refs})


def _is_init_commit(commit: Commit) -> bool:
    return not commit.parents and commit.tree == EMPTY_TREE_ID


def _follow_git_head(repo: Repository, path: Path, refs: list[_GitRef], prefix: str) -> str:
    """Check out git's HEAD branch: the store's HEAD showed nothing but `helix init`."""
    head = repo.head_branch()
    git_head = (
        _git(path, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.decode().strip()
    )
    wanted = prefix + git_head.replace("/", "-")
    match = [r.name for r in refs if r.kind == "branch" and git_head and r.name == wanted]
    if match and head not in match:
        repo.checkout(match[0])
        _drop_if_empty(repo, head)
        return match[0]
    return head


def _drop_if_empty(repo: Repository, branch: str) -> None:
    """The branch `helix init` made, left behind by the checkout of git's HEAD branch
    (`master`, `trunk`): a clone has no such empty branch beside its own. Kept if it
    holds anything, such as saves a mount had not committed yet."""
    with repo.lock:
        repo.settle(branch)
        if _is_init_commit(repo.commit_info(branch)):
            repo.delete_branch(branch)
