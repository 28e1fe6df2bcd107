"""Scrub secrets before anything is stored, indexed or embedded.

Two nets: patterns for secrets with a known shape (cloud keys, tokens, private keys,
credentials in URLs, `password = ...`, `.env` lines whose name says secret), and an
entropy test for long random-looking strings the patterns do not know. Hex digests
(commit ids, BLAKE3 ids) are common and harmless in an agent's notes, so the entropy
net needs mixed character classes and more than hex's 4 bits per character.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|API_?KEY|APIKEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH|SIGNING_?KEY|CLIENT_?SECRET|DSN|CONN(?:ECTION)?_?STRING)[A-Za-z0-9_.-]*"  # noqa: E501
# What every secret name contains, lower-cased (the cues of the `assignment` pattern).
_SECRET_WORDS = (
    "secret",
    "token",
    "pass",
    "pwd",
    "apikey",
    "api_key",
    "accesskey",
    "access_key",
    "privatekey",
    "private_key",
    "credential",
    "auth",
    "signingkey",
    "signing_key",
    "dsn",
    "conn",
)


class _Lazy:
    """A regex compiled at its first use. A pattern runs only when one of its cues is in
    the text, so most never run in a short process (a hook): compiling all 21 at import
    took ~5 ms of its start."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled


@dataclass(frozen=True)
class _Pattern:
    """A secret's shape. `group`: what to replace (0 = the whole match). `cues`: strings
    every match contains (in the lower-cased text if `caseless`), checked before the
    regex: most texts hold none, and a substring test costs a fraction of a scan (a
    code chunk went through all the regexes in 280 us)."""

    kind: str
    regex: _Lazy
    cues: tuple[str, ...]
    group: int = 0
    caseless: bool = False


_PATTERNS: list[_Pattern] = [
    _Pattern(
        "private-key",
        _Lazy(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        ("-----BEGIN ",),
    ),
    _Pattern(
        "aws-access-key",
        _Lazy(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"),
    ),
    _Pattern(
        "github-token",
        _Lazy(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _Pattern("gitlab-token", _Lazy(r"\bglpat-[A-Za-z0-9_-]{20,}"), ("glpat-",)),
    _Pattern("slack-token", _Lazy(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), ("xox",)),
    _Pattern(
        "slack-webhook",
        _Lazy(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
        ("https://hooks.slack.com/services/",),
    ),
    _Pattern(
        "stripe-key",
        _Lazy(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("_live_", "_test_"),
    ),
    _Pattern("anthropic-key", _Lazy(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
    _Pattern("openai-key", _Lazy(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), ("sk-",)),
    _Pattern("google-api-key", _Lazy(r"\bAIza[0-9A-Za-z_-]{35}"), ("AIza",)),
    _Pattern("google-oauth", _Lazy(r"\bya29\.[0-9A-Za-z_-]{20,}"), ("ya29.",)),
    _Pattern("npm-token", _Lazy(r"\bnpm_[A-Za-z0-9]{36}\b"), ("npm_",)),
    _Pattern("pypi-token", _Lazy(r"\bpypi-[A-Za-z0-9_-]{50,}"), ("pypi-",)),
    _Pattern("huggingface-token", _Lazy(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    _Pattern("sendgrid-key", _Lazy(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), ("SG.",)),
    _Pattern("twilio-key", _Lazy(r"\bSK[0-9a-fA-F]{32}\b"), ("SK",)),
    _Pattern(
        "jwt",
        _Lazy(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("eyJ",),
    ),
    _Pattern(
        "url-credentials",
        _Lazy(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:([^\s@/]+)@"),
        ("://",),
        group=1,
    ),
    _Pattern(
        "bearer",
        _Lazy(r"(?i)\b(?:bearer|token|basic)\s+([A-Za-z0-9_\-.=+/]{16,})"),
        ("bearer", "token", "basic"),
        group=1,
        caseless=True,
    ),
    _Pattern(
        "assignment",  # PASSWORD=..., api_key: "...", "client_secret": "..."
        _Lazy(
            rf"(?i)[\"']?\b{_SECRET_NAME}\b[\"']?\s*(?:=|:|=>)\s*"
            r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)"
        ),
        _SECRET_WORDS,
        group=1,
        caseless=True,
    ),
    _Pattern(
        "password-phrase",  # "the password is hunter2", "passphrase: ..."
        _Lazy(r"(?i)\b(?:password|passphrase|passwd|pin code)\s+(?:is|was|=)\s+(\S+)"),
        ("pass", "pin code"),
        group=1,
        caseless=True,
    ),
]

_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-=.]{20,}")
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z-]+\]")


@dataclass(frozen=True)
class Redacted:
    text: str
    count: int
    kinds: tuple[str, ...]


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    total = len(text)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def _looks_random(token: str) -> bool:
    stripped = token.strip("=.-_/")
    if len(stripped) < 20 or _PLACEHOLDER.fullmatch(token):
        return False
    classes = sum(
        (
            any(c.islower() for c in stripped),
            any(c.isupper() for c in stripped),
            any(c.isdigit() for c in stripped),
        )
    )
    if classes < 2 or ("/" in stripped and stripped.count("/") > 2):
        return False  # words-with-dashes and file paths are not secrets
    threshold = 4.3 if classes == 3 else 4.6
    return shannon_entropy(stripped) >= threshold and len(set(stripped)) >= 12


def redact(text: str) -> Redacted:
    """Replace every secret in `text` by `[REDACTED:kind]`."""
    kinds: list[str] = []

    def replacer(kind: str, group: int) -> Callable[[re.Match[str]], str]:
        def sub(match: re.Match[str]) -> str:
            value = match.group(group)
            if not value or _PLACEHOLDER.fullmatch(value.strip("\"'")):
                return match.group(0)
            kinds.append(kind)
            whole = match.group(0)
            start = match.start(group) - match.start(0)
            end = match.end(group) - match.start(0)
            return whole[:start] + f"[REDACTED:{kind}]" + whole[end:]

        return sub

    # The cues are exact for ASCII; with other characters (re's case folding knows the
    # Kelvin sign is a k) every regex runs.
    cued = text.isascii()
    lower = text.lower()
    for shape in _PATTERNS:
        if cued and not any(cue in (lower if shape.caseless else text) for cue in shape.cues):
            continue  # no match can be here
        redacted = shape.regex.compiled().sub(replacer(shape.kind, shape.group), text)
        if redacted != text:
            text, lower = redacted, redacted.lower()

    def entropy_sub(match: re.Match[str]) -> str:
        if _looks_random(match.group(0)):
            kinds.append("high-entropy")
            return "[REDACTED:high-entropy]"
        return match.group(0)

    text = _CANDIDATE.sub(entropy_sub, text)
    return Redacted(text=text, count=len(kinds), kinds=tuple(kinds))
