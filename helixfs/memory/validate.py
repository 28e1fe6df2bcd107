"""Argument checks shared by the engine's public methods: bad input -> InvalidInput."""

from __future__ import annotations

import re
from collections.abc import Sequence

from helixfs.errors import InvalidInput
from helixfs.memory.types import MEMORY_TYPES

MAX_CONTENT = 20_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,99}$")
_RELATION = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
RESERVED_RELATIONS = frozenset({"supersedes", "reasserts"})  # consolidation's own edges


def check_name(kind: str, value: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidInput(
            f"invalid {kind} {value!r}: use letters, digits and _.:/@+- (max 100 chars)"
        )
    return value


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise InvalidInput("tags must be a list of strings, not one string")
    return tuple(dict.fromkeys(check_name("tag", t) for t in tags))


def check_text(kind: str, text: str, limit: int = MAX_CONTENT) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{kind} is empty")
    if len(text) > limit:
        raise InvalidInput(f"{kind} is {len(text)} characters; the limit is {limit}")
    if "\x00" in text:
        raise InvalidInput(f"{kind} contains a NUL character")
    try:  # a lone surrogate: a byte that was not UTF-8 (a name in the mount, argv)
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{kind} is not valid UTF-8 text") from None
    return text


def check_unit(kind: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(f"{kind} must be between 0 and 1, got {value!r}")
    return float(value)


def check_types(types: Sequence[str] | None) -> tuple[str, ...] | None:
    if types is None:
        return None
    if isinstance(types, str):
        types = [types]
    bad = [t for t in types if t not in MEMORY_TYPES]
    if bad:
        raise InvalidInput(f"unknown memory type(s) {bad}; use {', '.join(MEMORY_TYPES)}")
    return tuple(types) or None


def check_budget(budget_tokens: int) -> None:
    if not isinstance(budget_tokens, int) or not 1 <= budget_tokens <= 1_000_000:
        raise InvalidInput(
            f"budget must be a whole number of tokens in 1..1000000, got {budget_tokens!r}"
        )


def check_limit(value: int, upper: int = 100_000, name: str = "limit") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= upper:
        raise InvalidInput(f"{name} must be a whole number in 1..{upper}, got {value!r}")


def check_relation(rel: str) -> str:
    """A relation made by hand (`relate`): not one of consolidation's own."""
    if not isinstance(rel, str) or not _RELATION.match(rel):
        raise InvalidInput(f"invalid relation {rel!r}: lowercase letters, digits, _ and -")
    if rel in RESERVED_RELATIONS:
        raise InvalidInput(f"relation {rel!r} is set by consolidation, not by hand")
    return rel
