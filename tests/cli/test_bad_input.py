"""Bad input gets one clear line, exit 1, and changes nothing in the store."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import Helix, fails, make_tree, ok, run_helix, store_state


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a commit, a branch and a snapshot, built once and copied per test."""
    root = tmp_path_factory.mktemp("template")
    make_tree(root / "proj", {"a.txt": "a\n", "dir/b.txt": "b\n"})
    store = root / "store"
    ok(run_helix("init", store=store))
    ok(run_helix("import", "proj", store=store, cwd=root))
    ok(run_helix("branch", "side", store=store))
    ok(run_helix("snapshot", "snap", store=store))
    return root


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Path:
    """Overrides conftest's empty store: a copy of the template (the store is closed)."""
    shutil.copytree(template / "store", tmp_path / "store", symlinks=True)
    shutil.copytree(template / "proj", tmp_path / "proj")
    return tmp_path / "store"


@pytest.fixture
def populated(store: Path, tmp_path: Path) -> Path:
    return tmp_path


BAD_COMMANDS = [
    (["log", "nosuchrev"], "unknown revision"),
    (["cat", "HEAD", "missing.txt"], "no such path"),
    (["cat", "HEAD", "dir"], "is a directory"),
    (["cat", "HEAD", "d/../../a.txt"], "'d/../../a.txt' leads above the root of the tree"),
    (["commit", "-m", "m", "../b=proj/a.txt"], "'../b' leads above the root"),
    (["ls", "HEAD", "missing.txt"], "no such path"),
    (["ls", "HEAD~5"], "past the first commit"),
    (["rev-parse", "ffffffffffff"], "unknown revision"),
    (["diff", "HEAD", "nope"], "unknown revision"),
    (["branch", "x", "nope"], "unknown revision"),
    (["branch", "-d", "nope"], "no branch"),
    (["branch", "-m", "nope", "other"], "no branch"),
    (["branch", "-m", "side", "main"], "already exists"),
    (["branch", ".hidden"], "may not start"),
    (["snapshot", "snap"], "already exists"),
    (["snapshot", "-d", "nope"], "no snapshot"),
    (["checkout", "nope"], "no branch"),
    (["checkout", "snap"], "'snap' is a snapshot, and snapshots are read-only"),
    (["commit", "-m", "m", "--delete", ""], "cannot delete the root directory"),
    (["reset", "--hard", "nope"], "unknown revision"),
    (["merge", "nope"], "nope"),
    (["import", "no-such-folder"], "no such folder"),
    (["import", "--from-git", "proj"], "git"),
    (["import", "proj", "--branch", "nope"], "no branch named 'nope'"),
    (["commit", "-m", "m", "--branch", "nope", "x=proj/a.txt"], "no branch named 'nope'"),
    (["commit", "-m", "m", "--branch", "snap", "x=proj/a.txt"], "no branch named 'snap'"),
    (["commit", "-m", "m", "--meta", "changed=x", "x=proj/a.txt"], "records 'changed' itself"),
    (
        ["commit", "-m", "m", "--meta", "a=1", "--meta", "a=2", "x=proj/a.txt"],
        "a=... is given twice",
    ),
    (["import", "store"], "the store's own folder"),
    (["import", "store/objects"], "the store's own folder"),
    (["export", "nope", "out"], "unknown revision"),
    (["export", "HEAD", "proj"], "not an empty folder"),
    (["export", "HEAD", "store/out"], "inside the store's own folder"),
    (["export", "HEAD", "store/objects/out"], "inside the store's own folder"),
    (["commit", "-m", "m", "dir=proj/a.txt"], "dir is a directory"),
    (["commit", "-m", "m", ".helix/x=proj/a.txt"], "control folder"),
    (["commit", "-m", "m", "/.helix=proj/a.txt"], "control folder"),
    (["commit", "-m", "m", "a.txt=proj/a.txt", "--delete", "a.txt"], "given twice"),
    (["commit", "-m", "m", "/a.txt=proj/a.txt", "--delete", "a.txt"], "given twice"),
    (["branch", "@"], "nor be HEAD or @"),
    (["branch", "x.lock"], "may not end with '.lock'"),
    (["branch", "bad\udcffname"], "'bad\\xffname' is not valid UTF-8"),
    # names no ref can have: the store's own refusal leaked ("ref name must be printable
    # text without NUL, got 'branches/\\udcff'")
    (["rev-parse", "bad\udcffname~1"], "unknown revision 'bad\\xffname': not a branch"),
    (["log", "a\tb"], "unknown revision 'a\\tb': not a branch"),
    (["rev-parse", "branches/\udcff"], "unknown revision 'branches/\\xff'"),
    (["import", "proj", "--branch", "x\udcff"], "no branch named 'x\\xff'"),
    (["reset", "--hard", "HEAD", "--branch", "x\udcff"], "no branch named 'x\\xff'"),
]

USAGE_ERRORS = [
    (["import"], "either DIR or --from-git"),
    (["import", "proj", "--from-git", "proj"], "either DIR or --from-git"),
    (["import", "--from-git", "proj", "--branch", "main"], "apply to a folder import"),
    (["import", "--from-git", "proj", "-m", "msg"], "apply to a folder import"),
    (["import", "proj", "--prefix", "p-"], "--prefix applies to --from-git"),
    (["branch", "-d"], "give the branch NAME"),
    (["branch", "-d", "side", "main"], "one branch at a time"),
    (["branch", "-m", "side"], "helix branch -m OLD NEW"),
    (["snapshot", "-d"], "give the snapshot NAME"),
    (["snapshot", "-d", "snap", "other"], "one snapshot at a time"),
    (["commit", "-m", "m"], "at least one PATH=FILE"),
    (["commit", "-m", "m", "proj/a.txt"], "expected PATH=FILE"),
    (["commit", "-m", "m", "--meta", "novalue", "x=proj/a.txt"], "expected --meta KEY=VALUE"),
    (["commit", "-m", "m", "x=proj/a.txt", "--bogus"], "unrecognized arguments: --bogus"),
]


def test_an_author_too_long_to_store_is_one_line(
    helix: Helix, store: Path, populated: Path
) -> None:
    """Its length is a u16 in the commit record: 64 KiB and more was a struct.error."""
    before = store_state(store)
    long_author = "a" * 70_000
    fails(helix("commit", "-m", "m", "--author", long_author, "x=proj/a.txt"), says="65535")
    assert store_state(store) == before


def test_a_tree_id_given_as_a_revision_says_what_it_is(helix: Helix, populated: Path) -> None:
    """`log --json` prints each commit's tree id; giving it back said only "no commit"."""
    tree = ok(helix("log", "--json", "-n", "1")).json()[0]["tree"]
    fails(helix("ls", tree), says="is the id of a tree, not a commit")
    fails(helix("rev-parse", tree[:12]), says="is the id of a tree, not a commit")


def _dangling_branch(store: Path) -> None:
    """`branches/feature` at an id no object has (as a torn copy or a bad tool leaves)."""
    from helixfs.store import RefUpdate
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        repo.store.write({}, [RefUpdate("branches/feature", b"\x01" * 32, expected=None)])


def test_checkout_of_a_dangling_branch_changes_nothing(
    helix: Helix, store: Path, populated: Path
) -> None:
    """QA #11: HEAD moved onto the dangling branch and every later command failed."""
    _dangling_branch(store)
    before = store_state(store)
    fails(helix("checkout", "feature"), says="0101010101")
    assert store_state(store) == before
    ok(helix("log"))


def test_a_long_unknown_name_is_cut_in_the_message(helix: Helix, store: Path) -> None:
    """The message echoed a 5,000-character revision in full."""
    for argv in (["rev-parse", "x" * 5000], ["log", "x" * 5000 + "~2"]):
        result = fails(helix(*argv), says="'" + "x" * 60 + "...' (5,00")
        assert len(result.err) < 200


def test_stats_reports_unreadable_refs_instead_of_failing(
    helix: Helix, store: Path, populated: Path
) -> None:
    """QA #12: one dangling ref made `helix stats` fail as a whole."""
    _dangling_branch(store)
    doc = ok(helix("stats", "--json")).json()
    assert len(doc["problems"]) == 1 and doc["problems"][0].startswith("branches/feature: ")
    assert doc["branches"] == 3 and doc["referenced_bytes"] > 0
    assert "problem: branches/feature: " in ok(helix("stats")).out


# Errors exit 1, usage errors 2 (QA #10, #15: `branch -d A B` deleted A and ignored B;
# the usage errors all exited 1).
CASES = [(argv, 1, message) for argv, message in BAD_COMMANDS] + [
    (argv, 2, message) for argv, message in USAGE_ERRORS
]


@pytest.mark.parametrize(("argv", "code", "message"), CASES, ids=[" ".join(a) for a, _, _ in CASES])
def test_bad_input_changes_nothing(
    helix: Helix, store: Path, populated: Path, argv: list[str], code: int, message: str
) -> None:
    before = store_state(store)
    assert "Traceback" not in fails(helix(*argv), code, says=message).err
    assert store_state(store) == before
    assert not (populated / "out").exists()


EMPTY_PATHS = [
    ["import", ""],
    ["import", "--from-git", ""],
    ["export", "HEAD", ""],
    ["--store", "", "log"],
    ["log", "--store", ""],
]


@pytest.mark.parametrize("argv", EMPTY_PATHS, ids=[" ".join(map(repr, a)) for a in EMPTY_PATHS])
def test_an_empty_path_is_a_usage_error(
    helix: Helix, store: Path, populated: Path, argv: list[str]
) -> None:
    """QA #8: Path("") is `.`: `import ''` imported the current folder."""
    before = store_state(store)
    fails(helix(*argv), code=2, says="empty path")
    assert store_state(store) == before


def test_init_with_an_empty_path_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    fails(run_helix("init", "", store=None, cwd=tmp_path, home=home), code=2, says="empty path")
    assert not home.exists()


def test_init_where_no_folder_can_be_made_says_so_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    done = run_helix("init", str(blocker / "store"), store=None, cwd=tmp_path)
    fails(done, says="cannot create store folder")
    assert "Errno" not in done.err and blocker.read_text() == "not a folder\n"


def test_a_store_path_that_is_a_file_says_there_is_no_store(tmp_path: Path) -> None:
    """Looking for the daemon's socket under a file (or a symlink loop) failed with
    ENOTDIR (ELOOP), which came out as a bare "[Errno 20] Not a directory" naming no
    path."""
    blocker = tmp_path / "file"
    blocker.write_text("not a store\n")
    for argv in (["log"], ["branch", "x"], ["stats"]):
        done = run_helix(*argv, store=blocker, cwd=tmp_path)
        fails(done, says=f"no HelixFS store at {blocker}")
        assert "Errno" not in done.err
    assert blocker.read_text() == "not a store\n"
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    done = run_helix("log", store=loop, cwd=tmp_path)
    fails(done, says=f"no HelixFS store at {loop}")
    assert "Errno" not in done.err


def test_import_without_a_source_is_a_usage_problem(helix: Helix, populated: Path) -> None:
    fails(helix("import"), 2, says="either DIR or --from-git")
    fails(helix("import", "proj", "--from-git", "proj"), 2, says="either DIR or --from-git")


def _corrupt_file(store: Path, path: str) -> None:
    """Below the store, with rocksdict only: a valid frame of other bytes under its id."""
    import rocksdict

    from helixfs.store.frame import encode_plain
    from helixfs.vcs.objects import encode_blob
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        entry = repo.entry("HEAD", path)
        assert entry is not None
        db_path = str(getattr(repo.store, "path", store / "objects"))
    if not Path(db_path, "CURRENT").exists():
        db_path = str(Path(db_path) / "objects")
    options = rocksdict.Options(raw_mode=True)
    names = set(rocksdict.Rdict.list_cf(db_path, options)) - {"default"}
    families = {name: rocksdict.Options(raw_mode=True) for name in names}
    db = rocksdict.Rdict(db_path, options, column_families=families)
    objects = db.get_column_family("objects")
    objects[entry.oid] = encode_plain(encode_blob(b"tampered bytes\n"))
    del objects  # RocksDB's LOCK goes only with the last column-family handle
    db.close()
    del db


def test_corrupt_object_is_reported_not_returned(
    helix: Helix, store: Path, populated: Path
) -> None:
    _corrupt_file(store, "dir/b.txt")
    before = store_state(store)
    fails(helix("cat", "HEAD", "dir/b.txt"), says="corrupt")
    assert ok(helix("cat", "HEAD", "a.txt")).out == "a\n"
    result = helix("fsck", "--json")
    assert result.code == 1 and result.json()["problems"]
    assert "fsck found" in result.err
    fails(helix("export", "HEAD", "out"), says="corrupt")
    assert not (populated / "out").exists()
    assert store_state(store) == before


LOCK_HOLDER = """
import sys, time
from helixfs.vcs.repo import Repository
repo = Repository.open(sys.argv[1])
print("ready", flush=True)
time.sleep(60)
"""


def test_locked_store_fails_cleanly(helix: Helix, store: Path, populated: Path) -> None:
    before = store_state(store)
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(store)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        fails(helix("log"), says="in use")
        fails(helix("branch", "new"), says="in use")
        fails(helix("import", "proj"), says="in use")
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert store_state(store) == before
    ok(helix("log"))
