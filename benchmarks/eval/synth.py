"""Bulk memories and queries for the latency benchmark, made to look like the real thing.

Latency at 100,000 memories depends on what the indexes hold: the FTS vocabulary, how
many rows share a term, how long texts are, how vectors cluster. So the bulk is not
"memory 1..N" but coding-agent memories over many fictional projects, built from the
same kinds of sentences as the hand-written eval set (facts, decisions, conventions,
gotchas, howtos, preferences) with varied identifiers, numbers and tools.
Deterministic: the same seed gives the same corpus.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_PROJECT_PARTS = _words(
    "ledger pixel tide harbor quarry atlas beacon cinder delta ember falcon glacier "
    "heron iris juniper kestrel lumen meadow nimbus orbit prism quartz raven sierra "
    "talon umbra vortex willow zephyr"
)
_PROJECT_SUFFIX = ("", "forge", "watch", "hub", "db", "kit", "ops", "sync", "api", "ui")
_NOUNS = _words(
    "cache token session invoice account order payment webhook queue worker "
    "scheduler config parser router migration index snapshot upload thumbnail report "
    "metric span tenant user role permission lease lock batch retry backoff shard "
    "replica cursor buffer stream socket client server handler middleware template "
    "manifest bundle layer tile canvas brush filter selection export import backup "
    "checkpoint"
)
_VERBS = _words(
    "parse load save flush fetch render validate encode decode sync refresh resolve "
    "build apply merge split schedule dispatch retry compact prune rotate sign "
    "verify"
)
_TOOLS = _words(
    "Postgres Redis Kafka RabbitMQ S3 Snowflake TimescaleDB SQLite Elasticsearch "
    "Kubernetes Nomad Terraform Airflow dbt Vite webpack pytest Vitest Playwright "
    "GitHub Actions Buildkite Sentry Grafana Prometheus OpenTelemetry Vault"
)
_LANGS = ("Python", "TypeScript", "Go", "Rust", "Kotlin", "Java", "Elixir", "Ruby")
_PEOPLE = (
    "Mara Okafor",
    "Jonas Lindqvist",
    "Priya Raman",
    "Tomás Ferreira",
    "Elif Demir",
    "Wei Zhang",
    "Aisha Bello",
    "Yuki Tanaka",
    "Omar Haddad",
    "Lena Fischer",
    "Daniel Kim",
    "Sofia Rossi",
    "Kwame Mensah",
    "Ines Duarte",
)
_ENVS = ("dev", "staging", "prod", "ci", "preview")


@dataclass(frozen=True)
class SynthMemory:
    type: str
    scope: str
    tags: tuple[str, ...]
    content: str


class _Words:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, items: Sequence[T]) -> T:
        return items[self.rng.randrange(len(items))]

    def project(self) -> str:
        return self.pick(_PROJECT_PARTS) + self.pick(_PROJECT_SUFFIX)

    def camel(self) -> str:
        return self.pick(_VERBS) + self.pick(_NOUNS).capitalize() + self.pick(_NOUNS).capitalize()

    def snake(self) -> str:
        return f"{self.pick(_VERBS)}_{self.pick(_NOUNS)}"

    def const(self) -> str:
        suffix = self.pick(("MS", "TTL", "MAX", "SIZE", "LIMIT"))
        return f"{self.pick(_NOUNS).upper()}_{self.pick(_NOUNS).upper()}_{suffix}"

    def path(self, project: str) -> str:
        ext = self.pick((".py", ".ts", ".go", ".rs", ".sql", ".yaml"))
        return f"{project}/src/{self.pick(_NOUNS)}/{self.pick(_NOUNS)}{ext}"

    def number(self) -> int:
        return self.pick((3, 5, 10, 15, 30, 60, 100, 250, 256, 500, 1000, 4096, 10000))


_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("fact", "`{camel}()` in {path} {verb}s the {noun} {noun2} and caches it for {n} seconds."),
    ("fact", "{project} stores each {noun} in {tool}; the {noun2} table is partitioned by month."),
    ("fact", "`{const}` (default {n}) bounds how many {noun}s {project} keeps in memory."),
    (
        "decision",
        "{project} chose {tool} over {tool2} for the {noun} pipeline because "
        "{tool2} needed a separate {noun2} service to operate.",
    ),
    (
        "decision",
        "We decided {project} never deletes a {noun}; a {noun2} marks it retired "
        "so the audit trail stays complete.",
    ),
    (
        "convention",
        "In {project}, {noun} handlers live in {path} and are named `{snake}`; "
        "tests mirror the module path.",
    ),
    (
        "convention",
        "{project} uses {lang} with strict typing; every public `{camel}` "
        "needs a docstring that says why.",
    ),
    (
        "gotcha",
        "{project}'s `{snake}` silently drops the {noun} when the {noun2} is empty; "
        "check for it before calling.",
    ),
    (
        "gotcha",
        "Running {project} tests against {tool} needs the `{const}` env var, or the "
        "{noun} fixture times out after {n} seconds.",
    ),
    (
        "gotcha",
        "{tool} in {env} rejects {noun}s larger than {n} KB, so {project} splits "
        "them in `{camel}`.",
    ),
    (
        "howto",
        "To rebuild the {noun} index of {project}: `make {verb}-{noun}` then "
        "restart the {noun2} worker.",
    ),
    (
        "howto",
        "Deploy {project} to {env} with `harbor deploy {project} --env {env}` after "
        "the {noun} migration has run.",
    ),
    ("preference", "{person} prefers small PRs for {project}, one {noun} change per commit."),
    (
        "preference",
        "For {project} the team wants {tool} logs in JSON with the `{noun}_id` "
        "field on every line.",
    ),
    ("entity", "{person} owns the {noun} subsystem of {project} and reviews changes to {path}."),
    (
        "project",
        "{project} is a {lang} service that {verb}s {noun}s for the {noun2} team; "
        "it runs on {tool}.",
    ),
    ("snippet", "`{snake}(x)` returns `min(2**x, {n})` seconds: the {noun} backoff of {project}."),
    ("fact", "The {env} {tool} cluster for {project} keeps {noun} data for {n} days."),
)
_QUERY_TEMPLATES = (
    "how does {project} {verb} the {noun}?",
    "{camel}",
    "{snake} {noun}",
    "why did {project} pick {tool}?",
    "who owns the {noun} code in {project}",
    "{const} default",
    "steps to deploy {project} to {env}",
    "what breaks when the {noun2} is empty in {project}",
)


def _fill(template: str, words: _Words, project: str) -> str:
    tool = words.pick(_TOOLS)
    return template.format(
        project=project,
        camel=words.camel(),
        snake=words.snake(),
        const=words.const(),
        path=words.path(project),
        verb=words.pick(_VERBS),
        noun=words.pick(_NOUNS),
        noun2=words.pick(_NOUNS),
        tool=tool,
        tool2=words.pick([t for t in _TOOLS if t != tool]),
        lang=words.pick(_LANGS),
        person=words.pick(_PEOPLE),
        env=words.pick(_ENVS),
        n=words.number(),
    )


def memories(count: int, seed: int = 42) -> Iterator[SynthMemory]:
    words = _Words(random.Random(seed))
    for _ in range(count):
        kind, template = words.pick(_TEMPLATES)
        project = words.project()
        content = _fill(template, words, project)
        scope = "global" if kind == "preference" else f"project:{project}"
        yield SynthMemory(kind, scope, (words.pick(_NOUNS),), content)


def queries(count: int, seed: int = 7) -> list[str]:
    words = _Words(random.Random(seed))
    return [_fill(words.pick(_QUERY_TEMPLATES), words, words.project()) for _ in range(count)]
