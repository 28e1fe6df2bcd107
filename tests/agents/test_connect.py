"""`helix connect HOST`: each host's file, read back by a parser of its format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(120)

HOSTS = {  # host -> (project file, user file, servers key)
    "claude-code": (".mcp.json", ".claude.json", "mcpServers"),
    "cursor": (".cursor/mcp.json", ".cursor/mcp.json", "mcpServers"),
    "codex": (".codex/config.toml", ".codex/config.toml", "mcp_servers"),
    "gemini": (".gemini/settings.json", ".gemini/settings.json", "mcpServers"),
    "vscode": (".vscode/mcp.json", ".config/Code/User/mcp.json", "servers"),
}


def helix(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HELIX_STORE", "CODEX_HOME")}
    env["HOME"] = str(tmp / "home")
    argv = [sys.executable, "-m", "helixfs.cli.main", "--store", str(tmp / "store"), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, cwd=tmp / "proj", env=env, timeout=60
    )


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "proj").mkdir()
    return tmp_path


def config_file(tmp: Path, host: str, scope: str) -> Path:
    project, user, _ = HOSTS[host]
    return tmp / "proj" / project if scope == "project" else tmp / "home" / user


def parsed(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def entry(tmp: Path, host: str, scope: str) -> dict[str, Any] | None:
    servers = parsed(config_file(tmp, host, scope)).get(HOSTS[host][2], {})
    found: dict[str, Any] | None = servers.get("helixfs")
    return found


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("host", list(HOSTS))
def test_connect_writes_absolute_paths_in_the_hosts_format(
    tmp: Path, host: str, scope: str
) -> None:
    done = helix(tmp, "connect", host, "--scope", scope)
    assert done.returncode == 0, done.stderr
    found = entry(tmp, host, scope)
    assert found is not None
    assert Path(found["command"]).is_absolute() and os.access(found["command"], os.X_OK)
    assert found["args"][-3:] == ["--store", str(tmp / "store"), "mcp"]
    if host in ("claude-code", "vscode"):
        assert found["type"] == "stdio"
    assert helix(tmp, "connect", host, "--scope", scope, "--remove").returncode == 0
    assert entry(tmp, host, scope) is None


@pytest.mark.parametrize("host", ["claude-code", "cursor", "gemini", "vscode"])
def test_connect_keeps_other_entries_and_the_indent(tmp: Path, host: str) -> None:
    path = config_file(tmp, host, "project")
    path.parent.mkdir(parents=True, exist_ok=True)
    key = HOSTS[host][2]
    mine = {"theme": "dark", key: {"other": {"command": "/bin/other", "args": ["x"]}}, "z": [1]}
    path.write_text(json.dumps(mine, indent=4) + "\n")
    assert helix(tmp, "connect", host).returncode == 0
    doc = parsed(path)
    assert list(doc) == ["theme", key, "z"] and doc["theme"] == "dark" and doc["z"] == [1]
    assert doc[key]["other"] == mine[key]["other"] and "helixfs" in doc[key]
    assert '\n    "theme"' in path.read_text()  # still four spaces
    assert helix(tmp, "connect", host, "--remove").returncode == 0
    assert parsed(path) == {**mine, key: mine[key]}
    assert path.read_text() == json.dumps(mine, indent=4) + "\n"


def test_codex_keeps_comments_and_other_tables_byte_for_byte(tmp: Path) -> None:
    path = config_file(tmp, "codex", "user")
    path.parent.mkdir(parents=True)
    mine = '# mine\nmodel = "o3"  # a comment\n\n[mcp_servers.other]\ncommand = "x"\n'
    path.write_text(mine)
    assert helix(tmp, "connect", "codex", "--scope", "user").returncode == 0
    text = path.read_text()
    assert text.startswith(mine)
    assert parsed(path)["mcp_servers"]["other"] == {"command": "x"}
    assert helix(tmp, "connect", "codex", "--scope", "user").returncode == 0
    assert path.read_text() == text  # idempotent
    assert helix(tmp, "connect", "codex", "--scope", "user", "--remove").returncode == 0
    assert path.read_text().rstrip("\n") == mine.rstrip("\n")


def test_connect_twice_changes_nothing_the_second_time(tmp: Path) -> None:
    assert helix(tmp, "connect", "cursor").returncode == 0
    path = config_file(tmp, "cursor", "project")
    before = path.stat().st_mtime_ns, path.read_text()
    again = helix(tmp, "--json", "connect", "cursor")
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] is False
    assert (path.stat().st_mtime_ns, path.read_text()) == before


@pytest.mark.parametrize(
    ("host", "text", "line"),
    [
        ("claude-code", '{\n  "mcpServers": {\n    "x": 1,\n  }\n}\n', 4),
        ("codex", 'model = "o3"\n[mcp_servers.x]\ncommand = \n', 3),
        ("vscode", '{\n  "servers": [\n', 3),
    ],
)
def test_a_malformed_file_is_refused_with_its_line_and_left_untouched(
    tmp: Path, host: str, text: str, line: int
) -> None:
    path = config_file(tmp, host, "project" if host != "codex" else "user")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    scope = "user" if host == "codex" else "project"
    done = helix(tmp, "connect", host, "--scope", scope)
    assert done.returncode == 1
    assert f"{path}:{line}:" in done.stderr, done.stderr
    assert path.read_text() == text


def test_dry_run_prints_the_change_and_writes_nothing(tmp: Path) -> None:
    done = helix(tmp, "connect", "gemini", "--dry-run")
    assert done.returncode == 0
    assert '+    "helixfs": {' in done.stdout
    assert not config_file(tmp, "gemini", "project").exists()


def test_list_shows_where_it_is_registered(tmp: Path) -> None:
    assert helix(tmp, "connect", "claude-code").returncode == 0
    assert helix(tmp, "connect", "codex", "--scope", "user").returncode == 0
    done = helix(tmp, "--json", "connect", "--list")
    rows = json.loads(done.stdout)["registrations"]
    found = {(row["host"], row["scope"]) for row in rows if row["registered"]}
    assert found == {("claude-code", "project"), ("codex", "user")}


def test_a_toml_entry_written_inline_is_refused(tmp: Path) -> None:
    path = config_file(tmp, "codex", "user")
    path.parent.mkdir(parents=True)
    text = '[mcp_servers]\nhelixfs = { command = "old" }\n'
    path.write_text(text)
    done = helix(tmp, "connect", "codex", "--scope", "user")
    assert done.returncode == 1 and "inline" in done.stderr
    assert path.read_text() == text


def test_the_entry_starts_a_server_that_answers(tmp: Path) -> None:
    """The command the host would run, as written: it serves MCP over stdio."""
    assert helix(tmp, "init").returncode == 0
    assert helix(tmp, "connect", "claude-code").returncode == 0
    found = entry(tmp, "claude-code", "project")
    assert found is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    env = {**os.environ, "HELIX_MEMORY_LEXICAL": "1"}
    done = subprocess.run(
        [found["command"], *found["args"]],
        input=json.dumps(hello) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd="/",
    )
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "helixfs"
