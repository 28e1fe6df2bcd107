"""PreToolUse for Read, Edit, Write, Glob and Grep: what the memory knows about the file
the agent is about to touch, in layers, each without what an earlier one gave:

1. memories whose source is that file;
2. memories naming a symbol the file defines (functions, classes, structs: its first
   500 lines);
3. memories naming the file's stem (`auth` for auth.py);
4. on Edit, memories naming a symbol the edit removes: a rename never silently breaks a
   documented invariant. This layer runs right after the first, so that such a memory
   carries the warning even though the file defines the symbol (layer 2 would take it).

Every layer is lexical (BM25 and the source column): no model call on a tool's path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helixfs.agents import symbols
from helixfs.agents.context import Packer, World, record_line
from helixfs.agents.session import Session
from helixfs.memory.tokens import split_identifier

AMBIENT_TOOLS = ("Read", "Edit", "MultiEdit", "Write", "Glob", "Grep")
WRITING_TOOLS = ("Edit", "MultiEdit", "Write")
BUDGET = 300  # tokens
HEAD_BYTES = 64 * 1024  # of the file, for its symbols
FILE_HEAD_KEY = "helix_file_head"  # the launcher reads the file and adds its head here


def relative_names(target: str, cwd: str) -> list[str]:
    """The file's path as a memory's source may name it: from the project's folder,
    and as given."""
    names = [target]
    if os.path.isabs(target) and cwd:
        rel = os.path.relpath(target, cwd)
        if not rel.startswith(".."):
            names.insert(0, rel)
    return names


def file_head(path: str) -> str:
    try:
        with open(path, "rb") as file:
            return file.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def pre_tool_use(payload: dict[str, Any], world: World, state: Session) -> str:
    tool = str(payload.get("tool_name", ""))
    tool_input = payload.get("tool_input")
    if tool not in AMBIENT_TOOLS or not isinstance(tool_input, dict):
        return ""
    cwd = str(payload.get("cwd", ""))
    target = str(tool_input.get("file_path") or tool_input.get("path") or "")
    names = relative_names(target, cwd) if target else []
    if tool in WRITING_TOOLS and names:
        state.touched(names[0])
    packer, seen = Packer(BUDGET), set(state.injected)
    layers: list[Layer] = []
    if names and tool not in ("Glob", "Grep"):
        about = world.memory.about_files(names, limit=6, view=world.view())
        _add(packer, seen, [record_line(r) for r in about], [r.id for r in about])
        for old, new in _edits(tool_input) if tool in ("Edit", "MultiEdit") else ():
            layers.append(Layer(symbols.removed(old, new), prefix="the edit removes `{}`: "))
        head = str(payload.get(FILE_HEAD_KEY) or (file_head(target) if world.read_files else ""))
        layers.append(Layer(symbols.defined(head)))
        stem = Path(target).stem
        if len(stem) >= 3 and stem.lower() not in symbols.GENERIC_STEMS:
            layers.append(Layer([stem], whole_word=False))
    if tool in ("Glob", "Grep"):
        layers.append(Layer(symbols.identifiers(str(tool_input.get("pattern", "")))))
    _named(packer, seen, world, layers)
    state.mark([key for key in seen if key not in state.injected])
    if not packer.lines:
        return ""
    packer.lines.insert(0, f"HelixFS memory about {names[0] if names else 'this search'}:")
    return packer.text()


def _edits(tool_input: dict[str, Any]) -> list[tuple[str, str]]:
    edits = tool_input.get("edits")
    pairs = edits if isinstance(edits, list) else [tool_input]
    return [
        (str(e.get("old_string", "")), str(e.get("new_string", "")))
        for e in pairs
        if isinstance(e, dict)
    ]


def _add(packer: Packer, seen: set[str], lines: list[str], keys: list[str]) -> None:
    for line, key in zip(lines, keys, strict=True):
        if key not in seen and packer.add(line):
            seen.add(key)


@dataclass(frozen=True)
class Layer:
    """Names a memory must mention (as a word, or anywhere ignoring case) to be shown
    in this layer, with the prefix its line gets (`{}`: the name it mentions)."""

    names: list[str]
    whole_word: bool = True
    prefix: str = ""

    def words(self) -> list[str]:
        """What the lexical lookup asks for: a whole-word name as itself (a compound
        one is looked up whole), a name found inside words by its parts too."""
        if self.whole_word:
            return list(self.names)
        return [part for name in self.names for part in (*split_identifier(name), name)]

    def found(self, text: str) -> list[str]:
        if self.whole_word:
            return symbols.named_in(text, self.names)
        return [n for n in self.names if n.lower() in text.lower()]


def _named(packer: Packer, seen: set[str], world: World, layers: list[Layer]) -> None:
    """One lexical recall over every layer's names; each hit goes to the first layer
    whose names it mentions."""
    wanted = list(dict.fromkeys(word for layer in layers for word in layer.words()))
    if not wanted:
        return
    found = world.memory.mentioning(wanted, limit=16, view=world.view())
    for layer in layers:
        for record in found:
            names = layer.found(record.content) if record.id not in seen else []
            if names and packer.add(record_line(record, layer.prefix.format(names[0]))):
                seen.add(record.id)
