"""The body of `helix demo`: a first look at the main job, through the core API only.

It never touches an existing store: when the resolved store already exists, the demo
makes a fresh one in a temporary folder (marked as the demo's), says where, and `helix
demo --clean` removes those. The default project is
generated on the fly (a tiny Python service), so the demo needs no network and no data.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from helixfs.cli.output import Output
from helixfs.errors import HelixError
from helixfs.ids import hex_id

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

SAMPLE: dict[str, str] = {
    "README.md": "# tokensvc\n\nA tiny token service used by the HelixFS demo.\n",
    "tokensvc/__init__.py": '"""Issue and check API tokens."""\n',
    "tokensvc/auth.py": (
        "import hashlib\nimport secrets\n\n\n"
        "def issue(user: str) -> str:\n"
        '    return f"{user}:{secrets.token_hex(16)}"\n\n\n'
        "def fingerprint(token: str) -> str:\n"
        "    return hashlib.blake2b(token.encode()).hexdigest()[:16]\n"
    ),
    "tokensvc/api.py": (
        "from tokensvc.auth import issue\n\n\n"
        "def login(user: str, password: str) -> str:\n"
        "    if not password:\n"
        '        raise ValueError("empty password")\n'
        "    return issue(user)\n"
    ),
    "tests/test_auth.py": (
        "from tokensvc.auth import issue\n\n\n"
        "def test_issue_names_the_user():\n"
        '    assert issue("ada").startswith("ada:")\n'
    ),
    "pyproject.toml": '[project]\nname = "tokensvc"\nversion = "0.1.0"\n',
}

REFRESH = (
    "\n\ndef refresh(token: str) -> str:\n"
    '    user = token.split(":", 1)[0]\n'
    "    return issue(user)\n"
)


def write_sample(folder: Path) -> Path:
    for name, text in SAMPLE.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


DEMO_PREFIX = "helix-demo-"
MARKER = "made-by-helix-demo"  # in the folder holding a demo store: --clean's proof


def _choose_store(store: Path, out: Output) -> Path:
    if not store.exists() or (store.is_dir() and not any(store.iterdir())):
        return store
    folder = Path(tempfile.mkdtemp(prefix=DEMO_PREFIX))
    (folder / MARKER).write_text("a store made by `helix demo`; `helix demo --clean` removes it\n")
    fresh = folder / "store"
    out.note(
        f"{store} already exists: the demo uses a fresh store in {fresh}"
        " (remove it with: helix demo --clean)"
    )
    return fresh


def demo_stores() -> list[Path]:
    """The demo stores made in the temp folder by this user, oldest first."""
    found = [
        folder / "store"
        for folder in Path(tempfile.gettempdir()).glob(DEMO_PREFIX + "*")
        if (folder / MARKER).is_file() and folder.stat().st_uid == os.getuid()
    ]
    return sorted(found, key=lambda p: p.parent.stat().st_mtime)


def clean_demos(out: Output) -> int:
    """Remove every demo store `demo_stores` finds, except one mounted now."""
    from helixfs.daemon.lock import is_locked

    removed, kept = [], []
    for store in demo_stores():
        if is_locked(store):
            kept.append(str(store))
            out.note(f"kept {store}: it is mounted (helix umount it first)")
            continue
        shutil.rmtree(store.parent)
        removed.append(str(store))
    human = "\n".join(f"removed {p}" for p in removed) or "no demo store to remove"
    out.emit({"removed": removed, "kept": kept}, human)
    return 0


def run_demo(store: Path, folder: Path | None, out: Output) -> int:
    from helixfs.cli.main import run_in_process
    from helixfs.vcs.repo import Repository

    target = _choose_store(store, out)
    with tempfile.TemporaryDirectory(prefix="helix-sample-") as scratch:
        source = folder if folder is not None else write_sample(Path(scratch) / "tokensvc")
        with Repository.init(target) as repo:
            steps = _story(repo, source)
            if out.as_json:
                out.emit({"store": str(target), "steps": steps})
                return 0
            for step in steps:
                out.line(f"{step['step']:<8} {step['detail']}")
            out.line(f"\n$ helix --store {target} log --graph")
            return run_in_process(["log", "--graph"], repo, out.stdout, out.stderr)


def _story(repo: Repository, source: Path) -> list[dict[str, str]]:
    """Import, edit, branch, edit on both sides, snapshot, merge: what an agent does."""
    from helixfs.vcs.transfer import import_dir

    steps: list[dict[str, str]] = []

    def note(step: str, detail: str) -> None:
        steps.append({"step": step, "detail": detail})

    summary = import_dir(repo, source, message=f"import {source.name}")
    note("import", f"{summary.files} files from {source} -> {summary.commit[:12]}")
    readme = _read_or_empty(repo, "HEAD", "README.md")
    cid = repo.commit(
        {"README.md": readme + b"\nRun the tests with `pytest`.\n"},
        "docs: how to run the tests",
        meta={"agent": "demo", "experiment": "docs"},
    )
    note("commit", f"main: docs: how to run the tests -> {hex_id(cid)[:12]}")
    repo.create_branch("try-refresh")
    note("branch", "try-refresh (O(1): a new ref to the same commit)")
    auth = _read_or_empty(repo, "try-refresh", "tokensvc/auth.py")
    cid = repo.commit(
        {"tokensvc/auth.py": auth + REFRESH.encode()},
        "auth: refresh tokens",
        meta={"agent": "demo", "experiment": "refresh"},
        branch="try-refresh",
    )
    note("commit", f"try-refresh: auth: refresh tokens -> {hex_id(cid)[:12]}")
    cid = repo.commit(
        {"CHANGELOG.md": b"# Changes\n\n- token refresh (in progress)\n"},
        "changelog",
        meta={"agent": "demo"},
    )
    note("commit", f"main: changelog -> {hex_id(cid)[:12]}")
    repo.create_snapshot("before-merge")
    note("snapshot", "before-merge (read-only, kept by name)")
    result = repo.merge("try-refresh")
    merged = hex_id(result.commit)[:12] if result.commit else "-"
    note("merge", f"try-refresh into main: {result.status} -> {merged}")
    return steps


def _read_or_empty(repo: Repository, rev: str, path: str) -> bytes:
    """Any folder works as a demo source: a sample path it lacks starts out empty."""
    try:
        return repo.read(rev, path)
    except HelixError:
        return b""
