"""`helix web` without a mount, from the command line: it holds the store, so the
other commands go through it (its control socket), whatever folder they run in."""

from __future__ import annotations

import time
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


def test_another_interface_is_warned_of_and_a_bad_port_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    helix("init", store)
    # 203.0.113.1 (TEST-NET-3) is no address of this machine: the bind fails, clearly
    done = helix("--store", store, "web", "--host", "203.0.113.1", check=False)
    assert done.returncode == 1
    assert "warning: serving on 203.0.113.1, not only this machine" in done.stderr
    assert "cannot listen on 203.0.113.1:0" in done.stderr
    done = helix("--store", store, "web", "--port", "70000", check=False)
    assert done.returncode == 1 and "--port 70000 is not a port" in done.stderr
    assert "warning" not in done.stderr
    assert len(helix("--store", store, "log", "--json").stdout.splitlines()) > 1  # store fine


def test_open_hands_the_url_with_its_token_to_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--open` gives the printed URL (token included) to the user's browser, which
    Python's webbrowser finds through $BROWSER first; none found is said, not fatal."""
    store = tmp_path / "store"
    helix("init", store)
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {seen}\n')
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", f"{browser} %s")
    web = WebServer(store).start("--open")
    try:
        deadline = time.monotonic() + 30
        while not seen.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen.read_text() == web.url and "token=" in web.url
    finally:
        assert web.stop() == 0
    monkeypatch.setenv("BROWSER", "/bin/false %s")
    web = WebServer(store).start("--open")
    try:
        assert get(web.url)[0] == 200  # serving all the same
    finally:
        assert web.stop() == 0
    assert "no browser found here" in web.said[-1]


def test_config_set_through_helix_web_names_it_not_a_mount(tmp_path: Path) -> None:
    """A foreground `helix web` holds the store: a `config set` is applied to it, and
    the message says so, not "the running mount" there is none of."""
    store = tmp_path / "store"
    helix("init", store)
    web = WebServer(store)
    web.start()
    try:
        said = helix("--store", store, "config", "set", "cache.frames", "3MiB").stdout
        assert "applied cache.frames to helix web (pid " in said
        said = helix("--store", store, "config", "set", "memory.half_life", "9d").stdout
        waits = "memory.half_life takes effect when the store is opened again (stop helix web"
        assert waits in said
        assert "mount" not in said
    finally:
        assert web.stop() == 0
    assert "3MiB" in helix("--store", store, "config", "get", "cache.frames").stdout
