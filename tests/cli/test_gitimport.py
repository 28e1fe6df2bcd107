"""`helix import --from-git`: every commit, message, author, time, merge and tag."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from . import gitrepos
from .conftest import Helix, fails, ok, run_helix, store_state


def git(repo: Path, *args: str, date: int | None = None, stdin: bytes | None = None) -> str:
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    env.update(GIT_AUTHOR_NAME="Ada Lovelace", GIT_AUTHOR_EMAIL="ada@example.org")
    env.update(GIT_COMMITTER_NAME="Committer", GIT_COMMITTER_EMAIL="c@example.org")
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{date} +0200"
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, env=env
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def _write(repo: Path, name: str, text: str) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def new_git_repo(repo: Path) -> Path:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """main: 3 commits + a merge of `feature/x` (2 commits); a tag and an annotated tag."""
    repo = new_git_repo(tmp_path / "gitrepo")
    _write(repo, "README.md", "one\n")
    _write(repo, "src/app.py", "print('hi')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first\n\nwith a body", date=1_600_000_000)
    git(repo, "checkout", "-q", "-b", "feature/x")
    _write(repo, "src/feature.py", "F = 1\n")
    os.chmod(repo / "src" / "feature.py", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature: start", date=1_600_000_100)
    _write(repo, "src/feature.py", "F = 2\n")
    git(repo, "commit", "-q", "-am", "feature: more", date=1_600_000_200)
    git(repo, "checkout", "-q", "main")
    _write(repo, "README.md", "one\ntwo\n")
    os.symlink("README.md", repo / "link")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main: two", date=1_600_000_300)
    git(repo, "tag", "v0.1", "HEAD~1")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature/x", date=1_600_000_400)
    git(repo, "tag", "-a", "-m", "release", "v1.0")
    return repo


def _git_files(repo: Path, sha: str) -> dict[str, tuple[str, str]]:
    files = {}
    for line in git(repo, "ls-tree", "-r", sha).splitlines():
        meta, path = line.split("\t", 1)
        mode, _, blob = meta.split()
        files[path] = (mode, git(repo, "cat-file", "blob", blob))
    return files


def _helix_files(helix: Helix, rev: str, scratch: Path) -> dict[str, tuple[str, str]]:
    """The tree of `rev` as git would list it, read from a `helix export` of it."""
    target = scratch / rev
    ok(helix("export", rev, str(target)))
    files = {}
    for path in sorted(target.rglob("*")):
        rel = str(path.relative_to(target))
        if path.is_symlink():
            files[rel] = ("120000", os.readlink(path))
        elif path.is_file():
            mode = "100755" if path.stat().st_mode & 0o111 else "100644"
            files[rel] = (mode, path.read_text())
    return files


def test_every_commit_is_imported_faithfully(helix: Helix, git_repo: Path, tmp_path: Path) -> None:
    doc = ok(helix("import", "--json", "--from-git", str(git_repo))).json()
    assert doc["commits"] == 5 and doc["skipped"] == 0
    assert doc["branches"] == ["feature-x", "main"]
    assert doc["snapshots"] == ["v0.1", "v1.0"]
    log = ok(helix("log", "--json", "--graph")).json()
    git_log = git(git_repo, "log", "--topo-order", "--format=%H %at %an <%ae>", "main")
    expected = [line.split(" ", 2) for line in git_log.splitlines()]
    imported = {c["meta"]["git"]["commit"]: c for c in log if c["meta"].get("git")}
    assert set(imported) == {sha for sha, _, _ in expected}
    by_sha = {sha: c["id"] for sha, c in imported.items()}
    for sha, at, author in expected:
        commit = imported[sha]
        assert commit["author"] == author
        assert commit["time_ns"] == int(at) * 10**9
        message = git(git_repo, "cat-file", "commit", sha).split("\n\n", 1)[1]
        assert commit["message"] == message
        parents = git(git_repo, "rev-parse", f"{sha}^@").split()
        assert commit["parents"] == [by_sha[p] for p in parents]
        assert _helix_files(helix, commit["id"], tmp_path) == _git_files(git_repo, sha)
    tagged = git(git_repo, "rev-parse", "v0.1").strip()
    assert ok(helix("rev-parse", "v0.1")).out.strip() == by_sha[tagged]
    tagged = git(git_repo, "rev-parse", "v1.0^{commit}").strip()
    assert ok(helix("rev-parse", "v1.0")).out.strip() == by_sha[tagged]
    feature = git(git_repo, "rev-parse", "feature/x").strip()
    assert ok(helix("rev-parse", "feature-x")).out.strip() == by_sha[feature]
    assert "merge feature" in ok(helix("log", "--graph")).out.splitlines()[0]


def test_reimport_is_idempotent_and_fast_forwards(helix: Helix, git_repo: Path) -> None:
    ok(helix("import", "--from-git", str(git_repo)))
    heads = ok(helix("branch", "--json")).json()
    again = ok(helix("import", "--json", "--from-git", str(git_repo))).json()
    assert again["commits"] == 0 and again["skipped"] == 5
    assert ok(helix("branch", "--json")).json() == heads
    _write(git_repo, "new.txt", "new\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "later", date=1_600_000_500)
    third = ok(helix("import", "--json", "--from-git", str(git_repo))).json()
    assert third["commits"] == 1
    assert ok(helix("cat", "main", "new.txt")).out == "new\n"


def test_a_new_older_branch_leaves_imported_commits_unchanged(helix: Helix, tmp_path: Path) -> None:
    """Two branches make the same folder at different times. Importing the later one
    first, then both, must keep its commit: the folder's mtimes come from its own
    history, not from whichever branch the import met first."""
    repo = new_git_repo(tmp_path / "gitrepo")
    _write(repo, "lib/a", "base\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "root", date=1_600_000_000)
    for branch, date in (("early", 1_600_000_100), ("late", 1_600_000_200)):
        git(repo, "checkout", "-q", "-b", branch, "main")
        _write(repo, "lib/a", "same\n")
        git(repo, "commit", "-q", "-am", branch, date=date)
    early = git(repo, "rev-parse", "early").strip()
    git(repo, "branch", "-q", "-D", "early")
    ok(helix("import", "--from-git", str(repo)))
    late = ok(helix("rev-parse", "late")).out
    git(repo, "branch", "early", early)
    again = ok(helix("import", "--json", "--from-git", str(repo))).json()
    assert ok(helix("rev-parse", "late")).out == late
    assert again["commits"] == 1 and again["skipped"] == 2
    entry = ok(helix("ls", "--json", "late", "lib/a")).json()
    assert entry[0]["mtime_ns"] == 1_600_000_200 * 10**9


def test_reimport_builds_on_the_commits_already_in_the_store(
    helix: Helix, store: Path, git_repo: Path
) -> None:
    """An earlier import (say by an older version, with other mtimes) made `main`'s
    commit with another tree: a new git commit lands on top of it, not on a fresh
    conversion of the same history beside it."""
    from helixfs.ids import CommitId, ObjectId, object_id
    from helixfs.vcs.objects import Commit, encode_commit
    from helixfs.vcs.repo import Repository

    ok(helix("import", "--from-git", str(git_repo)))
    with Repository.open(store) as repo:
        tip = repo.commit_info("main")
        older = Commit(
            repo.commit_info("main~1").tree,
            tip.parents,
            tip.time_ns,
            tip.author,
            tip.message,
            tip.meta,
        )
        record = encode_commit(older)
        cid = CommitId(object_id(record))
        repo.store.write({ObjectId(cid): record})
        repo.move_refs({"branches/main": cid})
    _write(git_repo, "new.txt", "new\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "later", date=1_600_000_500)
    doc = ok(helix("import", "--json", "--from-git", str(git_repo))).json()
    assert doc["commits"] == 1
    assert ok(helix("rev-parse", "main~1")).out.strip() == cid.hex()


def test_import_into_a_store_with_other_work_is_refused(
    helix: Helix, store: Path, git_repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "x").write_text("mine")
    ok(helix("import", "mine"))
    before = store_state(store)
    fails(helix("import", "--from-git", str(git_repo)), says="already exists")
    assert store_state(store) == before
    doc = ok(helix("import", "--json", "--from-git", str(git_repo), "--prefix", "git-")).json()
    assert doc["branches"] == ["git-feature-x", "git-main"]
    assert ok(helix("cat", "main", "x")).out == "mine"


def test_a_folder_with_no_repository_or_no_commits_is_refused(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """A repository with no commits imported "0 commits on 0 branch(es)" with exit 0."""
    before = store_state(store)
    empty = tmp_path / "empty"
    empty.mkdir()
    fails(helix("import", "--from-git", str(empty)), says="is not a git repository")
    git(empty, "init", "-q")
    fails(helix("import", "--from-git", str(empty)), says="has no commits on a branch or tag")
    assert store_state(store) == before


def test_a_folder_inside_a_repository_is_refused(
    helix: Helix, store: Path, git_repo: Path, tmp_path: Path
) -> None:
    """git run in a folder looks upwards for its repository: `--from-git repo/src`, or
    any folder that sits in someone's checkout, imported that whole repository."""
    before = store_state(store)
    (git_repo / "untracked").mkdir()
    for inside in ("src", ".git/refs", "untracked"):
        fails(
            helix("import", "--from-git", str(git_repo / inside)),
            says=f"but inside {git_repo}",
        )
    assert store_state(store) == before
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(git_repo), str(bare))
    assert ok(helix("import", "--json", "--from-git", str(bare))).json()["commits"] == 5
    again = ok(helix("import", "--json", "--from-git", str(git_repo / ".git"))).json()
    assert (again["commits"], again["skipped"]) == (0, 5)


def test_git_variables_of_the_caller_do_not_redirect_the_import(
    helix: Helix, git_repo: Path, tmp_path: Path
) -> None:
    """Run where GIT_DIR is set (a git hook, `git rebase --exec`), the import read the
    repository GIT_DIR named, not REPO."""
    other = _two_commit_repo(tmp_path)
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)}
    doc = ok(helix("import", "--json", "--from-git", str(git_repo), env=env)).json()
    assert doc["commits"] == 5 and doc["snapshots"] == ["v0.1", "v1.0"]


def test_replaced_commits_are_imported_as_stored(helix: Helix, tmp_path: Path) -> None:
    """With `git replace`, the import stored another commit's tree and message under the
    replaced commit's sha (meta git.commit). A clone leaves replace refs behind."""
    repo = _two_commit_repo(tmp_path)
    git(repo, "checkout", "-q", "-b", "other", "HEAD~1")
    _write(repo, "f", "replacement\n")
    git(repo, "commit", "-q", "-am", "replacement")
    git(repo, "checkout", "-q", "main")
    git(repo, "replace", "main", "other")
    git(repo, "branch", "-q", "-D", "other")
    ok(helix("import", "--from-git", str(repo)))
    assert ok(helix("cat", "main", "f")).out == "2\n"
    assert [c["message"] for c in ok(helix("log", "--json")).json()] == ["c2\n", "c1\n"]


def test_head_follows_git_in_a_fresh_store(tmp_path: Path, git_repo: Path) -> None:
    store = tmp_path / "fresh"
    ok(run_helix("init", store=store))
    git(git_repo, "checkout", "-q", "-b", "trunk")
    ok(run_helix("import", "--from-git", str(git_repo), store=store))
    current = [
        b for b in ok(run_helix("branch", "--json", store=store)).json()["branches"] if b["current"]
    ]
    assert current[0]["name"] == "trunk"


def _one_commit_on_master(tmp_path: Path) -> Path:
    repo = tmp_path / "on-master"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    _write(repo, "f", "x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c1")
    return repo


def test_a_fresh_store_keeps_no_empty_main_beside_git_s_master(
    helix: Helix, tmp_path: Path
) -> None:
    """As a clone: git's branches and nothing else. The empty `main` of `helix init`
    stayed beside the imported, checked-out `master`."""
    ok(helix("import", "--from-git", str(_one_commit_on_master(tmp_path))))
    branches = ok(helix("branch", "--json")).json()["branches"]
    assert [(b["name"], b["current"]) for b in branches] == [("master", True)]


def test_a_main_with_saves_not_yet_committed_is_kept(tmp_path: Path) -> None:
    """A mount's `main` may hold saves its quiet window has not committed: not empty."""
    from helixfs.vcs.gitimport import import_git
    from helixfs.vcs.repo import Repository

    repo_path = _one_commit_on_master(tmp_path)
    with Repository.init(tmp_path / "s") as repo:
        tree = repo.worktree("main")
        tree.set_content(tree.create(tree.root, b"saved", 0o100644), b"mine\n")
        tree.save()
        assert import_git(repo, repo_path).head == "master"
        repo.settle("main")
        assert repo.read("main", b"saved") == b"mine\n"


def test_a_detached_head_with_commits_no_ref_reaches_is_reported(
    helix: Helix, git_repo: Path
) -> None:
    """A clone checked out at a commit (CI does) imported '0 commits on 0 branches' and
    exit 0: the commits only git's detached HEAD reached were dropped without a word."""
    git(git_repo, "checkout", "-q", "--detach")
    _write(git_repo, "new.txt", "detached work\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "on no branch")
    head = git(git_repo, "rev-parse", "HEAD").strip()
    doc = ok(helix("import", "--json", "--from-git", str(git_repo))).json()
    assert (doc["detached_head"], doc["detached_commits_skipped"]) == (head, 1)
    for branch in doc["branches"]:
        git(git_repo, "branch", "-q", "-D", branch.replace("-", "/"))
    git(git_repo, "tag", "-d", *doc["snapshots"])
    human = ok(helix("import", "--from-git", str(git_repo))).out
    assert f"git's HEAD is detached at {head[:12]}, with 6 commit(s)" in human


def test_a_detached_head_on_an_imported_branch_is_not_reported(
    helix: Helix, git_repo: Path
) -> None:
    git(git_repo, "checkout", "-q", "--detach", "HEAD~1")
    doc = ok(helix("import", "--json", "--from-git", str(git_repo))).json()
    assert (doc["detached_head"], doc["detached_commits_skipped"]) == (None, 0)


def _two_commit_repo(tmp_path: Path) -> Path:
    repo = new_git_repo(tmp_path / "small")
    _write(repo, "f", "1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c1", date=1_600_000_000)
    _write(repo, "f", "2\n")
    git(repo, "commit", "-q", "-am", "c2", date=1_600_000_100)
    return repo


def test_branches_that_map_to_one_name_are_refused_and_nothing_written(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """QA #2: `topic/x` and `topic-x` both become `g-topic-x`; one used to be dropped."""
    repo = _two_commit_repo(tmp_path)
    git(repo, "branch", "topic/x", "HEAD~1")
    git(repo, "branch", "topic-x")
    before = store_state(store)  # refs and every object id: nothing is flushed first
    result = fails(helix("import", "--from-git", str(repo), "--prefix", "g-"), says="topic/x")
    assert "'g-topic-x'" in result.err and "refs/heads/topic-x" in result.err
    assert store_state(store) == before


def test_tags_on_blobs_and_trees_are_skipped(helix: Helix, tmp_path: Path) -> None:
    """QA #3: a lightweight tag on a blob or tree is skipped like an annotated one."""
    repo = _two_commit_repo(tmp_path)
    git(repo, "tag", "blobtag", git(repo, "rev-parse", "HEAD:f").strip())
    git(repo, "tag", "treetag", git(repo, "rev-parse", "HEAD^{tree}").strip())
    git(repo, "tag", "-a", "-m", "on a tree", "annotree", "HEAD^{tree}")
    git(repo, "tag", "good", "HEAD~1")
    result = ok(helix("import", "--from-git", str(repo)))
    assert "skipped 3 ref(s)" in result.out
    doc = ok(helix("import", "--json", "--from-git", str(repo))).json()
    assert doc["snapshots"] == ["good"]
    assert sorted(doc["refs_skipped"]) == [
        "refs/tags/annotree",
        "refs/tags/blobtag",
        "refs/tags/treetag",
    ]
    # only the empty commit `helix init` made, which main left behind, is unreachable
    assert ok(helix("gc", "--json", "--dry-run")).json()["unreachable"] == 1


def test_shallow_clone_is_refused_in_one_line(helix: Helix, store: Path, tmp_path: Path) -> None:
    """QA #4: the parents of a shallow clone's oldest commit are missing."""
    repo = _two_commit_repo(tmp_path)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    before = store_state(store)
    fails(helix("import", "--from-git", str(shallow)), says="shallow")
    assert store_state(store) == before


def _partial_clone(repo: Path, target: Path) -> Path:
    """`git clone --filter=blob:none`: every blob stays on the remote until asked for."""
    git(repo, "config", "uploadpack.allowFilter", "true")
    git(
        target.parent,
        "clone",
        "-q",
        "--filter=blob:none",
        "--no-checkout",
        f"file://{repo}",
        str(target),
    )
    return target


def test_a_partial_clone_whose_remote_is_gone_says_what_to_fetch(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """`git clone --filter=blob:none` leaves blobs on the remote; git fetches each one
    the import asks for. With the remote out of reach the import ended in 'git object
    ... is missing or not a blob'. What the message says to run makes it work."""
    repo = _two_commit_repo(tmp_path)
    partial = _partial_clone(repo, tmp_path / "partial")
    away = repo.rename(tmp_path / "away")
    before = store_state(store)
    said = fails(helix("import", "--from-git", str(partial)), says="partial clone").err
    assert store_state(store) == before
    away.rename(repo)
    advice = said.split("(git -C ", 1)[1].split(")", 1)[0].split()
    git(Path(advice[0]), *advice[1:])
    ok(helix("import", "--from-git", str(partial)))
    assert ok(helix("cat", "main", "f")).out == "2\n"


def test_a_partial_clone_has_what_it_left_out_fetched_in_one_request(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """git fetched each blob the import asked `cat-file` for on its own: one round trip
    per file of every version. The import now asks for all of them at once."""
    repo = new_git_repo(tmp_path / "many")
    for version in range(3):
        for n in range(12):
            _write(repo, f"f{n}", f"{n} {version}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"v{version}", date=1_600_000_000 + version)
    partial = _partial_clone(repo, tmp_path / "partial")
    served = tmp_path / "served"
    counting = tmp_path / "counting-upload-pack"
    counting.write_text(f'#!/bin/sh\necho x >> {served}\nexec git-upload-pack "$@"\n')
    counting.chmod(0o755)
    git(partial, "config", "remote.origin.uploadpack", str(counting))
    ok(helix("import", "--from-git", str(partial)))
    assert served.read_text().count("x") == 1  # 36 blobs, one fetch
    assert ok(helix("cat", "main", "f11")).out == "11 2\n"
    assert ok(helix("cat", "main~2", "f0")).out == "0 0\n"


def test_ref_names_that_are_not_utf8_are_skipped_and_reported(helix: Helix, tmp_path: Path) -> None:
    """QA #5: `bad\\xffname` used to end the import with a UnicodeDecodeError."""
    repo = _two_commit_repo(tmp_path)
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    ref = b"refs/heads/bad\xffname"
    subprocess.run(
        [b"git", b"-C", os.fsencode(repo), b"update-ref", ref, b"HEAD"], env=env, check=True
    )
    doc = ok(helix("import", "--json", "--from-git", str(repo))).json()
    assert doc["branches"] == ["main"] and doc["refs_skipped"] == ["refs/heads/bad\\xffname"]


def test_ref_names_with_unprintable_characters_are_skipped_and_reported(
    helix: Helix, tmp_path: Path
) -> None:
    """A git branch named with a no-break or zero-width space passed check_name, then
    the store refused the ref: the whole import failed with 'ref name must be
    printable text without NUL, got 'branches/fix\\xa0space''."""
    repo = _two_commit_repo(tmp_path)
    git(repo, "branch", "fix\u00a0space")
    git(repo, "tag", "v\u200b1")
    doc = ok(helix("import", "--json", "--from-git", str(repo))).json()
    assert doc["branches"] == ["main"] and doc["snapshots"] == []
    assert doc["refs_skipped"] == ["refs/heads/fix\u00a0space", "refs/tags/v\u200b1"]
    fails(helix("branch", "fix\u00a0space"), says="may not contain spaces")


def test_commit_encoding_header_is_honoured(helix: Helix, tmp_path: Path) -> None:
    """QA #14: a commit with `encoding ISO-8859-1` came in as 'caf\\udce9'."""
    repo = _two_commit_repo(tmp_path)
    (tmp_path / "msg").write_bytes("café\n".encode("latin-1"))
    git(
        repo,
        "-c",
        "i18n.commitEncoding=ISO-8859-1",
        "commit",
        "-q",
        "--allow-empty",
        "-F",
        str(tmp_path / "msg"),
    )
    ok(helix("import", "--from-git", str(repo)))
    assert ok(helix("log", "--json", "-n", "1")).json()[0]["message"] == "café\n"


def test_a_prefix_no_name_may_start_with_is_refused(
    helix: Helix, store: Path, git_repo: Path
) -> None:
    """`--prefix a/` skipped every ref as "no valid name" and exited 0, importing nothing."""
    before = store_state(store)
    for prefix in ("a/", "-", "x y"):
        fails(helix("import", "--from-git", str(git_repo), "--prefix", prefix), says="--prefix")
    assert store_state(store) == before
    ok(helix("import", "--from-git", str(git_repo), "--prefix", "git-"))
    assert ok(helix("rev-parse", "git-main")).code == 0


def test_a_commit_dated_past_2262_is_kept_at_the_limit(helix: Helix, tmp_path: Path) -> None:
    """A git date past what signed 64-bit ns hold (a broken clock) ended the import with
    a struct.error traceback. Git's own date stays in meta."""
    repo = new_git_repo(tmp_path / "future")
    _write(repo, "x", "x\n")
    git(repo, "add", "-A")
    tree = git(repo, "write-tree").strip()
    person = "Ada <ada@example.org> 99999999999 +0200"  # year 5138: git's parser refuses it
    raw = f"tree {tree}\nauthor {person}\ncommitter {person}\n\nfrom the future\n"
    written = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=raw.encode(),
        capture_output=True,
        check=True,
    )
    git(repo, "update-ref", "refs/heads/main", written.stdout.decode().strip())
    ok(helix("import", "--from-git", str(repo)))
    (commit,) = ok(helix("log", "--json")).json()
    assert commit["time_ns"] == 2**63 - 1
    assert commit["meta"]["git"]["author_date"] == "99999999999 +0200"
    assert ok(helix("cat", "HEAD", "x")).out == "x\n"


def test_a_top_level_helix_folder_in_git_is_left_out_and_reported(
    helix: Helix, tmp_path: Path
) -> None:
    """A git tree with a root `.helix/` was imported whole: the mount then hid it behind
    its control folder, and an export carried a `.helix/store` file that store lookup
    from the export's folders trusts. `import DIR` and the commit API leave it out."""
    repo = new_git_repo(tmp_path / "withhelix")
    _write(repo, ".helix/store", "/somewhere/else\n")
    _write(repo, "src/.helix/kept.txt", "a .helix below the root is an ordinary folder\n")
    _write(repo, "README.md", "hi\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c1")
    doc = ok(helix("import", "--json", "--from-git", str(repo))).json()
    assert doc["helix_folders_skipped"] == 1
    names = {e["name"] for e in ok(helix("ls", "--json", "HEAD")).json()}
    assert names == {"README.md", "src"}
    assert ok(helix("cat", "HEAD", "src/.helix/kept.txt")).out.startswith("a .helix below")


# -- every commit against git itself ---------------------------------------------------

_LOG_FORMAT = "%H%x00%an <%ae>%x00%ad%x00%cn <%ce> %cd%x00%P%x00%B%x00"


def _checkout_listing(root: Path) -> dict[bytes, tuple[object, ...]]:
    """path -> (kind, then what git keeps of it: exec bit and bytes, or a link's target)."""
    top = os.fsencode(root)
    found: dict[bytes, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            rel = os.path.relpath(path, top)
            if stat.S_ISLNK(mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                found[rel] = ("dir",)
            else:
                found[rel] = ("file", bool(mode & 0o100), Path(os.fsdecode(path)).read_bytes())
    return found


def _git_archive(repo: Path, sha: str, target: Path) -> Path:
    target.mkdir()
    tar = gitrepos.run_git(repo, "archive", "--format=tar", sha)
    subprocess.run(["tar", "-x", "-m", "-C", str(target)], input=tar, check=True)
    return target


def _git_log(repo: Path) -> dict[str, list[str]]:
    """sha -> [author, author date, committer line, parents, message], as git shows them
    (a commit in another encoding re-encoded to UTF-8)."""
    raw = gitrepos.run_git(repo, "log", "--all", "--date=raw", f"--format={_LOG_FORMAT}")
    fields = raw.decode().split("\x00")
    records = [fields[i : i + 6] for i in range(0, len(fields) - 1, 6)]
    return {r[0].strip(): r[1:] for r in records}  # each record after the first: "\n" + sha


def _helix_commits(helix: Helix) -> dict[str, dict[str, object]]:
    """git sha -> the imported commit's log entry, from every branch and snapshot."""
    names = [b["name"] for b in ok(helix("branch", "--json")).json()["branches"]]
    names += [s["name"] for s in ok(helix("snapshot", "--json")).json()["snapshots"]]
    found = {}
    for name in names:
        for commit in ok(helix("log", "--json", "--graph", name)).json():
            if "git" in commit["meta"]:
                found[commit["meta"]["git"]["commit"]] = commit
    return found


def test_every_commit_matches_git_checkout_and_log(helix: Helix, tmp_path: Path) -> None:
    """Executable bits, symlinks of every sort, empty and big files, names and messages
    that are not UTF-8, CRLF, moved and deleted folders, entry kinds that change, empty
    commits, far dates and time zones, author != committer, a two-parent merge, an
    octopus, an `ours` merge, lightweight and annotated tags, an orphan branch and a
    submodule: each imported commit's export is git's checkout of it, byte for byte,
    and its log entry is git's."""
    repo = gitrepos.kitchen_sink(tmp_path / "git")
    ok(helix("import", "--from-git", str(repo)))
    ours = _helix_commits(helix)
    theirs = _git_log(repo)
    assert set(ours) == set(theirs)
    by_sha = {sha: commit["id"] for sha, commit in ours.items()}
    (tmp_path / "helix").mkdir()
    (tmp_path / "archive").mkdir()
    for sha, (author, author_date, committer, parents, message) in theirs.items():
        commit = ours[sha]
        exported = tmp_path / "helix" / sha
        ok(helix("export", str(commit["id"]), str(exported)))
        checkout = _git_archive(repo, sha, tmp_path / "archive" / sha)
        assert _checkout_listing(exported) == _checkout_listing(checkout), sha
        seconds = int(author_date.split()[0])
        assert (commit["author"], commit["time_ns"], commit["message"]) == (
            author,
            seconds * 10**9,
            message,
        )
        assert commit["meta"]["git"] == {  # type: ignore[index]
            "commit": sha,
            "author_date": author_date,
            "committer": committer,
        }
        assert commit["parents"] == [by_sha[p] for p in parents.split()]
    for line in gitrepos.run_git(repo, "for-each-ref", "--format=%(refname)").decode().split():
        kind, name = line.split("/", 2)[1:]
        rev = ("" if kind == "heads" else "snapshots/") + name.replace("/", "-")
        wanted = gitrepos.run_git(repo, "rev-parse", f"{line}^{{commit}}").decode().strip()
        assert ok(helix("rev-parse", rev)).out.strip() == by_sha[wanted]


def test_modes_old_tools_wrote_are_read_as_git_reads_them(helix: Helix, tmp_path: Path) -> None:
    """A tree with a zero-padded `040000` (git fsck only warns: zeroPaddedFilemode)
    ended the import with "git object ... is missing or not a blob", and `100775` was a
    plain file where git's checkout makes it executable."""
    repo = new_git_repo(tmp_path / "padded")
    blob = bytes.fromhex(git(repo, "hash-object", "-w", "--stdin", stdin=b"hi\n").strip())
    sub = git(repo, "hash-object", "-t", "tree", "-w", "--stdin", stdin=b"100644 f\0" + blob)
    raw = b"040000 d\0" + bytes.fromhex(sub.strip()) + b"100664 g\0" + blob + b"100775 x\0" + blob
    tree = git(repo, "hash-object", "-t", "tree", "-w", "--literally", "--stdin", stdin=raw)
    made = git(repo, "commit-tree", tree.strip(), "-m", "padded modes", date=1_600_000_000)
    git(repo, "update-ref", "refs/heads/main", made.strip())
    ok(helix("import", "--from-git", str(repo)))
    ok(helix("export", "main", str(tmp_path / "exported")))
    archive = _git_archive(repo, made.strip(), tmp_path / "archive")
    assert _checkout_listing(tmp_path / "exported") == _checkout_listing(archive)
    assert ok(helix("ls", "main", "x")).out.startswith("exec")


def _commit_raw_tree(repo: Path, entries: list[tuple[bytes, bytes, bytes]]) -> str:
    """A commit on main of a tree written byte for byte: (mode, name, content) entries,
    names and order as given, which `git hash-object --literally` takes unchecked."""
    raw = b""
    for mode, name, content in entries:
        blob = git(repo, "hash-object", "-w", "--stdin", stdin=content).strip()
        raw += mode + b" " + name + b"\0" + bytes.fromhex(blob)
    tree = git(repo, "hash-object", "-t", "tree", "-w", "--literally", "--stdin", stdin=raw)
    made = git(repo, "commit-tree", tree.strip(), "-m", "raw tree", date=1_600_000_000).strip()
    git(repo, "update-ref", "refs/heads/main", made)
    return made


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ([(b"100644", b"..", b"x")], "entry named b'..'"),
        ([(b"100644", b"a/b", b"x")], "entry named b'a/b'"),
        ([(b"100644", b"", b"x")], "entry named b''"),
        ([(b"100644", b"twin", b"1"), (b"100644", b"twin", b"2")], "b'twin' twice"),
        ([(b"120000", b"nowhere", b"")], "symbolic link to b''"),
        ([(b"120000", b"nul", b"a\0b")], "symbolic link to b'a\\x00b'"),
    ],
)
def test_trees_no_checkout_can_write_are_refused(
    helix: Helix, store: Path, tmp_path: Path, entries: list[tuple[bytes, bytes, bytes]], says: str
) -> None:
    """Names git's fsck calls errors, and links to nothing or with a NUL: the import
    failed on `..` with "invalid file name", stored a tree with a name twice that `ls`
    and `export` then refused as corrupt, and stored the links, whose export failed
    (with a ValueError traceback for the NUL)."""
    repo = new_git_repo(tmp_path / "raw")
    _commit_raw_tree(repo, [(b"100644", b"fine", b"fine\n"), *entries])
    before = store_state(store)
    fails(helix("import", "--from-git", str(repo)), says=says)
    assert store_state(store) == before


def test_entries_named_dot_git_are_left_out_and_reported(helix: Helix, tmp_path: Path) -> None:
    """Git's checkout refuses a tree entry named `.git` (any case): git run in the
    checkout would take it for its repository, with its config and hooks. The import
    kept it, so an export carried it."""
    repo = new_git_repo(tmp_path / "dotgit")
    _commit_raw_tree(repo, [(b"100644", b".GIT", b"gitdir: /elsewhere\n"), (b"100644", b"f", b"")])
    assert "left out 1 entries named .git" in ok(helix("import", "--from-git", str(repo))).out
    ok(helix("export", "main", str(tmp_path / "out")))
    assert os.listdir(tmp_path / "out") == ["f"]
    fresh = tmp_path / "fresh"
    ok(run_helix("init", store=fresh))
    doc = ok(run_helix("import", "--json", "--from-git", str(repo), store=fresh)).json()
    assert doc["git_entries_skipped"] == 1


def test_a_tag_of_a_tag_is_the_commit_it_peels_to(helix: Helix, tmp_path: Path) -> None:
    """`git tag -a outer inner` of an annotated tag: git resolves `outer` to the commit,
    the import skipped it as "not at a commit"."""
    repo = _two_commit_repo(tmp_path)
    git(repo, "tag", "-a", "-m", "inner", "inner", "HEAD~1")
    git(repo, "tag", "-a", "-m", "outer", "outer", "inner")
    git(repo, "tag", "-a", "-m", "on a tree", "treetag", "HEAD^{tree}")
    git(repo, "tag", "-a", "-m", "tag of that", "outertree", "treetag")
    doc = ok(helix("import", "--json", "--from-git", str(repo))).json()
    assert doc["snapshots"] == ["inner", "outer"]
    assert doc["refs_skipped"] == ["refs/tags/outertree", "refs/tags/treetag"]
    assert ok(helix("rev-parse", "outer")).out == ok(helix("rev-parse", "main~1")).out


def test_a_date_after_more_than_one_space_is_read_as_git_reads_it(
    helix: Helix, tmp_path: Path
) -> None:
    """An old importer's `author A <a@b>  1600000000 +0000` (two spaces): git shows the
    date; the import kept the date inside the author, at time 0."""
    repo = new_git_repo(tmp_path / "idents")
    tree = git(repo, "write-tree").strip()
    person = "A <a@b>  1600000000   +0100"
    raw = f"tree {tree}\nauthor {person}\ncommitter {person}\n\nspaced\n"
    made = git(
        repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=raw.encode()
    )
    git(repo, "update-ref", "refs/heads/main", made.strip())
    assert git(repo, "log", "--format=%an <%ae> %at") == "A <a@b> 1600000000\n"
    ok(helix("import", "--from-git", str(repo)))
    (commit,) = ok(helix("log", "--json")).json()
    assert (commit["author"], commit["time_ns"]) == ("A <a@b>", 1_600_000_000 * 10**9)
    assert commit["meta"]["git"]["author_date"] == "1600000000 +0100"


def _authored_chain(path: Path, *authors: str) -> Path:
    """A repository whose `main` is one raw commit per author line, in order (git's own
    commands refuse odd idents; hash-object --literally writes them as given)."""
    repo = new_git_repo(path)
    tree = git(repo, "write-tree").strip()
    parent = ""
    for person in authors:
        raw = f"tree {tree}\n{parent}author {person}\ncommitter C <c@x> 0 +0000\n\n{person}\n"
        made = git(
            repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=raw.encode()
        ).strip()
        parent = f"parent {made}\n"
    git(repo, "update-ref", "refs/heads/main", made)
    return repo


def test_log_shows_odd_authors_and_their_time_zones_as_git_does(
    helix: Helix, tmp_path: Path
) -> None:
    """`helix log` showed `Tight<t@x>` whole, `Spaced   <s@x>` with its spaces, and
    every time in UTC: git shows the name before the `<` and the author's own zone."""
    repo = _authored_chain(
        tmp_path / "odd",
        "No Mail <> 1600000000 +0100",
        "Tight<t@x> 1600000000 -0330",
        "Spaced   <s@x> 1600000000 +0545",
        "Two <a@b> <c@d> 1600000000 +0000",
    )
    ok(helix("import", "--from-git", str(repo)))
    theirs = git(repo, "log", "--date=format:%Y-%m-%d %H:%M %z", "--format=%ad  %an  %s")
    ours = [line.split("  ", 1)[1] for line in ok(helix("log")).out.splitlines()[:4]]
    assert ours == theirs.splitlines()


def test_an_author_without_a_mail_keeps_the_date_at_the_end_of_its_line(
    helix: Helix, tmp_path: Path
) -> None:
    """`author NoBrackets 1600000000 +0100` (no `<...>`) came in at time 0 (1970), the
    date inside the author string. git shows no author and no date for it (its
    split_ident_line needs a `<`); the date at the end is still the author's, so the
    import reads it there and keeps the rest as the author. No date: as before."""
    repo = _authored_chain(tmp_path / "nomail", "NoBrackets 1600000000 +0100", "Only Name")
    assert git(repo, "show", "-s", "--format=%an%n%ae%n%ad", "main~1") == "\n\n\n"
    ok(helix("import", "--from-git", str(repo)))
    only_name, no_brackets = ok(helix("log", "--json")).json()
    assert (no_brackets["author"], no_brackets["time_ns"]) == ("NoBrackets", 16 * 10**17)
    assert no_brackets["meta"]["git"]["author_date"] == "1600000000 +0100"
    assert (only_name["author"], only_name["time_ns"]) == ("Only Name", 0)
    assert "2020-09-13 13:26 +0100  NoBrackets  " in ok(helix("log")).out


def test_an_author_with_junk_before_its_date_keeps_the_date(helix: Helix, tmp_path: Path) -> None:
    """`Weird <a@b> junk 1600000000 +0100` came in at time 0, and its files with 1970
    mtimes (make then rebuilds everything). git shows no date for it; the date at the
    end of the line is still plainly the author's."""
    repo = _authored_chain(tmp_path / "junk", "Weird <a@b> junk 1600000000 +0100")
    ok(helix("import", "--from-git", str(repo)))
    (weird,) = ok(helix("log", "--json", "-n", "1")).json()
    assert (weird["author"], weird["time_ns"]) == ("Weird <a@b>", 16 * 10**17)
    assert weird["meta"]["git"]["author_date"] == "1600000000 +0100"
