"""`helix connect HOST`: the `helix mcp` entry in each agent host's own config file.

Each host reads MCP servers from a file of its own, in a shape of its own (checked
against each host's documentation: ADR 0051):

| host | project scope | user scope | servers under |
|---|---|---|---|
| claude-code | `.mcp.json` | `~/.claude.json` | `mcpServers` (`type: stdio`) |
| cursor | `.cursor/mcp.json` | `~/.cursor/mcp.json` | `mcpServers` |
| codex | `.codex/config.toml` | `$CODEX_HOME/config.toml` (`~/.codex`) | `[mcp_servers.NAME]` |
| gemini | `.gemini/settings.json` | `~/.gemini/settings.json` | `mcpServers` |
| vscode | `.vscode/mcp.json` | `~/.config/Code/User/mcp.json` | `servers` (`type: stdio`) |

The entry names the `helix` executable and the store by absolute path: a host starts
servers with its own PATH and cwd, where a bare `helix` from a venv is not found.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from helixfs.agents import configfile
from helixfs.agents.configfile import Change, MalformedConfig
from helixfs.errors import InvalidInput

SERVER_NAME = "helixfs"
Scope = Literal["project", "user"]
SCOPES: tuple[Scope, ...] = ("project", "user")


@dataclass(frozen=True)
class Host:
    name: str
    project_file: str  # under the project's root
    user_file: str  # under the home folder
    servers_key: str
    toml: bool = False
    typed: bool = False  # the entry says "type": "stdio"

    def path(self, scope: Scope, project: Path, home: Path) -> Path:
        if scope == "project":
            return project / self.project_file
        if self.name == "codex" and os.environ.get("CODEX_HOME"):
            return Path(os.environ["CODEX_HOME"]).expanduser() / "config.toml"
        return home / self.user_file


HOSTS: dict[str, Host] = {
    host.name: host
    for host in (
        Host("claude-code", ".mcp.json", ".claude.json", "mcpServers", typed=True),
        Host("cursor", ".cursor/mcp.json", ".cursor/mcp.json", "mcpServers"),
        Host("codex", ".codex/config.toml", ".codex/config.toml", "mcp_servers", toml=True),
        Host("gemini", ".gemini/settings.json", ".gemini/settings.json", "mcpServers"),
        Host("vscode", ".vscode/mcp.json", ".config/Code/User/mcp.json", "servers", typed=True),
    )
}


def helix_command() -> list[str]:
    """The absolute command line that starts this very `helix`: the console script next
    to the running interpreter (a venv's), else the one on PATH, else `python -m`."""
    beside = Path(sys.executable).parent / "helix"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("helix")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "helixfs.cli.main"]


def server_entry(host: Host, store: Path) -> dict[str, Any]:
    command, *prefix = helix_command()
    entry: dict[str, Any] = {"type": "stdio"} if host.typed else {}
    entry["command"] = command
    entry["args"] = [*prefix, "--store", str(store.absolute()), "mcp"]
    return entry


def host_named(name: str) -> Host:
    if name not in HOSTS:
        raise InvalidInput(f"unknown host {name!r}; use one of {', '.join(HOSTS)}")
    return HOSTS[name]


def plan(host: Host, path: Path, entry: dict[str, Any] | None) -> Change:
    """The edit that sets our entry to `entry` (None: removes it)."""
    before = configfile.read_text(path)
    if host.toml:
        return _plan_toml(host, path, before, entry)
    doc = configfile.load_json(path, before)
    servers = doc.get(host.servers_key)
    if servers is not None and not isinstance(servers, dict):
        raise MalformedConfig(f"{path}: {host.servers_key!r} is not an object (left unchanged)")
    current = (servers or {}).get(SERVER_NAME)
    if current == entry or (entry is None and servers is None):
        return Change(path, before, before or "")
    if entry is None:
        del doc[host.servers_key][SERVER_NAME]
    else:
        doc.setdefault(host.servers_key, {})[SERVER_NAME] = entry
    return Change(path, before, configfile.dump_json(doc, before))


def _plan_toml(host: Host, path: Path, before: str | None, entry: dict[str, Any] | None) -> Change:
    data = configfile.load_toml(path, before)
    servers = data.get(host.servers_key, {})
    if not isinstance(servers, dict):
        raise MalformedConfig(f"{path}: {host.servers_key!r} is not a table (left unchanged)")
    if servers.get(SERVER_NAME) == entry:
        return Change(path, before, before or "")
    keys = [host.servers_key, SERVER_NAME]
    text = configfile.without_toml_table(before or "", keys)
    if SERVER_NAME in tomllib.loads(text).get(host.servers_key, {}):
        raise MalformedConfig(
            f"{path}: {'.'.join(keys)} is written inline, not as a [{'.'.join(keys)}] table: "
            "edit it by hand (left unchanged)"
        )
    if entry is not None:
        text = text.rstrip("\n") + ("\n\n" if text.strip() else "")
        text += configfile.toml_table(keys, entry)
    tomllib.loads(text)  # what we write must read back
    return Change(path, before, text)


def registered(host: Host, path: Path) -> dict[str, Any] | None:
    """Our entry in `path`, if it has one (a malformed file raises MalformedConfig)."""
    text = configfile.read_text(path)
    doc = configfile.load_toml(path, text) if host.toml else configfile.load_json(path, text)
    servers = doc.get(host.servers_key)
    found = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return found if isinstance(found, dict) else None


def registrations(project: Path, home: Path) -> list[dict[str, Any]]:
    """Where HelixFS is registered, one row per host and scope (also where it is not)."""
    rows = []
    for host in HOSTS.values():
        for scope in SCOPES:
            path = host.path(scope, project, home)
            row: dict[str, Any] = {"host": host.name, "scope": scope, "path": str(path)}
            try:
                entry = registered(host, path)
            except MalformedConfig as err:
                row.update(registered=False, error=str(err))
            else:
                row.update(registered=entry is not None, entry=entry)
            rows.append(row)
    return rows
