"""Ignore rules: `.gitignore` files and a `.helixignore` beside them (ADR 0061).

A path they match lives in the work tree (the mount shows it, a build writes it) but in
no commit, as editor temp files do (ADR 0019). Git's syntax and precedence, read in
git's dir.c and wildmatch.c: within a folder the last matching line decides, a deeper
folder's file before a shallower one's, `!` re-includes, a trailing `/` matches folders
only, a line with a `/` before its end is anchored to its file's folder, and nothing
below an ignored folder can be re-included (no rule below it is read at all). The
`.helixignore` of a folder is read after its `.gitignore`: its lines win on a tie.

Each folder's rules compile to one regex over base names and one over paths (per kind:
file or folder), the lines in reverse order with a group each, so the first alternative
that matches is the last line in the file: one `fullmatch` per regex answers a check,
and answers are memoised per folder's rules. `Scope` is the rules in force in one
folder: the compiled rules of it and its ancestors, each with the folder's path below
that rule file's folder.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

RULE_FILES = (b".gitignore", b".helixignore")
"""Read in this order in every folder: the later file's lines take precedence."""
_NO_FILES = (None,) * len(RULE_FILES)
GIT_DIR = b".git"
EXCLUDE_PATH = (b"info", b"exclude")
"""A repository's own excludes, below its `.git` folder (ADR 0061)."""
RULES_MAX = 1 << 20
"""A rule file larger than this is not read (a generated file named so, most likely)."""
_ANSWERS_KEPT = 4096
_BOM = b"\xef\xbb\xbf"
_NEVER = b"(?!)"
_UNKNOWN = object()
_CLASSES: dict[bytes, Callable[[int], bool]] = {
    b"alnum": lambda c: chr(c).isalnum(),
    b"alpha": lambda c: chr(c).isalpha(),
    b"blank": lambda c: c in (9, 32),
    b"cntrl": lambda c: c < 32 or c == 127,
    b"digit": lambda c: 48 <= c <= 57,
    b"graph": lambda c: 33 <= c <= 126,
    b"lower": lambda c: 97 <= c <= 122,
    b"print": lambda c: 32 <= c <= 126,
    b"punct": lambda c: 33 <= c <= 126 and not chr(c).isalnum(),
    b"space": lambda c: c in (9, 10, 11, 12, 13, 32),
    b"upper": lambda c: 65 <= c <= 90,
    b"xdigit": lambda c: chr(c) in "0123456789abcdefABCDEF",
}


class _Abort(Exception):
    """A pattern git's wildmatch gives up on (an unclosed `[`): it matches nothing."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """One line of a rule file, parsed."""

    regex: bytes  # matches a base name (basename) or a path below the file's folder
    negated: bool  # `!`: re-include
    dir_only: bool  # a trailing `/`
    basename: bool  # no `/` but a trailing one: matched against the base name alone


def parse(text: bytes) -> list[Pattern]:
    """The patterns of a rule file, in file order (blank lines and comments dropped)."""
    if text.startswith(_BOM):
        text = text[len(_BOM) :]
    patterns = []
    for line in text.split(b"\n"):
        pattern = parse_line(line)
        if pattern is not None:
            patterns.append(pattern)
    return patterns


def parse_line(line: bytes) -> Pattern | None:
    if line.endswith(b"\r"):
        line = line[:-1]  # git reads CRLF files so too
    if not line or line.startswith(b"#"):
        return None
    line = _trim_trailing_spaces(line)
    negated = line.startswith(b"!")
    if negated:
        line = line[1:]
    dir_only = line.endswith(b"/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    basename = b"/" not in line
    if line.startswith(b"/"):
        line = line[1:]
    try:
        regex = translate(line, pathname=not basename)
    except _Abort:
        regex = _NEVER
    return Pattern(regex, negated, dir_only, basename)


def _trim_trailing_spaces(line: bytes) -> bytes:
    """Trailing spaces go, unless escaped (`\\ `); a tab stays, as in git."""
    last_space = None
    i = 0
    while i < len(line):
        c = line[i]
        if c == 0x20:
            if last_space is None:
                last_space = i
        elif c == 0x5C:  # a backslash keeps the next byte, a space too
            i += 1
            if i >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def translate(glob: bytes, *, pathname: bool) -> bytes:
    """A wildmatch pattern as a Python bytes regex (for `fullmatch`). With `pathname`,
    `*`, `?` and classes never match `/`, and `**` between slashes spans folders."""
    out: list[bytes] = []
    i, n = 0, len(glob)
    any_char = b"[^/]" if pathname else b"(?s:.)"
    while i < n:
        c = glob[i : i + 1]
        if c == b"*":
            start = i
            while i < n and glob[i : i + 1] == b"*":
                i += 1
            double = i - start >= 2
            before_ok = start == 0 or glob[start - 1 : start] == b"/"
            if pathname and double and before_ok and i < n and glob[i : i + 1] == b"/":
                out.append(b"(?:.*/)?")  # `**/`: no folder, or any folders
                i += 1
            elif pathname and double and before_ok and i == n:
                out.append(b"(?s:.*)")  # a trailing `/**`: everything inside
            else:
                out.append(any_char + b"*")
            continue
        if c == b"?":
            out.append(any_char)
        elif c == b"[":
            regex, i = _char_class(glob, i, pathname)
            out.append(regex)
            continue
        elif c == b"\\":
            i += 1
            if i >= n:
                raise _Abort  # a trailing backslash never matches in wildmatch
            out.append(re.escape(glob[i : i + 1]))
        else:
            out.append(re.escape(c))
        i += 1
    return b"".join(out)


def _char_class(glob: bytes, i: int, pathname: bool) -> tuple[bytes, int]:
    """`[...]` at `glob[i]` as a regex class over bytes, and the index past it; the
    loop follows wildmatch's, whose first byte (even `]`) is always a member."""
    n = len(glob)
    i += 1
    negated = i < n and glob[i] in b"!^"
    if negated:
        i += 1
    members: set[int] = set()
    prev: int | None = None
    first = True
    while True:
        if i >= n:
            raise _Abort
        c = glob[i]
        if c == ord("]") and not first:
            break
        first = False
        if c == ord("\\"):
            i += 1
            if i >= n:
                raise _Abort
            prev = glob[i]
            members.add(prev)
        elif c == ord("-") and prev is not None and i + 1 < n and glob[i + 1] != ord("]"):
            i += 1
            high = glob[i]
            if high == ord("\\"):
                i += 1
                if i >= n:
                    raise _Abort
                high = glob[i]
            members.update(range(prev, high + 1))
            prev = None
        elif c == ord("[") and i + 1 < n and glob[i + 1] == ord(":"):
            end = glob.find(b"]", i + 2)
            if end < 0:
                raise _Abort
            if end - 1 < i + 2 or glob[end - 1] != ord(":"):
                prev = c  # no `:]`: a plain `[`
                members.add(c)
            else:
                test = _CLASSES.get(glob[i + 2 : end - 1])
                if test is None:
                    raise _Abort  # a malformed [:class:]
                members.update(b for b in range(128) if test(b))
                prev = None
                i = end
        else:
            prev = c
            members.add(c)
        i += 1
    chosen = set(range(256)) - members if negated else members
    if pathname:
        chosen.discard(ord("/"))
    return _byte_class(chosen), i + 1


def _byte_class(members: set[int]) -> bytes:
    if not members:
        return _NEVER
    return b"[" + b"".join(b"\\x%02x" % b for b in sorted(members)) + b"]"


class Rules:
    """The compiled lines of one folder's rule files. Compared by identity: `RuleFiles`
    hands out one object per content."""

    __slots__ = ("anchored", "_answers", "_negations", "_names", "_paths")

    def __init__(self, patterns: list[Pattern]) -> None:
        self._negations = [p.negated for p in patterns]
        # per kind (0: file, 1: folder): (regex over base names, regex over paths)
        self._names = [_alternation(patterns, True, d) for d in (False, True)]
        self._paths = [_alternation(patterns, False, d) for d in (False, True)]
        self.anchored = any(not p.basename for p in patterns)
        self._answers: dict[tuple[bytes, bool], object] = {}

    def decide(self, path: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no line matches. `path` is below
        this file's folder and ends in `name`."""
        key = (path, is_dir)
        found = self._answers.get(key, _UNKNOWN)
        if found is not _UNKNOWN:
            return found  # type: ignore[return-value]
        best = -1
        for regex, subject in ((self._names[is_dir], name), (self._paths[is_dir], path)):
            if regex is not None:
                match = regex[0].fullmatch(subject)
                if match is not None and match.lastindex is not None:
                    best = max(best, regex[1][match.lastindex - 1])
        answer = None if best < 0 else not self._negations[best]
        if len(self._answers) >= _ANSWERS_KEPT:
            self._answers.clear()
        self._answers[key] = answer
        return answer


def _alternation(
    patterns: list[Pattern], basename: bool, is_dir: bool
) -> tuple[re.Pattern[bytes], list[int]] | None:
    """One regex of the lines of that form that can match that kind, last line first,
    a group each; with the line number of each group."""
    chosen = [
        at
        for at in range(len(patterns) - 1, -1, -1)
        if patterns[at].basename == basename and (is_dir or not patterns[at].dir_only)
    ]
    if not chosen:
        return None
    body = b"|".join(b"(" + patterns[at].regex + b")" for at in chosen)
    return re.compile(body), chosen


@dataclass(frozen=True, slots=True)
class RepoRules:
    """What a repository's root adds below all of its folders' rule files: its
    `.git/info/exclude`, then the user's `core.excludesFile` (git's lowest two)."""

    exclude: Rules | None = None
    user: Rules | None = None

    def levels(self) -> tuple[tuple[Rules, bytes], ...]:
        return tuple((r, b"") for r in (self.exclude, self.user) if r is not None)


@dataclass(frozen=True, slots=True)
class Scope:
    """The rules in force in one folder: `levels` deepest first, each with this
    folder's path below that rule file's folder (b"" or b"a/b/"), then `base`, the
    nearest repository's exclude files with the path below its root (None: above the
    root, no repository yet). `everything`: the folder is ignored itself, so is all
    below it (git reads no rule inside)."""

    levels: tuple[tuple[Rules, bytes], ...] = ()
    everything: bool = False
    base: tuple[tuple[Rules, bytes], ...] | None = None
    key: object = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # the prefix matters only to anchored rules: others share memos across folders
        shown = tuple((r, p if r.anchored else b"") for r, p in self.levels + (self.base or ()))
        object.__setattr__(self, "key", (self.everything, shown))

    @property
    def empty(self) -> bool:
        return not self.levels and not self.base and not self.everything

    def ignored(self, name: bytes, is_dir: bool) -> bool:
        if self.everything:
            return True
        for rules, prefix in self.levels:
            found = rules.decide(prefix + name, name, is_dir)
            if found is not None:
                return found
        for rules, prefix in self.base or ():
            found = rules.decide(prefix + name, name, is_dir)
            if found is not None:
                return found
        return False

    def with_rules(self, rules: Rules | None, repo: RepoRules | None = None) -> Scope:
        """This folder's scope once its own rule files (`rules`) are read; `repo`: the
        folder is a repository's root (it holds `.git`, or it is the tree's root), whose
        exclude files replace those of any repository around it."""
        if self.everything:
            return self
        base = self.base if repo is None else repo.levels()
        if rules is None and base == self.base:
            return self
        levels = self.levels if rules is None else ((rules, b""), *self.levels)
        return Scope(levels, base=() if base is None else base)

    def below(self, name: bytes) -> Scope:
        """The scope a subfolder `name` inherits, before its own rule files."""
        if self.everything:
            return self
        if self.ignored(name, True):
            return EVERYTHING
        step = name + b"/"
        levels = tuple((r, p + step) for r, p in self.levels)
        base = None if self.base is None else tuple((r, p + step) for r, p in self.base)
        return Scope(levels, base=base)


NO_RULES = Scope()
EVERYTHING = Scope(everything=True)


class RuleFiles:
    """Compiled rules by the content ids of a folder's rule files, read once each
    (contents never change under an id, so nothing here is ever stale)."""

    def __init__(self, read: Callable[[Any], bytes], kept: int = 1024) -> None:
        self._read = read
        self._kept = kept
        self._rules: dict[tuple[object, ...], Rules | None] = {}
        self._user: Rules | None | object = _UNKNOWN

    def user(self) -> Rules | None:
        """The user's `core.excludesFile` (read once: a change shows at the next open)."""
        if self._user is _UNKNOWN:
            self._user = user_excludes()
        return self._user  # type: ignore[return-value]

    def repo(self, exclude: Any | None, read: Callable[[Any], bytes] | None = None) -> RepoRules:
        """A repository root's rules, given the content id of its `.git/info/exclude`."""
        rules = None if exclude is None else self.rules((exclude,), read)
        return RepoRules(rules, self.user())

    def rules(
        self, ids: tuple[Any, ...], read: Callable[[Any], bytes] | None = None
    ) -> Rules | None:
        """The rules of the files with these content ids, in RULE_FILES order (None:
        no file); None when they hold no pattern. `read`: a reader that also sees
        contents not stored yet (a work tree's)."""
        if ids == _NO_FILES:
            return None
        try:
            return self._rules[ids]
        except KeyError:
            pass
        read = read or self._read
        texts = [read(oid) if oid is not None else b"" for oid in ids]
        rules = compile_rules(*texts)
        if len(self._rules) >= self._kept:
            self._rules.clear()
        self._rules[ids] = rules
        return rules


def compile_rules(*texts: bytes) -> Rules | None:
    """The rules of one folder's files (RULE_FILES order); None without a pattern."""
    patterns = [p for text in texts for p in parse(text)]
    return Rules(patterns) if patterns else None


_CONFIG_ENV = ("PATH", "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")
_user_paths: dict[tuple[str | None, ...], bytes] = {}


def user_excludes_path(env: Mapping[str, str] | None = None) -> bytes:
    """The file git reads as the user's excludes: `core.excludesFile` of the global
    (or system) config, else `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
    Asked of git once per environment in a process (two runs of `git config`)."""
    env = os.environ if env is None else env
    key = tuple(env.get(name) for name in _CONFIG_ENV)
    found = _user_paths.get(key)
    if found is None:
        found = _user_paths[key] = _ask_user_excludes_path(env)
    return found


def _ask_user_excludes_path(env: Mapping[str, str]) -> bytes:
    git = shutil.which("git", path=env.get("PATH")) or "git"
    for where in ("--global", "--system"):
        try:
            done = subprocess.run(
                [git, "config", where, "--includes", "--path", "--get", "core.excludesFile"],
                capture_output=True,
                env=dict(env),
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            break  # no git here: its default place
        if done.returncode == 0 and done.stdout.strip():
            return os.path.expanduser(done.stdout.rstrip(b"\n"))
    config = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "~"), ".config")
    return os.fsencode(os.path.expanduser(os.path.join(config, "git", "ignore")))


def user_excludes(env: Mapping[str, str] | None = None) -> Rules | None:
    """The rules of the user's excludes file (none when it is missing or unreadable)."""
    return compile_rules(_read_rule_file(user_excludes_path(env), follow=True) or b"")


def _read_rule_file(path: bytes, follow: bool = False) -> bytes | None:
    """A rule file's text if it is a regular file not over RULES_MAX, else None. Git
    follows a symlink for the exclude files, never for a .gitignore."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > RULES_MAX:
            return None
        with open(path, "rb") as file:
            return file.read(RULES_MAX)
    except OSError:
        return None


def repo_on_disk(folder: bytes, outer: Scope, files: RuleFiles | None) -> RepoRules | None:
    """The repository rules a folder on disk starts (its `.git/info/exclude`, and the
    user's), or None when it is no repository's root: it holds no `.git` and is not the
    root of what is read (`outer` above any repository)."""
    git = os.path.join(folder, GIT_DIR)
    if outer.base is not None and not os.path.lexists(git):
        return None
    text = _read_rule_file(os.path.join(git, *EXCLUDE_PATH), follow=True)
    user = files.user() if files is not None else None
    return RepoRules(compile_rules(text) if text else None, user)


def rules_on_disk(folder: bytes) -> Rules | None:
    """The rules of a folder on disk (an import's): its rule files that are regular
    files (git does not follow a symlinked .gitignore) and not over RULES_MAX."""
    texts = [_read_rule_file(os.path.join(folder, name)) for name in RULE_FILES]
    return compile_rules(*(text for text in texts if text is not None))


__all__ = [
    "EVERYTHING",
    "EXCLUDE_PATH",
    "GIT_DIR",
    "NO_RULES",
    "RULES_MAX",
    "RULE_FILES",
    "RepoRules",
    "RuleFiles",
    "Rules",
    "Scope",
    "compile_rules",
    "parse",
    "repo_on_disk",
    "rules_on_disk",
    "translate",
    "user_excludes",
    "user_excludes_path",
]
