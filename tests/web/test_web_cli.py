"""`helix web` without a mount, from the command line: it holds the store, so the
other commands go through it (its control socket), whatever folder they run in."""

from __future__ import annotations

from pathlib import Path

import pytest
from web_harness import WebServer, get, helix

pytestmark = pytest.mark.timeout(300)


def test_commands_run_through_a_foreground_helix_web(tmp_path: Path) -> None:
    helix("init", tmp_path / "store")
    note = tmp_path / "note.txt"
    note.write_text("written while helix web ran\n")
    web = WebServer(Path("store"))  # relative: the server must not lose it
    web.start(cwd=tmp_path)
    try:
        store = tmp_path / "store"
        helix("--store", store, "commit", "-m", "through the web process", f"note.txt={note}")
        status, body, _ = get(web.url)
        assert status == 200 and "through the web process" in body
        log = helix("--store", "store", "log", "--json", cwd=tmp_path).stdout
        assert "through the web process" in log
        again = helix("--store", tmp_path / "store", "web")
        assert again.stdout.strip() == web.url  # the same server answers
    finally:
        assert web.stop() == 0
    assert "through the web process" in helix("--store", tmp_path / "store", "log").stdout
