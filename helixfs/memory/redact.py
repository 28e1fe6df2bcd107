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

# (kind, pattern, group to replace: 0 = whole match)
_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        0,
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"), 0),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})"),
        0,
    ),  # noqa: E501
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), 0),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("google-oauth", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}"), 0),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("pypi-token", re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}"), 0),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), 0),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), 0),
    ("twilio-key", re.compile(r"\bSK[0-9a-fA-F]{32}\b"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    (
        "url-credentials",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:([^\s@/]+)@"),
        1,
    ),
    (
        "bearer",
        re.compile(r"(?i)\b(?:bearer|token|basic)\s+([A-Za-z0-9_\-.=+/]{16,})"),
        1,
    ),
    (
        "assignment",  # PASSWORD=..., api_key: "...", "client_secret": "..."
        re.compile(
            rf"(?i)[\"']?\b{_SECRET_NAME}\b[\"']?\s*(?:=|:|=>)\s*"
            r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)"
        ),
        1,
    ),
    (
        "password-phrase",  # "the password is hunter2", "passphrase: ..."
        re.compile(r"(?i)\b(?:password|passphrase|passwd|pin code)\s+(?:is|was|=)\s+(\S+)"),
        1,
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

    for kind, pattern, group in _PATTERNS:
        text = pattern.sub(replacer(kind, group), text)

    def entropy_sub(match: re.Match[str]) -> str:
        if _looks_random(match.group(0)):
            kinds.append("high-entropy")
            return "[REDACTED:high-entropy]"
        return match.group(0)

    text = _CANDIDATE.sub(entropy_sub, text)
    return Redacted(text=text, count=len(kinds), kinds=tuple(kinds))
