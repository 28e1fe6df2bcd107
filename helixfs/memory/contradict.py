"""Does a new sentence state the same thing as an old one with another value?

"stores tokens as user:hex, 16 random bytes" -> "... 32 random bytes" is 0.99 cosine-
similar and shares every word but one: similarity alone calls it the same fact and
drops the new value (issue 30). What changed decides: a number, a version, a date, a
name or a negation that differs between two sentences that otherwise line up is a
contradiction, never a confirmation. Deterministic, local, no model.

What is not a contradiction, although it lines up as well:
- two events ("I went to the park last Saturday" / "... to the beach last Sunday"):
  both happened; a past-tense event is only corrected by an explicit cue ("actually").
- a question ("Where did you find it?"): it asserts nothing.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from helixfs.memory.extract import without_speaker
from helixfs.memory.tokens import STOPWORDS

_WORD = re.compile(r"[A-Za-z0-9]+(?:[._:/-][A-Za-z0-9]+)*(?:'[a-z]+)?")
_NEGATION = re.compile(r"(?i)\b(?:not|never|no longer|cannot|no)\b|n't\b|\bnor\b|\bwithout\b")
_MONTHS_DAYS = frozenset(
    str.split(
        "january february march april may june july august september october november december "
        "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
        "friday saturday sunday"
    )
)
_NEGATORS = frozenset({"not", "never", "cannot", "no", "nor", "without", "longer"})
# Past-tense events: "went", "visited", "found" ... with a time of their own.
_PAST_EVENT = re.compile(
    r"(?i)\b(yesterday|last (?:week|month|year|night|weekend|summer|winter|spring|fall|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|ago|went|visited|found|"
    r"bought|met|saw|made|took|got|adopted|finished|started|began|baked|painted|read|"
    r"wrote|ran|travell?ed|moved into|celebrated|attended|joined|won|lost|tried)\b"
)
_CORRECTION = re.compile(
    r"(?i)\b(actually|correction|i meant|to be precise|in fact|turns out|not .+ but)\b"
)
# Words an update adds or drops without changing what the sentence is about.
_UPDATE_WORDS = frozenset(
    str.split("now currently actually today anymore instead still already again newly")
)
# Verbs that say a value changed: "quarry runs dbt 1.5" -> "quarry upgraded to dbt 1.7"
# (the old sentence's one verb gives way to one of these).
_UPDATE_VERBS = frozenset(
    str.split(
        "upgraded downgraded moved switched migrated changed bumped raised lowered "
        "increased reduced updated"
    )
)


@dataclass(frozen=True)
class _Sentence:
    words: tuple[str, ...]  # content tokens, lowercase, negators left out
    values: frozenset[str]  # of them, those that carry a value (number, name, date...)
    negated: bool
    question: bool
    event: bool


@functools.lru_cache(maxsize=256)
def _parse(turn: str) -> _Sentence:
    text = without_speaker(turn)[1]  # "Jon: Went ...": "Went" starts the sentence
    words: list[str] = []
    values: set[str] = set()
    end = -1
    for match in _WORD.finditer(text):
        raw = match.group(0)
        word = raw.lower().split("'")[0]
        sentence_start = end < 0 or any(c in ".!?" for c in text[end : match.start()])
        end = match.end()
        if word in STOPWORDS or word in _NEGATORS or raw.lower().endswith("n't"):
            continue  # "aren't" is its negation, counted apart
        if len(word) < 2 and not word.isdigit():
            continue
        words.append(word)
        if _is_value(raw, word, sentence_start):
            values.add(word)
    stripped = text.strip()
    return _Sentence(
        tuple(words),
        frozenset(values),
        _NEGATION.search(text) is not None,
        stripped.endswith("?"),
        _PAST_EVENT.search(text) is not None,
    )


def _is_value(raw: str, word: str, sentence_start: bool) -> bool:
    """A token that states a value: a digit in it (counts, versions, dates, times), a
    month or weekday, an identifier (user:hex, v2), or a capitalised name mid-sentence."""
    if any(c.isdigit() for c in word) or word in _MONTHS_DAYS:
        return True
    if any(c in raw for c in "._:/-") and len(raw) > 2:
        return True
    return raw[0].isupper() and not sentence_start


def contradicts(old: str, new: str) -> str:
    """Why `new` states `old` with a different value ('' when it does not).

    The same statement: every word that carries no value lines up (but for a few update
    words such as "now"); what differs is values or a negation. "Thanks, Joanna! That
    sounds great" / "Thanks, Nate! That sounds amazing" changes a plain word too: two
    turns, not one fact restated."""
    if old == new:
        return ""
    a, b = _parse(old), _parse(new)
    if b.question or not a.words or not b.words:
        return ""
    if both_events(old, new):
        return ""
    matcher = SequenceMatcher(None, a.words, b.words, autojunk=False)
    aligned = sum(block.size for block in matcher.get_matching_blocks())
    if aligned < min(2, len(a.words), len(b.words)):
        return ""
    changed_values: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        gone, came = a.words[i1:i2], b.words[j1:j2]
        if not _only_update_words(
            [w for w in gone if w not in a.values], [w for w in came if w not in b.values]
        ):
            return ""
        if op == "replace" and (set(gone) & a.values or set(came) & b.values):
            changed_values.append(f"{' '.join(gone)} -> {' '.join(came)}")
    if a.negated != b.negated:
        return "negation changed"
    if len(changed_values) == 1 and not _names_the_subject(matcher):
        return f"new value ({changed_values[0]})"
    return ""


def _only_update_words(gone: list[str], came: list[str]) -> bool:
    """The plain words a change drops and adds say no more than "it changed"."""
    if all(w in _UPDATE_WORDS for w in gone + came):
        return True
    verbs = [w for w in came if w in _UPDATE_VERBS]
    others = [w for w in came if w not in _UPDATE_VERBS and w not in _UPDATE_WORDS]
    return len(verbs) == 1 and not others and len(gone) <= 1


def _names_the_subject(matcher: SequenceMatcher[str]) -> bool:
    """Two values changed at once ("service 3 ... team_3 ... chart 3" / "service 4 ...
    team_4 ... chart 4"), or the first word changed ("Jon's race" / "Gina's race"):
    another thing of the same kind, not a new value of one."""
    replaced = [i1 for op, i1, *_ in matcher.get_opcodes() if op == "replace"]
    return bool(replaced) and replaced[0] == 0


def both_events(old: str, new: str) -> bool:
    """Two past-tense events, the new one not said to correct the old: both happened."""
    return _parse(old).event and _parse(new).event and _CORRECTION.search(new) is None


def values_differ(old: str, new: str) -> bool:
    """Do the two sentences state different values (or one negates)? Then neither is a
    confirmation of the other, even when both hold (two runs on two days)."""
    a, b = _parse(old), _parse(new)
    return a.values != b.values or a.negated != b.negated


def negation_differs(old: str, new: str) -> bool:
    return _parse(old).negated != _parse(new).negated
