"""Whether a file's content is text: the one test diff, blame, merge and the web share."""

from __future__ import annotations


def as_text(data: bytes) -> str | None:
    """The content as text, or None when it is binary (a NUL early on, or not UTF-8)."""
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
