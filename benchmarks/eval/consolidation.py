"""Pairs of writes with the consolidation outcome they must have (issue 30).

Each pair is (old, new, expected): `old` is remembered first, then `new`, in one scope.

- "supersede": the same statement with a new value (a number, a name, a version, a date,
  a negation): the old memory is retired. A NOOP here drops the new value.
- "keep": a paraphrase or a compatible detail: the old memory stays active (noop, update
  or add all keep it: nothing the user said is lost).
- "add": related-looking but different facts, conversation turns among them: both are
  kept side by side, neither touches the other.

Used by tests/memory/test_consolidation.py and benchmarks/bench_memory.py (accuracy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from helixfs.memory import Memory

SUPERSEDE = "supersede"
KEEP = "keep"
ADD = "add"

PAIRS: tuple[tuple[str, str, str], ...] = (
    # -- the same statement, a new value: numbers --------------------------------------
    (
        "The token service stores tokens as user:hex, 16 random bytes.",
        "The token service stores tokens as user:hex, 32 random bytes.",
        SUPERSEDE,
    ),
    ("The dev server runs on port 8080.", "The dev server runs on port 3000.", SUPERSEDE),
    (
        "Session cookies expire after 30 minutes.",
        "Session cookies expire after 45 minutes.",
        SUPERSEDE,
    ),
    ("The upload limit is 10 MB per file.", "The upload limit is 25 MB per file.", SUPERSEDE),
    ("The worker pool has 4 threads.", "The worker pool has 8 threads.", SUPERSEDE),
    ("Retries back off starting at 200 ms.", "Retries back off starting at 500 ms.", SUPERSEDE),
    ("The cache keeps entries for 24 hours.", "The cache keeps entries for 12 hours.", SUPERSEDE),
    ("I run 5 km every morning before work.", "I run 10 km every morning before work.", SUPERSEDE),
    (
        "The nightly backup starts at 02:00 UTC.",
        "The nightly backup starts at 03:30 UTC.",
        SUPERSEDE,
    ),
    # -- names ---------------------------------------------------------------------------
    (
        "The on-call lead this quarter is Priya.",
        "The on-call lead this quarter is Marcus.",
        SUPERSEDE,
    ),
    ("Our error tracker is Sentry.", "Our error tracker is Rollbar.", SUPERSEDE),
    ("Deploys are approved by Dana Whitfield.", "Deploys are approved by Omar Haddad.", SUPERSEDE),
    (
        "The staging database lives in Frankfurt.",
        "The staging database lives in Dublin.",
        SUPERSEDE,
    ),
    ("My sister lives in Boston.", "My sister lives in Denver now.", SUPERSEDE),
    (
        "The mobile app is built with Flutter.",
        "The mobile app is built with React Native.",
        SUPERSEDE,
    ),
    # -- versions ------------------------------------------------------------------------
    ("ledger targets Python 3.11.", "ledger targets Python 3.12.", SUPERSEDE),
    ("The frontend is pinned to Node 18.", "The frontend is pinned to Node 20.", SUPERSEDE),
    ("We deploy with Terraform 1.5.7.", "We deploy with Terraform 1.6.2.", SUPERSEDE),
    ("The API schema is at version v2.", "The API schema is at version v3.", SUPERSEDE),
    ("pixelforge is on React 17.", "pixelforge is on React 18.", SUPERSEDE),
    ("quarry runs dbt 1.5.", "quarry upgraded to dbt 1.7.", SUPERSEDE),
    # -- dates ---------------------------------------------------------------------------
    ("The launch is planned for March 3.", "The launch is planned for March 17.", SUPERSEDE),
    ("The contract renews on 2024-06-01.", "The contract renews on 2024-09-01.", SUPERSEDE),
    ("The code freeze starts on Friday.", "The code freeze starts on Wednesday.", SUPERSEDE),
    ("Our team offsite is in May.", "Our team offsite is in September.", SUPERSEDE),
    # -- negation ------------------------------------------------------------------------
    ("The public API is rate limited.", "The public API is not rate limited.", SUPERSEDE),
    ("The importer is not idempotent.", "The importer is idempotent.", SUPERSEDE),
    (
        "Feature flags are cached on the client.",
        "Feature flags are never cached on the client.",
        SUPERSEDE,
    ),
    ("The reports job can run in parallel.", "The reports job cannot run in parallel.", SUPERSEDE),
    ("Uploads are scanned for viruses.", "Uploads aren't scanned for viruses.", SUPERSEDE),
    # -- paraphrases and compatible details: the old one stays ---------------------------
    ("The API server listens on port 8443.", "the API server listens on port 8443", KEEP),
    ("The API server listens on port 8443.", "The API server listens on port 8443!", KEEP),
    (
        "We decided to use SQLite in WAL mode for the memory store.",
        "For the memory store we use SQLite in WAL mode.",
        KEEP,
    ),
    (
        "harbor aborts a canary when the 5xx ratio exceeds 1%.",
        "harbor marks a canary unhealthy when the 5xx ratio exceeds 1% or p99 grows 30%.",
        KEEP,
    ),
    (
        "pixelforge is a browser image editor in TypeScript 5 with React 18, Vite, "
        "WebGL2 rendering and zustand stores for state.",
        "pixelforge upgraded to React 19.",
        KEEP,
    ),
    ("The database is Postgres.", "The database is Postgres 15.", KEEP),
    ("Money is stored as integer cents.", "Money amounts are stored as integer cents.", KEEP),
    (
        "Tests run with pytest and a 300 second timeout.",
        "Tests run with pytest under a 300 second timeout per test.",
        KEEP,
    ),
    ("My dog is called Biscuit.", "My dog's name is Biscuit.", KEEP),
    (
        "I started learning the guitar in January 2022.",
        "I began learning guitar in January 2022.",
        KEEP,
    ),
    ("Deploys need two approvals.", "Deploys need two approvals from the platform team.", KEEP),
    # -- related-looking, different facts: both stay -------------------------------------
    (
        "Last week I found these old notebooks from my grandfather in the attic.",
        "Appreciate you, Nate! That means a lot to me.",
        ADD,
    ),
    ("Thanks, Joanna! That sounds great.", "Thanks, Nate! That sounds amazing.", ADD),
    ("This is awesome, thanks for sharing!", "This is so cool, I love it!", ADD),
    (
        "I went to the park with my dog last Saturday.",
        "I went to the beach with my kids last Sunday.",
        ADD,
    ),
    (
        "Yesterday I baked banana bread for my neighbours.",
        "Yesterday I baked cookies for the school fair.",
        ADD,
    ),
    (
        "In May I visited my parents in Lisbon.",
        "In June I visited my friend in Madrid.",
        ADD,
    ),
    (
        "Wow, that is amazing! How long did it take you?",
        "Wow, that is amazing! Where did you find it?",
        ADD,
    ),
    (
        "I finished reading 'The Overstory' last month and loved it.",
        "I finished painting the living room last month and loved it.",
        ADD,
    ),
    ("It was a great day at the lake.", "It was a long day at the office.", ADD),
    (
        "My first marathon was in Chicago in 2019.",
        "My first half marathon was in Portland in 2021.",
        ADD,
    ),
    ("The dev server runs on port 8080.", "The metrics endpoint runs on port 9090.", ADD),
    ("ledger uses Redis for the rate limiter.", "ledger uses Redis for session storage.", ADD),
    ("pixelforge is on React 17.", "pixelforge is bundled with webpack 5.", ADD),
    (
        "The billing job runs every night at 01:00.",
        "The cleanup job runs every Sunday at 04:00.",
        ADD,
    ),
    ("Alice owns the auth service.", "Alice prefers tabs over spaces.", ADD),
    (
        "I adopted a cat named Luna in 2020.",
        "I adopted a dog named Max in 2023.",
        ADD,
    ),
    (
        "We moved into our new house in April.",
        "We moved the standup to 10:00 in April.",
        ADD,
    ),
    (
        "My brother works as a nurse in Leeds.",
        "My cousin works as a teacher in York.",
        ADD,
    ),
    (
        "That's so sweet of you, Nate! I'm glad the book helped.",
        "Last week I found these old notebooks from my grandfather in the attic.",
        ADD,
    ),
    (
        "I've been painting landscapes since I was a teenager.",
        "I've been playing chess since I was a teenager.",
        ADD,
    ),
)


@dataclass(frozen=True)
class Outcome:
    old: str
    new: str
    expected: str
    action: str  # what the engine did with `new`
    old_status: str  # what became of `old`
    reason: str

    @property
    def correct(self) -> bool:
        if self.expected == SUPERSEDE:
            return self.action == "supersede" and self.old_status == "superseded"
        if self.expected == KEEP:
            return self.old_status == "active"
        return self.action == "add" and self.old_status == "active"

    @property
    def dropped_new_value(self) -> bool:
        """A new value answered NOOP: the fact the user just gave is lost."""
        return self.expected == SUPERSEDE and self.action == "noop"


def judge(memory: Memory, old: str, new: str, expected: str) -> Outcome:
    """Write `old` then `new` into an empty `memory`; what happened to each."""
    first = memory.remember(old, scope="pairs")
    second = memory.remember(new, scope="pairs")
    status = memory.get(first.id or "").status
    return Outcome(old, new, expected, second.action, status, second.reason)


def run(open_memory: Callable[[int], Memory]) -> list[Outcome]:
    """Every pair, each in a fresh memory from `open_memory(index)` (closed after)."""
    outcomes = []
    for index, (old, new, expected) in enumerate(PAIRS):
        with open_memory(index) as memory:
            outcomes.append(judge(memory, old, new, expected))
    return outcomes
