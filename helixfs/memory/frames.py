"""Is a new sentence the same statement as an old one with a different value?

"harbor pauses 60 seconds between canary steps" -> "harbor pauses 120 seconds between
canary steps (step_pause)": most words line up, one span was replaced. That is a
contradiction (SUPERSEDE), where a pure insertion is a refinement (UPDATE). Update cues
("moved", "now", "upgraded"...) lower the bar, and a value the new sentence retires
("from X to Y", "X was dropped", "no longer X", "instead of X") names the old memory
outright. Deterministic, local, no model: it works the same in lexical-only mode.
"""

from __future__ import annotations

import functools
import re
from difflib import SequenceMatcher

from helixfs.memory import contradict
from helixfs.memory.tokens import STOPWORDS

ALIGNED = 0.7  # share of the shorter sentence that must line up, without a cue
ALIGNED_WITH_CUE = 0.5
_TOKEN = re.compile(r"[a-z0-9]+(?:[._:/x-][a-z0-9]+)*")
_CUE = re.compile(
    r"\b(now|no longer|moved|switched|migrated|replaced|upgraded|downgraded|changed|"
    r"raised|lowered|reduced|increased|dropped|retired|decommissioned|deleted|removed|"
    r"cancelled|canceled|deprecated|instead|passed to|renamed|anymore)\b"
)
_SPAN = r"((?:[^,;.]|\.(?=\w)){2,40}?)"  # a phrase; dots only inside tokens (3.11)
_VAGUE = frozenset({"used", "use", "supported", "support", "needed", "true", "there"})
_RETIRED = [
    re.compile(r"\bfrom (?:the |a |an )?" + _SPAN + r" to\b"),
    re.compile(r"\breplaced " + _SPAN + r" with\b"),
    re.compile(r"\binstead of " + _SPAN + r"(?:$|[,;.])"),
    re.compile(r"\b(?:no longer|not) (?:uses? |using )?" + _SPAN + r"(?:$|[,;.])"),
    re.compile(
        _SPAN + r" (?:was|were|is|are|has been|have been) (?:dropped|retired|"
        r"decommissioned|deleted|removed|cancell?ed|deprecated|replaced|no longer used)"
    ),
]


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@functools.lru_cache(maxsize=64)
def retired_terms(text: str) -> tuple[tuple[str, ...], ...]:
    """Values the sentence says are gone, as token phrases ('github actions', '1.4').

    Cached: a write asks it of the same new sentence once per neighbour."""
    found = []
    lowered = text.lower()
    for pattern in _RETIRED:
        for match in pattern.finditer(lowered):
            words = [t for t in content_tokens(match.group(1)) if t not in _VAGUE]
            if 0 < len(words) <= 3:
                found.append(tuple(words))
    return tuple(found)


def _names(term: tuple[str, ...], old_tokens: list[str]) -> bool:
    """Does the old sentence mention the retired value? All its words, or its head when
    the head is distinctive enough alone ('influxdb' of 'influxdb cluster', '3.11')."""
    if set(term) <= set(old_tokens):
        return True
    head = term[0]
    return head in old_tokens and (len(head) >= 6 or any(c.isdigit() for c in head))


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]


def replaces(old: str, new: str) -> bool:
    if new.rstrip().endswith("?") or contradict.both_events(old, new):
        return False  # a question asserts no new value; two events both happened
    old_tokens, new_tokens = content_tokens(old), content_tokens(new)
    if not old_tokens or not new_tokens or len(old_tokens) > 2 * len(new_tokens) + 3:
        return False  # an overview is not replaced by one detail about it
    shared = set(old_tokens) & set(new_tokens)
    for term in retired_terms(new):
        if _names(term, old_tokens) and shared - set(term):
            return True
    matcher = SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    aligned = sum(block.size for block in matcher.get_matching_blocks())
    cue = _CUE.search(new.lower()) is not None
    threshold = ALIGNED_WITH_CUE if cue else ALIGNED
    shortest = min(len(old_tokens), len(new_tokens))
    if aligned < threshold * shortest or aligned < 2 or (cue and aligned < 3 and shortest > 3):
        return False
    old_values = {t for t in old_tokens if any(c.isdigit() for c in t)}
    if old_values and old_values <= set(new_tokens):
        return False  # every number of the old sentence still holds: a rewording
    ops = {op for op, *_ in matcher.get_opcodes()}
    return "replace" in ops or {"delete", "insert"} <= ops
