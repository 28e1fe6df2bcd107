"""`helix hooks install|status|uninstall`: HelixFS's entries in Claude Code's settings.

Claude Code reads hooks from `.claude/settings.json` (project) and
`~/.claude/settings.json` (user): `{"hooks": {EVENT: [{"matcher": "...", "hooks":
[{"type": "command", "command": "...", "timeout": S}]}]}}`. Ours are merged with what is
there (other hooks, other settings kept) and found again by the launcher they name.

Each entry runs `helix hook EVENT` through the launcher (cli/hook_launch.py): the interpreter of
this installation started without `site` (`-S`, `-P`), which forwards the command line
to the mount's daemon in a few milliseconds, where the console script's own start (site
and the editable-install finder: ~25 ms here) would spend the whole budget (ADR 0052).
When `install` could build it (hook_binary.py), the compiled launcher runs first: the
mounted path in C, without the interpreter's ~10 ms start (ADR 0080).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import helixfs
from helixfs.agents import configfile
from helixfs.agents.configfile import Change, MalformedConfig

LAUNCHER = "hook_launch"  # in the command: helixfs/cli/hook_launch.py (-m ...hook_launch before)
TIMEOUT_SECONDS = 10
EVENTS: dict[str, str | None] = {  # event -> matcher (tool names), None: no matcher
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Read|Edit|MultiEdit|Write|Glob|Grep",
    "PostToolUse": "Bash",
    "PostToolUseFailure": "Bash",
    "PreCompact": None,
    "Stop": None,
    "SubagentStart": None,
}


def settings_path(scope: str, project: Path, home: Path) -> Path:
    return (project if scope == "project" else home) / ".claude" / "settings.json"


def package_root() -> Path:
    """The folder holding the `helixfs` package (site-packages, or a source checkout)."""
    return Path(helixfs.__file__).resolve().parent.parent


def hook_command(store: Path, event: str, binary: Path | None = None) -> str:
    """The launcher run as a file, not with -m: runpy and what it imports (importlib.util,
    contextlib, collections...) cost ~6 ms of CPU a start, half again the interpreter's.

    With `binary` (hook_binary.build), the compiled launcher runs first, given the
    Python launcher's command line to exec for anything but a daemon that answers
    (ADR 0080); a shell test runs the Python one directly if the binary is gone (a
    cleared cache), so a hook never fails on a missing file."""
    python = str(Path(sys.executable).absolute())
    script = str(package_root() / "helixfs" / "cli" / f"{LAUNCHER}.py")
    words = [python, "-P", "-S", script, "--store", str(store.absolute()), event]
    env = f"PYTHONPATH={shlex.quote(str(package_root()))} "
    if binary is None:
        return env + shlex.join(words)
    compiled = shlex.quote(str(binary))
    return (
        f"if [ -x {compiled} ]; then {env}exec {compiled} {shlex.join(words)}; fi; "
        f"{env}exec {shlex.join(words)}"
    )


def launcher_of(command: str | None) -> str | None:
    """Which launcher an installed command runs: "compiled", "python", or "python
    (compiled launcher missing)" when the binary it names is gone."""
    if command is None:
        return None
    words = shlex.split(command)
    if words[:1] != ["if"]:
        return "python"
    binary = words[3]  # if [ -x BINARY ]; then ...
    return "compiled" if os.access(binary, os.X_OK) else "python (compiled launcher missing)"


def is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and LAUNCHER in str(hook.get("command", ""))


def _group(store: Path, event: str, binary: Path | None) -> dict[str, Any]:
    command = hook_command(store, event, binary)
    hook = {"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}
    matcher = EVENTS[event]
    return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}


def _without_ours(groups: list[Any]) -> list[Any]:
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            others = [h for h in group["hooks"] if not is_ours(h)]
            if not others and group["hooks"]:
                continue  # a group of ours alone
            group = {**group, "hooks": others}
        kept.append(group)
    return kept


def _events(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    hooks = doc.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise MalformedConfig(f"{path}: 'hooks' is not an object of lists (left unchanged)")
    return hooks


def plan(path: Path, store: Path | None, binary: Path | None = None) -> Change:
    """Our entries set for `store` (None: removed), run through the compiled launcher
    `binary` when there is one, everything else as it was."""
    before = configfile.read_text(path)
    doc = configfile.load_json(path, before)
    hooks = _events(path, doc)
    wanted = {event: _group(store, event, binary) for event in EVENTS} if store is not None else {}
    result: dict[str, Any] = {}
    for event, groups in hooks.items():
        if event in wanted and wanted[event] in groups and _ours_in(groups) == 1:
            result[event] = groups
            wanted.pop(event)
        else:
            result[event] = _without_ours(groups)
    for event, group in wanted.items():
        result.setdefault(event, []).append(group)
    result = {event: groups for event, groups in result.items() if groups}
    if result == hooks:
        return Change(path, before, before or "")
    if result:
        doc["hooks"] = result
    else:
        doc.pop("hooks", None)
    return Change(path, before, configfile.dump_json(doc, before))


def _ours_in(groups: list[Any]) -> int:
    return sum(is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []) or [])


def status(path: Path) -> dict[str, Any]:
    doc = configfile.load_json(path, configfile.read_text(path))
    hooks = _events(path, doc)
    rows = {}
    for event in EVENTS:
        commands = [
            str(h.get("command"))
            for g in hooks.get(event, [])
            if isinstance(g, dict)
            for h in g.get("hooks", []) or []
            if is_ours(h)
        ]
        rows[event] = commands[0] if commands else None
    launchers = {launcher_of(command) for command in rows.values() if command}
    launcher = launchers.pop() if len(launchers) == 1 else ("mixed" if launchers else None)
    return {
        "path": str(path),
        "events": rows,
        "installed": all(rows.values()),
        "launcher": launcher,
    }
