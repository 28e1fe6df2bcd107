"""Long multi-session conversations between two people, made deterministically.

The conversational long-memory evaluation (issue 30): each conversation is two friends
talking over months, in dated sessions of a dozen to forty turns. Their lives run as
storylines (a puppy adopted then trained, a marathon trained for then run, a move, a new
job...), told in beats spread over the sessions, between greetings, small talk and
chatter about the weather, food and shows. Questions about the storylines come in four
kinds, each with the turns that hold its answer (the evidence):

- single-hop: one turn answers it, in other words than the question's;
- multi-hop: it takes two or three turns of different sessions;
- temporal: when something happened (the session's date answers), or what happened in
  a month the question names ("How did Jon's race go in July 2023?": the month is in no
  turn's text, only in its session's date);
- open-domain: an inference from what was said (would she enjoy...?), with the turns
  it rests on.

Turns are marked small talk (greetings, replies to them, reactions, goodbyes, the
friend's questions back) or not (storyline beats and chatter about daily life, which no
question asks about but which a gate has no reason to drop).

Nothing here is taken from a public benchmark: the storylines are written for this set
and rendered by `build(seed)`, so every run sees the same conversations. Texts are
chosen by a seeded random generator from the banks below.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from storylines import (
    CHATTER,
    CLOSINGS,
    GREETINGS,
    PEOPLE,
    REACTIONS,
    REPLIES,
    STORYLINES,
    Storyline,
)

KINDS = ("single-hop", "multi-hop", "temporal", "open-domain")


@dataclass(frozen=True)
class Turn:
    key: str  # "c1-s03-t07": conversation, session, turn
    session: int
    speaker: str
    text: str
    when: float  # unix seconds of the session (turns a minute apart)
    small_talk: bool  # greetings, reactions, chatter: what a gate may drop


@dataclass(frozen=True)
class Question:
    id: str
    conversation: str
    kind: str
    text: str
    evidence: tuple[str, ...]  # Turn keys


@dataclass
class Conversation:
    id: str
    people: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    session_dates: list[dt.date] = field(default_factory=list)


START = dt.date(2023, 3, 4)
SESSIONS = 28


def _render(text: str, values: dict[str, str]) -> str:
    return text.format(**values)


def build(seed: int = 30) -> list[Conversation]:
    """Every conversation of the set, the same for the same seed."""
    rng = random.Random(seed)
    return [_conversation(rng, index, people) for index, people in enumerate(PEOPLE, 1)]


def _conversation(rng: random.Random, index: int, people: tuple[str, str]) -> Conversation:
    conv = Conversation(f"c{index}", people)
    day = START + dt.timedelta(days=rng.randrange(0, 30))
    for _ in range(SESSIONS):
        conv.session_dates.append(day)
        day += dt.timedelta(days=rng.randrange(6, 19))
    plans = _plan_storylines(rng, people)
    beats_by_session: dict[int, list[tuple[str, str, str, str, dict[str, str]]]] = {}
    for owner, line, start, values in plans:
        for offset, who, text, label in line.beats:
            session = start + offset
            if session >= SESSIONS:
                continue
            speaker = owner if who == "me" else _other(people, owner)
            beats_by_session.setdefault(session, []).append(
                (speaker, _render(text, values), f"{line.name}:{owner}:{label}", who, values)
            )
    labels: dict[str, str] = {}
    for session in range(SESSIONS):
        _session(conv, rng, session, beats_by_session.get(session, []), labels)
    for owner, line, _, values in plans:
        for number, (kind, text, wanted) in enumerate(line.questions):
            keys = tuple(labels.get(f"{line.name}:{owner}:{w}", "") for w in wanted)
            if all(keys):
                for w, key in zip(wanted, keys, strict=True):
                    text = text.replace(f"{{month:{w}}}", _month_of(conv, key))
                conv.questions.append(
                    Question(
                        f"{conv.id}-{line.name}-{owner.lower()}-{number}",
                        conv.id,
                        kind,
                        _render(text, values),
                        keys,
                    )
                )
    return conv


def _month_of(conv: Conversation, key: str) -> str:
    """'July 2023': the month of the session a turn was said in."""
    return conv.session_dates[int(key.split("-s")[1][:2])].strftime("%B %Y")


def _plan_storylines(
    rng: random.Random, people: tuple[str, str]
) -> list[tuple[str, Storyline, int, dict[str, str]]]:
    """Four storylines each, none twice for one person, starting over the first half."""
    plans = []
    for owner in people:
        for line in rng.sample(STORYLINES, 4):
            values = dict(rng.choice(line.params))
            values |= {"me": owner, "you": _other(people, owner)}
            plans.append((owner, line, rng.randrange(0, SESSIONS - 6), values))
    return plans


def _other(people: tuple[str, str], one: str) -> str:
    return people[1] if people[0] == one else people[0]


def _session(
    conv: Conversation,
    rng: random.Random,
    session: int,
    beats: list[tuple[str, str, str, str, dict[str, str]]],
    labels: dict[str, str],
) -> None:
    a, b = conv.people if session % 2 == 0 else conv.people[::-1]
    date = conv.session_dates[session]
    base = dt.datetime(date.year, date.month, date.day, 19, tzinfo=dt.UTC).timestamp()
    lines: list[tuple[str, str, bool, str]] = [
        (a, rng.choice(GREETINGS).format(you=b), True, ""),
        (b, rng.choice(REPLIES).format(you=a), True, ""),
    ]
    for chat in rng.sample(CHATTER, rng.randrange(1, 4)):
        speaker = rng.choice((a, b))
        lines.append((speaker, chat, False, ""))  # content, though no question asks
        lines.append((_other(conv.people, speaker), rng.choice(REACTIONS), True, ""))
    for speaker, text, label, who, _ in beats:
        small = label.endswith(":")  # reactions carry no label
        lines.append((speaker, text, small and who == "you", "" if small else label))
        if not small and rng.random() < 0.3:
            lines.append((_other(conv.people, speaker), rng.choice(REACTIONS), True, ""))
    lines.append((a, rng.choice(CLOSINGS), True, ""))
    lines.append((b, rng.choice(CLOSINGS), True, ""))
    for number, (speaker, text, small, label) in enumerate(lines):
        key = f"{conv.id}-s{session:02d}-t{number:02d}"
        conv.turns.append(Turn(key, session, speaker, text, base + 60.0 * number, small))
        if label:
            labels[label] = key
