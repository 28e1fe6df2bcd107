"""One output helper for every command, so `--json` and the human form never drift.

A data command builds one JSON-able document and, separately, says how a human should
see it. With `--json` the document is printed as one JSON value on stdout and nothing
else is; without it, the human form is printed (tables aligned by `table`).

Names are bytes and need not be UTF-8 (ADR 0020). Inside helix such bytes travel as str
with surrogate escapes; they leave here, in one place: a JSON string that is not UTF-8
becomes {"bytes_b64": ...}, and human text shows each such byte as `\\xNN`.
"""

from __future__ import annotations

import base64
import json
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

JSONDoc = Any  # what json.dumps accepts; kept loose on purpose (nested dicts/lists)


class Output:
    def __init__(self, stdout: TextIO, stderr: TextIO, *, as_json: bool = False) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.as_json = as_json
        self.emitted = False  # a document is on stdout: a failure after it adds none

    def emit(self, doc: JSONDoc, human: str | Callable[[], str] | None = None) -> None:
        """Print `doc` as JSON, or its human form (a string or a function producing it)."""
        if self.as_json:
            json.dump(json_safe(doc), self.stdout, indent=2, sort_keys=False)
            self.stdout.write("\n")
            self.emitted = True
            return
        text = human() if callable(human) else human
        if text is None:
            text = json.dumps(json_safe(doc), indent=2)
        if text:
            self.stdout.write(shown(text if text.endswith("\n") else text + "\n"))

    def emit_error(self, kind: str, message: str, status: int) -> None:
        """Under --json a failure is a document too, so that a caller parsing stdout always
        gets one; the one-line message is on stderr as well. Human output: nothing more."""
        if self.as_json:
            self.emit({"error": {"kind": kind, "message": shown(message), "exit": status}})

    def line(self, text: str) -> None:
        """A human-only line (suppressed under --json, which prints only the document)."""
        if not self.as_json:
            self.stdout.write(shown(text) + "\n")

    def note(self, text: str) -> None:
        """A side remark on stderr: never pollutes the JSON document on stdout."""
        self.stderr.write(text + "\n")

    @contextmanager
    def progress(self, label: str, total: int | None = None) -> Iterator[Progress]:
        """A progress bar on stderr when it is a terminal; a silent counter otherwise."""
        bar = Progress(self.stderr, label, total, enabled=_isatty(self.stderr))
        try:
            yield bar
        finally:
            bar.finish()


BYTES_KEY = "bytes_b64"


def json_safe(value: Any) -> Any:
    """`value` with every string that is not UTF-8 (surrogate-escaped bytes) replaced by
    {"bytes_b64": base64 of its bytes}: JSON text must be Unicode, and a name must not
    lose bytes on the way out (ADR 0020). Keys cannot be objects: they get `\\xNN`."""
    if isinstance(value, str):
        return value if is_utf8(value) else {BYTES_KEY: _b64(value)}
    if isinstance(value, dict):
        return {shown(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return json_safe(str(value))


def is_utf8(text: str) -> bool:
    """False for a str holding lone surrogates: bytes from argv that were not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _b64(text: str) -> str:
    return base64.b64encode(original_bytes(text)).decode("ascii")


def original_bytes(text: str) -> bytes:
    """The bytes a surrogate-escaped str stands for (a stray surrogate kept as such)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def shown(text: str) -> str:
    """Text any terminal can print: a byte that is not UTF-8 shows as `\\xNN` (which a
    shell's $'...' quoting reads back), instead of failing on a strict stdout."""
    if is_utf8(text):
        return text
    return original_bytes(text).decode("utf-8", "backslashreplace")


def printable(text: str) -> str:
    """One line of valid text: a newline in a path must not look like another entry."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown(text))


def table(rows: Sequence[Sequence[object]], headers: Sequence[str] | None = None) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    cells = [[str(c) for c in row] for row in rows]
    if headers:
        cells.insert(0, list(headers))
    if not cells:
        return ""
    columns = range(len(cells[0]))
    widths = [max(_columns(row[i]) for row in cells if i < len(row)) for i in columns]
    lines = []
    for row in cells:
        padded = [c + " " * (widths[i] - _columns(c)) for i, c in enumerate(row[:-1])]
        lines.append("  ".join(padded + row[-1:]).rstrip())
    return "\n".join(lines)


def _columns(text: str) -> int:
    """How many terminal columns `text` takes: CJK and emoji take two, a combining accent
    none (len() misaligned a table holding a Japanese branch name)."""
    return sum(_char_columns(c) for c in text)


def _char_columns(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """Redraws at most ten times a second so that a tight loop is not slowed by the bar."""

    def __init__(self, stream: TextIO, label: str, total: int | None, *, enabled: bool) -> None:
        self.stream = stream
        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled
        self._last_draw = 0.0
        self._drawn = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.enabled:
            now = time.monotonic()
            if now - self._last_draw >= 0.1:
                self._last_draw = now
                self._draw()

    def update(self, done: int, total: int) -> None:
        """The (done, total) callback style of the core API (gc, fsck, git import)."""
        self.total = total
        self.advance(done - self.done)

    def _draw(self) -> None:
        if self.total:
            frac = min(1.0, self.done / self.total)
            filled = int(frac * 30)
            bar = "#" * filled + "-" * (30 - filled)
            text = f"\r{self.label} [{bar}] {self.done}/{self.total}"
        else:
            text = f"\r{self.label} {self.done}"
        self.stream.write(text)
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self.enabled and self._drawn:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
