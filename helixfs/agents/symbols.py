"""Names a source file defines, and names an edit removes: the keys of ambient context.

A regular expression per definition keyword, not a parser: it must cost microseconds
on every Read, and a name it misses only means one layer of context less.
"""

from __future__ import annotations

import re

HEAD_LINES = 500
_DEFINITION = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?:pub(?:\([^)]*\))?[ \t]+)?(?:async[ \t]+)?(?:static[ \t]+)?"
    r"(?:def|class|struct|enum|trait|interface|fn|func|function|type|impl|union)[ \t]+"
    r"(?:\([^)]*\)[ \t]*)?([A-Za-z_][A-Za-z0-9_]*)",
    re.MULTILINE,
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_COMMON = frozenset(
    ("self", "this", "None", "True", "False", "null", "true", "false", "return", "import")
    + ("from", "const", "async", "await", "class", "def", "struct", "type", "func")
    + ("function", "impl", "print", "string", "int64", "bool")
)
GENERIC_STEMS = frozenset(
    ("__init__", "index", "main", "mod", "lib", "utils", "util", "test", "tests")
    + ("conftest", "setup", "readme")
)


def _useful(name: str) -> bool:
    return (
        len(name) >= 4
        and name not in _COMMON
        and not (name.startswith("__") and name.endswith("__"))
    )


def defined(text: str, limit: int = 20) -> list[str]:
    """The names defined in the first HEAD_LINES lines of `text`, in order, once each."""
    head = "\n".join(text.splitlines()[:HEAD_LINES])
    names = dict.fromkeys(m.group(1) for m in _DEFINITION.finditer(head))
    return [name for name in names if _useful(name)][:limit]


def removed(old: str, new: str, limit: int = 10) -> list[str]:
    """Identifiers of `old` that `new` no longer has (a rename, a deleted function):
    definitions first, then names that look like code (snake_case, camelCase)."""
    kept = set(_IDENTIFIER.findall(new))
    gone = [n for n in defined(old, 50) if n not in kept]
    for name in _IDENTIFIER.findall(old):
        looks_like_code = "_" in name.strip("_") or (name[0].islower() and not name.islower())
        if name not in kept and looks_like_code and _useful(name):
            gone.append(name)
    return list(dict.fromkeys(gone))[:limit]


def named_in(text: str, names: list[str]) -> list[str]:
    """Which of `names` `text` mentions as a whole word."""
    return [
        n for n in names if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", text)
    ]


def identifiers(text: str, limit: int = 6) -> list[str]:
    """The code-like names in a search pattern (a Grep's regex, a Glob)."""
    return [n for n in dict.fromkeys(_IDENTIFIER.findall(text)) if _useful(n)][:limit]
