"""The settings of a store: one TOML file per store, one per user, environment variables.

Where a value comes from, first found wins: a command-line flag (the caller applies it),
the key's environment variable, `STORE/config.toml`, the user's
`$XDG_CONFIG_HOME/helixfs/config.toml` (`~/.config/helixfs/config.toml`), the default
below. Every key is declared once in KEYS with its type, default, variable and whether a
running mount can take a change of it live (`Key.live`); docs/configuration.md describes
them one by one, and tests/test_config.py checks that page against this table.

A file is TOML with one table per section (`[cache]` `frames = "128MiB"`). A key the
table does not declare, or a value its type refuses, is an error naming the file, the
key and the valid keys: a typo must not silently leave a default in force.

Shared by every layer (like errors.py): it imports nothing of ours but errors.
"""

from __future__ import annotations

import fcntl
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helixfs.errors import InvalidInput

STORE_FILE = "config.toml"
USER_FILE = Path("helixfs") / "config.toml"

Value = str | int | float | bool

# ------------------------------------------------------------------ value types


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20}
_UNITS |= {"mb": 1000**2, "mib": 1 << 20, "g": 1 << 30, "gb": 1000**3, "gib": 1 << 30}
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AMOUNT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: Value) -> int:
    """Bytes from `123`, `"64MiB"`, `"1.5 GiB"`, `"512k"` (k/M/G are binary, kB/MB/GB not)."""
    if isinstance(text, bool | float):
        raise ValueError("a size is a whole number of bytes or a text like 64MiB")
    if isinstance(text, int):
        if text < 0:
            raise ValueError("a size cannot be negative")
        return text
    found = _AMOUNT.fullmatch(text)
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size (say 64MiB, 512KiB, 2GiB or bytes)")
    return int(float(found.group(1)) * _UNITS[unit])


def parse_duration(text: Value) -> float:
    """Seconds from `30` (seconds), `"300ms"`, `"48h"`, `"14d"`, `"2w"`."""
    if isinstance(text, bool):
        raise ValueError("a duration is a number of seconds or a text like 48h")
    if isinstance(text, int | float):
        if not math.isfinite(text) or text < 0:
            raise ValueError("a duration is a finite number of seconds, 0 or more")
        return float(text)
    found = _AMOUNT.fullmatch(text)
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in _SECONDS:
        if found is not None and unit == "":
            return float(found.group(1))
        raise ValueError(f"{text!r} is not a duration (say 300ms, 30s, 10m, 48h, 14d, 2w)")
    return float(found.group(1)) * _SECONDS[unit]


def _bool(text: Value) -> bool:
    if isinstance(text, bool):
        return text
    words = {"1": True, "true": True, "yes": True, "on": True}
    words |= {"0": False, "false": False, "no": False, "off": False, "": False}
    lowered = str(text).strip().lower()
    if lowered not in words:
        raise ValueError(f"{text!r} is not true or false")
    return words[lowered]


def _text(text: Value) -> str:
    if not isinstance(text, str):
        raise ValueError("a text value is expected")
    if "\n" in text or "\x00" in text:
        raise ValueError("a value cannot hold a newline or NUL")
    return text


def _int_in(low: int, high: int) -> Callable[[Value], int]:
    def parse(text: Value) -> int:
        if isinstance(text, bool | float):
            raise ValueError("a whole number is expected")
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a whole number") from None
        if not low <= number <= high:
            raise ValueError(f"{number} is outside {low}..{high}")
        return number

    return parse


def _choice(*words: str) -> Callable[[Value], str]:
    def parse(text: Value) -> str:
        if text not in words:
            raise ValueError(f"{text!r} is not one of {', '.join(words)}")
        return str(text)

    return parse


def _size_up_to(limit: int) -> Callable[[Value], int]:
    def parse(text: Value) -> int:
        size = parse_size(text)
        if size > limit:
            raise ValueError(f"{text!r} is more than {limit >> 30} GiB")
        return size

    return parse


def _window(text: Value) -> float:
    """The quiet window: a duration with its unit (the mount's flag counts in ms, so a
    bare 300 would be ambiguous), or 0."""
    seconds = parse_duration(text)
    bare = isinstance(text, int | float) or str(text).strip()[-1:].isdigit()
    if bare and seconds != 0:
        raise ValueError(f"say {text}ms or {text}s: the mount's --quiet-window counts in ms")
    return seconds


def _positive_duration(text: Value) -> float:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError("this duration must be more than 0")
    return seconds


def _ttl(text: Value) -> float:
    """A snapshot's time to live: a duration, or `never` (0 means never too)."""
    if isinstance(text, str) and text.strip().lower() in ("never", "off", ""):
        return 0.0
    return parse_duration(text)


# ------------------------------------------------------------------ the keys


@dataclass(frozen=True)
class Key:
    name: str  # section.key, as in the file's table
    parse: Callable[[Value], Any]  # the file's or the user's value -> the value used
    default: Value  # as a user would write it
    env: str  # the environment variable that overrides the files
    live: bool  # a running mount applies a change at once (else: at the next mount)
    doc: str  # one line; docs/configuration.md says more

    @property
    def section(self) -> str:
        return self.name.partition(".")[0]


_CACHE_LIMIT = 64 << 30
KEYS: dict[str, Key] = {
    key.name: key
    for key in (
        Key("cache.frames", _size_up_to(_CACHE_LIMIT), "64MiB", "HELIX_CACHE_FRAMES", True,
            "L1 cache of stored frames (RocksStore), in bytes"),
        Key("cache.records", _size_up_to(_CACHE_LIMIT), "8MiB", "HELIX_CACHE_RECORDS", True,
            "cache of decoded records: the next write's delta bases"),
        Key("store.compression", _choice("lz4", "zstd", "none"), "lz4",
            "HELIX_STORE_COMPRESSION", True, "codec of new objects: lz4, zstd or none"),
        Key("store.zstd_level", _int_in(1, 22), 3, "HELIX_STORE_ZSTD_LEVEL", True,
            "zstd's level (1-22) when store.compression is zstd"),
        Key("mount.quiet_window", _window, "300ms", "HELIX_QUIET_WINDOW", True,
            "quiet time after a save before the mount commits (0: every operation)"),
        Key("mount.fuse_wait", _choice("auto", "spin", "block", "trio"), "auto", "HELIX_FUSE_WAIT",
            False, "how the FUSE loop waits for the next request (ADR 0074)"),
        Key("gc.growth", parse_size, "256MiB", "HELIX_GC_GROWTH", True,
            "store growth that starts a mount's automatic gc (0: never)"),
        Key("gc.retention", parse_duration, "14d", "HELIX_GC_RETENTION", True,
            "unreachable commits younger than this survive the automatic gc"),
        Key("gc.snapshot_ttl", _ttl, "never", "HELIX_SNAPSHOT_TTL", True,
            "gc removes snapshots older than this unless pinned (never: keep all)"),
        Key("memory.half_life", _positive_duration, "90d", "HELIX_MEMORY_HALF_LIFE", False,
            "age at which a memory's recency weight halves in ranking"),
        Key("memory.model_dir", _text, "", "HELIX_EMBED_MODEL_DIR", False,
            "folder of the embedding model (empty: the packaged model)"),
        Key("memory.model", _text, "", "HELIX_EMBED_MODEL", False,
            "fastembed architecture name of that model (empty: all-MiniLM-L6-v2)"),
        Key("memory.embed_threads", _int_in(0, 256), 0, "HELIX_EMBED_THREADS", False,
            "ONNX threads of the embedder (0: half the cores, 2 to 4)"),
        Key("memory.lexical", _bool, False, "HELIX_MEMORY_LEXICAL", False,
            "search memory lexically only: no model is loaded"),
        Key("memory.cache_dir", _text, "", "HELIX_CACHE_DIR", False,
            "where the assembled model is kept (empty: $XDG_CACHE_HOME/helixfs)"),
        Key("commit.author", _text, "", "HELIX_AUTHOR", True,
            "author of new commits (empty: $USER)"),
        Key("remote.host", _text, "", "HELIX_HOST", True,
            "this machine's name in BRANCH@HOST of kept-apart pushes (empty: hostname)"),
    )
}  # fmt: skip


def key(name: str) -> Key:
    """The declared key, or InvalidInput listing the valid ones."""
    found = KEYS.get(name)
    if found is None:
        raise InvalidInput(f"unknown config key {name!r}; the keys are: {', '.join(KEYS)}")
    return found


def check(name: str, value: Value, where: str = "") -> Any:
    """The parsed value of `name`, or InvalidInput saying why not (and the valid keys)."""
    spec = key(name)
    try:
        return spec.parse(value)
    except ValueError as exc:
        place = f" in {where}" if where else ""
        raise InvalidInput(
            f"bad value for {name}{place}: {exc} (default {spec.default!r}; "
            f"the keys are: {', '.join(KEYS)})"
        ) from None


def default(name: str) -> Any:
    """A key's default, parsed: the one place the code's constants come from."""
    spec = key(name)
    return spec.parse(spec.default)


# ------------------------------------------------------------------ resolved settings


@dataclass(frozen=True)
class Entry:
    key: str
    value: Any  # parsed: bytes as int, durations as float seconds
    text: Value  # as given
    source: str  # "env HELIX_X", "store FILE", "user FILE", "default"


@dataclass(frozen=True)
class Settings:
    """Every key's value and where it came from, for one store (or none)."""

    entries: Mapping[str, Entry]

    def __getitem__(self, name: str) -> Any:
        return self.entries[key(name).name].value

    def with_flags(self, flags: Mapping[str, Any]) -> Settings:
        """These settings under a command's flags (parsed values), which win over all."""
        entries = dict(self.entries)
        for name, value in flags.items():
            entries[key(name).name] = Entry(name, value, value, "flag")
        return Settings(entries)

    def flags(self) -> dict[str, Any]:
        return {e.key: e.value for e in self.entries.values() if e.source == "flag"}

    def changed(self, other: Settings) -> list[str]:
        """The keys whose value differs in `other`."""
        return [name for name in KEYS if self[name] != other[name]]

    @property
    def frame_cache_bytes(self) -> int:
        return int(self["cache.frames"])

    @property
    def record_cache_bytes(self) -> int:
        return int(self["cache.records"])

    @property
    def compression(self) -> tuple[str, int]:
        return str(self["store.compression"]), int(self["store.zstd_level"])


def user_file(environ: Mapping[str, str] = os.environ) -> Path:
    xdg = environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / USER_FILE


def store_file(store: Path) -> Path:
    return Path(store) / STORE_FILE


def load(store: Path | None, environ: Mapping[str, str] = os.environ) -> Settings:
    """The settings of `store` (None: the user's file, the environment, the defaults)."""
    layers = [("user", user_file(environ))]
    if store is not None:
        layers.append(("store", store_file(store)))
    chosen: dict[str, Entry] = {}
    for name, spec in KEYS.items():
        chosen[name] = Entry(name, check(name, spec.default), spec.default, "default")
    for label, path in layers:  # later layers win
        for name, text in read_file(path).items():
            chosen[name] = Entry(name, check(name, text, str(path)), text, f"{label} {path}")
    for name, spec in KEYS.items():
        text = environ.get(spec.env, "")
        if text:  # an empty variable is an unset one, as it always was here
            chosen[name] = Entry(name, check(name, text, f"${spec.env}"), text, f"env {spec.env}")
    return Settings(chosen)


def read_file(path: Path, *, checked: bool = True) -> dict[str, Value]:
    """A config file's keys (`section.key` -> value); {} when there is none. Unchecked
    (for `set` and `unset`, which must be able to fix a file): any key, any value."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    import tomllib  # here: ~15 ms of every command's start, and most stores have no file

    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid TOML: {exc} (fix or remove it)") from None
    values = dict(_flatten(document, path))
    for name, value in values.items() if checked else ():
        try:
            check(name, value, str(path))
        except InvalidInput as exc:
            raise InvalidInput(f"{exc}; `helix config unset {name}` removes it") from None
    return values


def _flatten(document: dict[str, Any], path: Path) -> Iterator[tuple[str, Value]]:
    for section, table in document.items():
        if not isinstance(table, dict):
            raise InvalidInput(
                f"{path}: {section!r} is not a [section]; the keys are: {', '.join(KEYS)}"
            )
        for name, value in table.items():
            full = f"{section}.{name}"
            if not isinstance(value, str | int | float | bool):
                raise InvalidInput(f"{path}: {full} must be a plain value, not a {type(value)}")
            yield full, value


# ------------------------------------------------------------------ writing


def set_value(path: Path, name: str, text: str) -> Value:
    """Write `name = text` into the file at `path` (checked first: a bad value or key
    changes nothing). Returns the value as stored (a number stays a number)."""
    spec = key(name)
    stored = _typed(spec, text)
    check(name, stored)
    with _changing(path):
        values = read_file(path, checked=False)
        values[name] = stored
        write_file(path, values)
    return stored


def unset_value(path: Path, name: str) -> bool:
    """Remove `name` from the file; whether it was there. A name the table lacks is
    refused unless the file has it (a typo in a hand-written file is removed so)."""
    with _changing(path):
        values = read_file(path, checked=False)
        if name not in values:
            key(name)
            return False
        del values[name]
        write_file(path, values)
    return True


@contextmanager
def _changing(path: Path) -> Iterator[None]:
    """Hold the file's lock across a read-modify-write: two `helix config set` of
    different keys at once must both land, not the later one's copy of the file win."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _typed(spec: Key, text: str) -> Value:
    """The command line's text as the file's type: ints and bools stay TOML's own."""
    if isinstance(spec.default, bool):
        try:
            return _bool(text)
        except ValueError:
            return text  # check() then says why
    if isinstance(spec.default, int) and re.fullmatch(r"-?\d+", text.strip()):
        return int(text)
    return text


def write_file(path: Path, values: Mapping[str, Value]) -> None:
    """The file as one table per section, written whole (to a temporary, then renamed)."""
    sections: dict[str, list[str]] = {}
    order = list(KEYS)
    for name in sorted(values, key=lambda n: order.index(n) if n in KEYS else len(order)):
        section, _, field = name.partition(".")
        sections.setdefault(section, []).append(f"{field} = {toml_value(values[name])}")
    text = "# HelixFS settings: `helix config list` shows every key\n"
    for section, lines in sections.items():
        text += f"\n[{section}]\n" + "".join(f"{line}\n" for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def toml_value(value: Value) -> str:
    """A TOML literal for the flat types a key may hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    escaped = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped)
    return f'"{escaped}"'


__all__ = ["KEYS", "Entry", "Key", "Settings", "check", "key", "load", "parse_duration",
           "parse_size", "set_value", "store_file", "unset_value", "user_file"]  # fmt: skip
