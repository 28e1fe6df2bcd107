"""Editing an agent host's config file without losing anything the user wrote in it.

A host's config (`.mcp.json`, `~/.codex/config.toml`, `.claude/settings.json`) belongs to
the user: HelixFS changes only its own entry. A file that does not parse is refused with
the line that is wrong and left as it is; a change is written atomically (temp file +
rename, the old mode kept), and a change that changes nothing writes nothing.

JSON keeps every other key in its order and the file's indent (detected); TOML is edited
as text: only the `[mcp_servers.helixfs]` table (and its sub-tables) is cut out or
appended, so comments and layout elsewhere stay byte for byte.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helixfs.errors import InvalidInput

JSONObject = dict[str, Any]


class MalformedConfig(InvalidInput):
    """An existing config file that does not parse: nothing is written to it."""


@dataclass(frozen=True)
class Change:
    """A planned edit of one file: `before` is None when the file does not exist."""

    path: Path
    before: str | None
    after: str

    @property
    def changes_anything(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        name = str(self.path)
        lines = difflib.unified_diff(
            old, new, name if self.before is not None else "/dev/null", name
        )
        return "".join(lines)

    def write(self) -> None:
        if self.changes_anything:
            write_atomically(self.path, self.after)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise MalformedConfig(f"{path}: not UTF-8 text ({err.reason})") from None


def _malformed(path: Path, text: str, line: int, message: str) -> MalformedConfig:
    lines = text.splitlines()
    shown = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    quoted = f": {shown[:120]}" if shown else ""
    return MalformedConfig(f"{path}:{line}: {message}{quoted} (left unchanged)")


def load_json(path: Path, text: str | None) -> JSONObject:
    """The file's top-level object ({} for a missing or empty file)."""
    if text is None or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise _malformed(path, text, err.lineno, err.msg) from None
    if not isinstance(doc, dict):
        raise _malformed(path, text, 1, "the top level is not a JSON object")
    return doc


def json_indent(text: str | None) -> str | int:
    """The indent the file already uses (its first indented line), else 2 spaces."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def dump_json(doc: JSONObject, like: str | None) -> str:
    return json.dumps(doc, indent=json_indent(like), ensure_ascii=False) + "\n"


def load_toml(path: Path, text: str | None) -> JSONObject:
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        found = re.search(r"line (\d+)", str(err))
        line = int(found.group(1)) if found else 1
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(err))
        raise _malformed(path, text, line, message) from None


_TABLE_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _header_keys(raw: str) -> list[str]:
    return [part.strip().strip('"').strip("'") for part in raw.split(".")]


def without_toml_table(text: str, keys: list[str]) -> str:
    """`text` without the table `keys` and its sub-tables (header to next header)."""
    kept: list[str] = []
    cutting = False
    for line in text.splitlines(keepends=True):
        header = _TABLE_HEADER.match(line)
        if header:
            cutting = _header_keys(header.group(1))[: len(keys)] == keys
        if not cutting:
            kept.append(line)
    return "".join(kept)


def toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def toml_table(keys: list[str], values: dict[str, str | list[str]]) -> str:
    lines = ["[" + ".".join(keys) + "]"]
    for name, value in values.items():
        shown = (
            "[" + ", ".join(toml_string(v) for v in value) + "]"
            if isinstance(value, list)
            else toml_string(value)
        )
        lines.append(f"{name} = {shown}")
    return "\n".join(lines) + "\n"


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".helix", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
