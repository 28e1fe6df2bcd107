"""Whether a file's content is text: the one test diff, blame, merge and the web share;
and a path shown on one line (a module of the standard library alone: refs.py and
heads.py import it without the tree operations)."""

from __future__ import annotations


def as_text(data: bytes) -> str | None:
    """The content as text, or None when it is binary (a NUL early on, or not UTF-8)."""
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def show_path(path: bytes) -> str:
    """A path on one line of text, for messages and diff headers: bytes that are not
    UTF-8 as `\\xNN`, and control characters (a newline, a tab) escaped the same way."""
    text = path.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
