"""Gate and extract: from free text to typed candidate facts, locally and deterministically.

The gate is a cheap score over surface cues (declarative verbs, identifiers, cue words
versus questions and chit-chat): a slice that scores below GATE_THRESHOLD is dropped
before it costs an embedding. The extractor types each surviving slice and pulls out a
(subject, value) slot when the sentence has one ("the database is Postgres" ->
database / postgres), which is what lets consolidation recognise a contradiction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from helixfs.memory.tokens import normalize

GATE_THRESHOLD = 0.4
INJECTION_TAG = "suspected-injection"
INJECTION_CONFIDENCE = 0.1

_DECLARATIVE = re.compile(
    r"(?i)\b(is|are|was|uses?|must|should|always|never|prefers?|decided|chose|because|"
    r"don't|do not|avoid|requires?|defaults? to|runs? on|lives? in|located|means|"
    r"instead of|works|breaks|fails|needs?|lives|listens|happens?|stores?|handles?|returns?|"
    r"contains?|calls?|has|have|takes?|expects?|points to|belongs)\b"
)
_TECHNICAL = re.compile(
    r"`[^`]+`|\b\d{2,}\b|\b\w+[_./]\w+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|--\w"
)
_CUE = re.compile(
    r"(?i)\b(remember|note|important|gotcha|convention|decision|decided|todo|fixme|beware|"
    r"warning|careful|always|never|rule|policy|prefer)\b"
)
_CHATTER = re.compile(
    r"(?i)^\s*(thanks|thank you|ok(ay)?|sure|great|cool|hello|hi|hey|sounds good|got it|"
    r"let me|let's|i'll|i will|i'm going to|now i|checking|looking at|running|done\.?$|"
    r"anyway|gotta|bye|talk soon|speak (soon|later)|take care|good night|see you|"
    r"(all |pretty |so )?good[,!.]|not bad|oh (no|wow|hey)|wow|aww|haha|lol|omg|yay|"
    r"congrat|of course|i'm so (proud|happy|glad|sorry)|that's (so |really )?(great|"
    r"sweet|amazing|awesome|lovely|kind))"
)

_TYPE_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("snippet", re.compile(r"```|^\s*(\$ |>>> )")),
    ("identity", re.compile(r"(?i)\b(my name is|i am a|i'm a|the user is|user's name|call me)\b")),
    (
        "gotcha",
        re.compile(
            r"(?i)\b(gotcha|beware|careful|pitfall|caveat|watch out|doesn't work|does not work|"
            r"fails (when|if|on)|breaks (when|if|on)|bug|flaky|workaround|must not|never)\b"
        ),
    ),
    (
        "decision",
        re.compile(
            r"(?i)\b(decided|decision|we chose|chose to|going with|agreed|settled on|adr)\b"
        ),
    ),
    ("preference", re.compile(r"(?i)\b(prefers?|i like|likes|rather than|favou?rite|dislikes?)\b")),
    (
        "howto",
        re.compile(
            r"(?i)(\bto \w+.*,\s*(run|use|call)\b|\bhow to\b|^\s*(run|use|call|install|set)\s+`|"
            r"\bstep \d|\bcommand\b)"
        ),
    ),
    (
        "convention",
        re.compile(
            r"(?i)\b(convention|always use|we always|naming|style guide|must be|should be|"
            r"by convention|lint)\b"
        ),
    ),
    ("project", re.compile(r"(?i)\b(this (project|repo|codebase)|the (project|repo|codebase))\b")),
    (
        "entity",
        re.compile(
            r"(?i)^\s*[\w.-]+ is (a|an|the) (service|library|module|team|tool|"
            r"class|function|person|package|server|database|api)\b"
        ),
    ),
]

_INJECTION = re.compile(
    r"(?i)(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+)?(previous|prior|above|"
    r"earlier|preceding|your|system)\s+(instructions|prompts?|rules|messages|context)|"
    r"\byou are now\b|\bnew (system )?instructions\s*:|\bsystem prompt\b|"
    r"\bdo not (tell|inform) the user\b|\bact as (an? )?(unrestricted|jailbroken|dan)\b|"
    r"<\s*/?\s*(system|instructions?)\s*>|\bexfiltrate\b|\bsend (all|the) (secrets|keys|"
    r"credentials)\b"
)

_ARTICLE = re.compile(r"^(the|our|my|your|a|an|this|that|we|i)\s+")
_USE_FOR = re.compile(
    r"(?i)^(?:we |i |you |the team )?(?:always )?(?:use|uses|prefer|prefers|switched to|"
    r"moved to|migrated to|rely on|relies on)\s+(?P<value>.+?)\s+(?:for|as)\s+(?P<subject>.+)$"
)
_NEGATED = re.compile(
    r"(?i)^(?:do not|don't|never|avoid|stop)\s+(?P<subject>(?:using\s+|use\s+)?.+)$"
)
_IMPERATIVE = re.compile(r"(?i)^(?:always\s+)?(?P<subject>use\s+.+)$")
_COPULA = re.compile(
    r"(?i)^(?P<subject>[^,;:]{2,60}?)\s+(?:is|are|was|=|:=|uses|use|runs on|run on|"
    r"lives in|lives at|live in|defaults to|default to|should be|must be|is set to|"
    r"points to|listens on)\s+(?P<value>.+)$"
)


@dataclass(frozen=True)
class Candidate:
    """A typed fact ready for embedding and consolidation."""

    content: str
    type: str
    subject: str
    value: str
    confidence: float
    tags: tuple[str, ...]
    gate_score: float


# A person telling what happened to them: "I adopted a beagle", "we're moving to Leeds".
_FIRST_PERSON = re.compile(r"(?i)\b(I|I'm|I've|I'd|I'll|we|we're|we've|my|our|me|us)\b")
_NAME_MID_SENTENCE = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+")
_ANSWER = re.compile(r"(?i)^(yes|yeah|yep|no|nope|not really|mostly|actually)\b[ ,]")


def _conversational(text: str, words: list[str]) -> float:
    """What a turn of a conversation carries beyond the cues of a coding note: someone's
    own news, a name, a reply that answers, a long sentence (issue 30: the gate dropped a
    third of the turns that later answered a question)."""
    score = 0.0
    if len(words) >= 5 and _FIRST_PERSON.search(text):
        score += 0.3
    if _NAME_MID_SENTENCE.search(text):
        score += 0.2
    if len(words) >= 6 and _ANSWER.match(text):
        score += 0.3
    if len(words) >= 10:
        score += 0.25
    return score


def gate_score(text: str) -> float:
    """0..1: how likely this slice holds a durable fact."""
    text = without_speaker(text)[1]
    words = text.split()
    score = _conversational(text, words)
    if _DECLARATIVE.search(text):
        score += 0.35
    if _TECHNICAL.search(text):
        score += 0.2
    if _CUE.search(text):
        score += 0.25
    if 4 <= len(words) <= 80:
        score += 0.15
    if text.startswith("```") and re.search(r"(?m)^\s*\$ \S", text):
        score += 0.25  # a fenced block of shell commands is a recipe worth keeping
    if text.rstrip().endswith("?"):
        # "I'm organising a book swap, could you help spread the word?" is news
        score -= 0.2 if len(words) >= 8 and _FIRST_PERSON.search(text) else 0.5
    if _CHATTER.search(text):
        score -= 0.6
    if len(words) < 4:
        score -= 0.3
    return max(0.0, min(1.0, score))


def classify(text: str) -> str:
    for type_name, pattern in _TYPE_RULES:
        if pattern.search(text):
            return type_name
    return "fact"


def is_injection(text: str) -> bool:
    return _INJECTION.search(text) is not None


def _clean_slot(text: str) -> str:
    slot = normalize(text)
    while True:
        stripped = _ARTICLE.sub("", slot)
        if stripped == slot:
            return slot
        slot = stripped


def slot_of(text: str) -> tuple[str, str]:
    """(subject, value) of a one-fact sentence, or ('', '') when it has no clear slot."""
    sentence = text.strip().rstrip(".!").strip()
    if "\n" in sentence or len(sentence) > 300:
        return "", ""
    match = _USE_FOR.match(sentence)
    if match:
        return _clean_slot(match.group("subject")), _clean_slot(match.group("value"))
    for pattern, polarity in ((_NEGATED, "no"), (_IMPERATIVE, "yes")):
        match = pattern.match(sentence)
        if match:
            subject = _clean_slot(match.group("subject"))
            if subject.startswith("using "):
                subject = "use " + subject.removeprefix("using ")
            return subject, polarity
    match = _COPULA.match(sentence)
    if match:
        subject = _clean_slot(match.group("subject"))
        if 0 < len(subject.split()) <= 6:
            return subject, _clean_slot(match.group("value"))
    return "", ""


def candidate(text: str, *, type_hint: str | None = None, explicit: bool = True) -> Candidate:
    """Type and slot one slice; injection-looking text gets low confidence and a tag."""
    text = text.strip()
    score = 1.0 if explicit else gate_score(text)
    subject, value = slot_of(text)
    tags: tuple[str, ...] = ()
    confidence = 1.0 if explicit else 0.8
    if is_injection(text):
        tags = (INJECTION_TAG,)
        confidence = INJECTION_CONFIDENCE
    return Candidate(
        content=text,
        type=type_hint or classify(text),
        subject=subject,
        value=value,
        confidence=confidence,
        tags=tags,
        gate_score=score,
    )


_SENTENCE_END = re.compile(  # not after "Mrs." / "Dr.": a name goes on
    r"(?<=[.!?])(?<!\bMrs\.)(?<!\bMr\.)(?<!\bDr\.)(?<!\bMs\.)\s+(?=[A-Z`\"'(])"
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


# "Caroline: ...", "[2023-05-04 19:00] Nate: ...": who speaks, kept on every sentence.
_SPEAKER = re.compile(
    r"^(?P<head>(?:\[[^\]\n]{1,40}\]\s*)?[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+(?=\S)"
)
_NOT_A_SPEAKER = frozenset(
    str.split(
        "note gotcha todo fixme warning decision important beware tip rule caveat update "
        "fix bug error usage example step summary answer question reason context"
    )
)


def without_speaker(text: str) -> tuple[str, str]:
    """(speaker header with its ': ', the rest) of a transcript line; ('', text) if none."""
    match = _SPEAKER.match(text)
    if match is None or match.group("head").split()[-1].lower() in _NOT_A_SPEAKER:
        return "", text
    return match.group(0), text[match.end() :]


def slices(text: str) -> Iterator[str]:
    """Split free text into candidate slices: lines, then sentences; code fences whole.
    A line's speaker ("Nate: ") heads each of its sentences: who said it stays known."""
    in_fence: list[str] | None = None
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if in_fence is None:
                in_fence = [line]
            else:
                in_fence.append(line)
                yield "\n".join(in_fence)
                in_fence = None
            continue
        if in_fence is not None:
            in_fence.append(line)
            continue
        head, line = without_speaker(_BULLET.sub("", line).strip())
        if line:
            yield from (head + s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    if in_fence:
        yield "\n".join(in_fence)


def extract(text: str) -> list[Candidate]:
    """Gated candidates from non-explicit text (a transcript, a note, a commit message)."""
    found = []
    for piece in slices(text):
        cand = candidate(piece, explicit=False)
        if cand.gate_score >= GATE_THRESHOLD:
            found.append(cand)
    return found
