"""The real-browser harness of the web view's tests (fixtures: conftest.py).

A server is `helix web` in a subprocess (the code path users run), on a port of its
own choosing; teardown sends SIGTERM and waits, killing it if it must. The browser is
Debian's headless Chromium driven by selenium through /usr/bin/chromedriver. Neither is
ever skipped in CI (CI=true): a missing browser there fails loudly.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mount"))
from mount_harness import HELIX, helix  # noqa: E402  (one way to run the CLI)

START_TIMEOUT = 60.0  # the first page may wait for the embedding model, not the start
STOP_TIMEOUT = 30.0
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_browser() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip)")
    if not missing:
        return
    message = f"the web view's browser tests need {missing} (.ci/run installs them)"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def helix_json(*args: str | Path) -> Any:
    return json.loads(helix(*args, "--json").stdout)


@dataclass
class WebServer:
    store: Path
    proc: subprocess.Popen[str] | None = None
    url: str = ""
    said: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.split("/?token=")[0]

    @property
    def token(self) -> str:
        return self.url.split("token=")[1]

    def start(self, *extra: str, cwd: Path | None = None) -> WebServer:
        self.proc = subprocess.Popen(
            [*HELIX, "--store", str(self.store), "web", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
        )
        self.url = read_url(self.proc, START_TIMEOUT)
        return self

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None
        self.said.append(proc.stderr.read() if proc.stderr else "")
        return code


def read_url(proc: subprocess.Popen[str], timeout: float) -> str:
    """The first line `helix web` prints is its URL."""
    import select

    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.5)[0]:
            line = proc.stdout.readline()
            if line.startswith("http://"):
                return line.strip()
            if not line:
                break
        if proc.poll() is not None:
            break
    err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
    proc.kill()
    raise AssertionError(f"helix web printed no URL: {err}")


def get(address: str, *, cookie: str | None = None) -> tuple[int, str, dict[str, str]]:
    """(status, body, headers) of a GET, errors included (urllib raises for them)."""
    request = urllib.request.Request(address)
    if cookie:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), dict(err.headers)


def post(address: str, fields: dict[str, str], cookie: str) -> tuple[int, str]:
    from urllib.parse import urlencode

    request = urllib.request.Request(address, data=urlencode(fields).encode(), method="POST")
    request.add_header("Cookie", cookie)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium for a test (or a module of tests), quit in the end."""
    require_browser()
    driver = browser()
    try:
        yield driver
    finally:
        driver.quit()


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    return driver


def make_store(store: Path, work: Path) -> None:
    """A store with two branches, a merge, a snapshot, a binary file and memories."""
    helix("--store", store, "demo")
    work.mkdir(parents=True, exist_ok=True)
    logo = work / "logo.png"
    logo.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    notes = work / "notes.txt"
    notes.write_text("first line\nsecond line\n")
    helix("--store", store, "commit", "-m", "add the logo and notes", f"logo.png={logo}")
    helix("--store", store, "commit", "-m", "notes: two lines", f"notes.txt={notes}")
    notes.write_text("first line\nsecond line, changed\nthird line\n")
    helix("--store", store, "commit", "-m", "notes: a third line", f"notes.txt={notes}")
    helix("--store", store, "snapshot", "before-web")
    remember_all(store, MEMORIES)


NEWER_DATABASE = "we use SQLite for the main database"


def supersede_database(store: Path) -> None:
    """A decision that supersedes the PostgreSQL one: a supersession chain to show."""
    helix("--store", store, "remember", "--type", "decision", "--", NEWER_DATABASE)


def remember_all(store: Path, memories: list[tuple[str, str, str]]) -> None:
    """As `helix remember` each, but in one process: the model loads once."""
    script = (
        "import json, sys\n"
        "from helixfs.cli.memory import process_embedder\n"
        "from helixfs.memory import Memory, Source\n"
        "with Memory.open(sys.argv[1] + '/memory.db', process_embedder()) as mem:\n"
        "    for text, kind, tags in json.loads(sys.argv[2]):\n"
        "        mem.remember(text, type=kind, tags=tags.split(','), source=Source('test'))\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(store), json.dumps(memories)], check=True, timeout=300
    )


MEMORIES = [
    ("the API serves JSON on port 8080", "fact", "api"),
    ("we use PostgreSQL 16 for the main database", "decision", "db"),
    ("refresh tokens expire after 30 days", "fact", "auth"),
    ("never log the session cookie", "gotcha", "auth,security"),
    ("run the tests with pytest -x -q", "howto", "tests"),
    ("the frontend is written in TypeScript", "fact", "frontend"),
    ("migrations live in db/migrations and run with alembic", "howto", "db"),
    ("user ids are UUIDv7 strings", "convention", "api"),
    ("the CI runs on every push to main", "fact", "ci"),
    ("prefer small pull requests of under 300 lines", "preference", "process"),
    ("the cache is Redis with a 5 minute TTL", "fact", "cache"),
    ("tokens are signed with Ed25519 keys", "decision", "auth,security"),
]
