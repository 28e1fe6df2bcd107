"""Hybrid retrieval: tokenizer, vectors, graph expansion, weighting, MMR, packing, decay."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixfs.errors import InvalidInput
from helixfs.memory import Embedder, Memory, engine, retrieval
from helixfs.memory.tokens import (
    estimate_tokens,
    fts_names,
    fts_text,
    query_terms,
    split_identifier,
)


def test_identifiers_split_on_camel_and_snake_case() -> None:
    assert split_identifier("parseHTTPResponse_v2") == ["parse", "http", "response", "v", "2"]
    assert "parse http response" in fts_text("call parseHttpResponse here")
    assert query_terms("max_retry_count") == ["max", "retry", "count", "maxretrycount"]


def test_names_are_looked_up_whole() -> None:
    assert (
        fts_names(["token_12", "parseHttp", "the", "x", "run"])
        == '"token12" OR "parsehttp" OR "run"'
    )


def test_a_hooks_lookup_of_a_compound_name_is_not_a_lookup_of_its_parts(mem: Memory) -> None:
    """A hook's ambient lookup (Memory.mentioning) of `token_12` finds the memories that
    name it, in either spelling, and not the many that only say `token` or `12`."""
    for n, topic in enumerate(["cache", "login", "rotation", "expiry", "refresh", "audit"]):
        mem.remember(f"The {topic} token is checked {n + 3} times per request.")
    snake = mem.remember("token_12 is the fallback key of the staging cluster.")
    camel = mem.remember("Rotate Token12 before every release.", type="decision")
    found = {record.id for record in mem.mentioning(["token_12"])}
    assert found == {snake.id, camel.id}


@pytest.mark.parametrize(
    "query", ["http response", "parse_http_response", "parseHttpResponse", "HttpResponse"]
)
def test_camel_case_identifiers_are_found_by_their_parts(mem: Memory, query: str) -> None:
    target = mem.remember("parseHttpResponse handles chunked transfer encoding.")
    mem.remember("The logger writes JSON lines to stderr.")
    assert mem.recall(query)[0].id == target.id


@pytest.mark.parametrize("query", ["maxRetryCount", "retry count", "max_retry_count"])
def test_snake_case_identifiers_are_found_by_their_parts(mem: Memory, query: str) -> None:
    target = mem.remember("max_retry_count defaults to 5 in settings.py")
    mem.remember("The logger writes JSON lines to stderr.")
    assert mem.recall(query)[0].id == target.id


def test_vectors_find_meaning_without_shared_words(vmem: Memory) -> None:
    target = vmem.remember("Our continuous integration is GitHub Actions, on every push.")
    vmem.remember("The frontend is written in TypeScript with React.")
    vmem.remember("Database migrations are managed by Alembic.")
    assert vmem.recall("which CI provider builds the code")[0].id == target.id
    assert vmem.recall("what UI framework do we use")[0].content.startswith("The frontend")


PROJECT_FACTS = [
    "Our continuous integration is GitHub Actions, on every push.",
    "The frontend is written in TypeScript with React.",
    "Database migrations are managed by Alembic.",
    "The nightly backup writes to bucket s3://mmorth-archive.",
]


def _similarity(embedder: Embedder, query: str, text: str) -> float:
    return float(np.dot(np.ravel(embedder.embed_query(query)), np.ravel(embedder.embed([text]))))


def test_a_query_about_nothing_stored_finds_nothing(vmem: Memory, real_embedder: Embedder) -> None:
    """QA: with the model, search always returned k hits, however unrelated: the vector
    retriever ranks every text against every query. A hit only the model proposed now
    needs a cosine similarity of SIMILARITY_FLOOR to the query."""
    for fact in PROJECT_FACTS:
        vmem.remember(fact)
    vmem.index_workspace(
        {"src/auth.py": b"def refresh_token(session):\n    return renew()\n"}, "c1"
    )
    for nonsense in ("xqzv blorf wibble", "purple elephant banana ballet", "cake recipe"):
        assert vmem.search(nonsense) == []
    assert vmem.search("which CI provider builds the code")[0].content == PROJECT_FACTS[0]


def test_the_similarity_floor_never_drops_a_lexical_hit(
    vmem: Memory, real_embedder: Embedder
) -> None:
    for fact in PROJECT_FACTS:
        vmem.remember(fact)
    query = "kettle descaling vinegar mmorth"  # one shared word, unlike in meaning
    assert _similarity(real_embedder, query, PROJECT_FACTS[3]) < retrieval.SIMILARITY_FLOOR
    assert [h.content for h in vmem.search(query)] == [PROJECT_FACTS[3]]


def test_graph_expansion_brings_related_memories(mem: Memory) -> None:
    billing = mem.remember("The billing service owns customer invoices.")
    job = mem.remember("Nightly cron_invoice_job renders PDFs at 02:00 UTC.")
    unrelated = mem.remember("The search page caches results for a minute.")
    assert job.id not in [h.id for h in mem.recall("billing service owner")]
    mem.relate(billing.id or "", job.id or "", "implemented_by")
    ids = [h.id for h in mem.recall("billing service owner")]
    assert ids[:2] == [billing.id, job.id]
    assert unrelated.id not in ids


def test_superseded_and_forgotten_are_excluded_by_default(mem: Memory) -> None:
    old = mem.remember("The cache TTL is 60 seconds.")
    new = mem.remember("The cache TTL is 300 seconds.")
    gone = mem.remember("The cache warms up at boot from cache_seed.json.")
    mem.forget(gone.id or "")
    assert [h.id for h in mem.recall("cache")] == [new.id]
    assert {h.id for h in mem.recall("cache", include_superseded=True)} == {new.id, old.id}
    everything = mem.recall("cache", include_superseded=True, include_forgotten=True)
    assert {h.id for h in everything} == {new.id, old.id, gone.id}


def test_near_duplicates_are_dropped_by_mmr(mem: Memory) -> None:
    mem.remember("Use ruff for linting and formatting.", scope="alpha")
    mem.remember("Use ruff for linting and formatting.", scope="beta")
    mem.remember("Use mypy --strict for type checking.", scope="beta")
    hits = mem.recall("ruff linting formatting mypy")
    assert len(hits) == 2
    assert sum("ruff" in h.content for h in hits) == 1


def test_recent_memories_outrank_stale_ones(mem: Memory, clock: Clock) -> None:
    stale = mem.remember("We keep release notes in docs/releases.md")
    clock.advance(365)
    fresh = mem.remember("Drafts of release notes go to the wiki")
    ids = [h.id for h in mem.recall("release notes")]
    assert ids.index(fresh.id) < ids.index(stale.id)


def test_low_confidence_sinks(mem: Memory) -> None:
    doubtful = mem.remember("Someone said the staging password rotation is manual", confidence=0.2)
    sure = mem.remember("Vault rotates the staging password on a schedule")
    assert sure.action == "add"
    ids = [h.id for h in mem.recall("staging password rotation")]
    assert ids.index(sure.id) < ids.index(doubtful.id)


def test_salience_decays_and_stale_memories_are_only_proposed(mem: Memory, clock: Clock) -> None:
    idle = mem.remember("The legacy importer lives in tools/old_import.py")
    used = mem.remember("The API gateway is Envoy")
    clock.advance(120)
    mem.recall("API gateway")  # use reinforces
    proposed = [c.memory.id for c in mem.archive_candidates()]
    assert proposed == [idle.id]
    assert mem.get(idle.id or "").status == "active"  # proposed, never auto-archived
    assert used.id not in proposed
    assert mem.archive(proposed) == 1
    assert mem.get(idle.id or "").status == "archived"
    assert mem.recall("legacy importer") == []
    assert [h.id for h in mem.recall("legacy importer", include_superseded=True)] == [idle.id]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget=st.integers(min_value=1, max_value=600),
    texts=st.lists(st.text(min_size=1, max_size=300).filter(str.strip), min_size=1, max_size=8),
)
def test_context_never_exceeds_the_budget(tmp_path: Path, budget: int, texts: list[str]) -> None:
    with Memory.open(tmp_path / f"ctx{budget}.db", None) as mem:
        for text in texts:
            if "\x00" not in text:
                mem.remember(text)
        block = mem.context(budget)
        assert block.tokens <= budget
        assert estimate_tokens(block.text) <= budget


def test_context_packs_greedily_best_first(mem: Memory) -> None:
    for i in range(40):
        mem.remember(f"Service number {i} is owned by team_{i} and deployed with helm chart {i}.")
    block = mem.context(200)
    assert 0 < len(block.hits) < 40
    assert block.tokens <= 200
    assert block.text.startswith("# Memory context")
    roomy = mem.context(100_000)
    assert len(roomy.hits) == 40


def test_a_context_with_nothing_in_it_is_empty(mem: Memory) -> None:
    """QA: an empty memory, or a budget no memory fits, gave the bare header, so that
    `helix context` printed it instead of saying nothing fits."""
    assert mem.context(500).text == ""
    mem.remember("The release train leaves every second Tuesday from the main branch.")
    block = mem.context(12)  # the header fits, the memory does not
    assert (block.text, block.hits, block.tokens) == ("", (), 0)
    assert mem.context(500).text.startswith("# Memory context")


def test_a_bad_k_is_named_k(mem: Memory) -> None:
    """QA: `helix recall --k 0` said "limit must be ...", naming no option it has."""
    with pytest.raises(InvalidInput, match="^k must be a whole number"):
        mem.search("anything", k=0)


def test_context_with_a_query_includes_workspace_passages(mem: Memory) -> None:
    mem.remember("Tokens are refreshed by the auth middleware.")
    mem.index_workspace({"src/auth.py": b"def refresh_token(session):\n    return renew()\n"}, "c1")
    block = mem.context(500, query="refresh token")
    kinds = {h.kind for h in block.hits}
    assert kinds == {"memory", "chunk"}
    assert "src/auth.py:1-2" in block.text


@pytest.mark.parametrize("wanted", [1, 2, 3])
@pytest.mark.parametrize("engine_fixture", ["mem", "vmem"])  # lexical, hybrid
def test_a_single_digit_of_the_query_picks_the_file(
    request: pytest.FixtureRequest, engine_fixture: str, wanted: int
) -> None:
    """QA: files the same but for a digit were told apart by nothing, since one-letter
    terms were dropped: `widget number 3` found f1.py, and the near-duplicate cut hid
    the others."""
    memory: Memory = request.getfixturevalue(engine_fixture)
    files = {f"f{n}.py": f"# widget number {n}\nWIDGET = make_widget({n})\n" for n in (1, 2, 3)}
    memory.index_workspace({path: text.encode() for path, text in files.items()}, "c1")
    assert memory.search(f"widget number {wanted}")[0].path == f"f{wanted}.py"


RETRY_PY = "".join(
    f"def retry_with_backoff_{n}(call, attempts):\n    return jitter_sleep(call, attempts, {n})\n"
    for n in range(6)
)


@pytest.mark.parametrize("engine_fixture", ["mem", "vmem"])  # lexical, hybrid
def test_alike_passages_of_different_files_are_all_found(
    request: pytest.FixtureRequest, engine_fixture: str
) -> None:
    """QA: the near-duplicate cut dropped a passage alike to a better one whatever its
    file: of a module vendored twice, a search showed one path only, and the agent
    edited one copy not knowing of the other. Alike passages of one file are still cut."""
    memory: Memory = request.getfixturevalue(engine_fixture)
    twice_in_one = f"{RETRY_PY}\n{RETRY_PY}\n{RETRY_PY}"  # three chunks, alike
    files = {
        "src/retry.py": RETRY_PY,
        "vendor/retry.py": RETRY_PY.replace("attempts)", "attempts)  # vendored"),
        "copies/retry.py": twice_in_one,
    }
    memory.index_workspace({path: text.encode() for path, text in files.items()}, "c1")
    hits = memory.search("retry with backoff jitter sleep")
    assert sorted(h.path or "" for h in hits) == sorted(files)


@pytest.mark.parametrize("budget", [0, -5, "100", 2_000_000])
def test_bad_budget_is_refused(mem: Memory, budget: object) -> None:
    with pytest.raises(InvalidInput):
        mem.context(budget)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", "   ", "x" * 5000, "caf\udce9"])
def test_bad_query_is_refused(mem: Memory, query: str) -> None:
    """A lone surrogate is a name's non-UTF-8 byte (`.helix/search/caf\\xe9`): it was
    a UnicodeEncodeError from SQLite (a TypeError from the tokenizer), EIO on the mount."""
    with pytest.raises(InvalidInput):
        mem.recall(query)
    with pytest.raises(InvalidInput):
        mem.search(query)


def test_text_that_is_not_unicode_is_refused_and_changes_nothing(vmem: Memory) -> None:
    with pytest.raises(InvalidInput, match="UTF-8"):
        vmem.remember("The cache lives in caf\udce9")
    with pytest.raises(InvalidInput, match="UTF-8"):
        vmem.search("caf\udce9 cache")
    assert vmem.memories(status=None) == []


def test_lexical_only_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine._warned_lexical.clear()
    with caplog.at_level(logging.WARNING, logger="helixfs.memory"):
        Memory.open(tmp_path / "a.db", None).close()
        Memory.open(tmp_path / "b.db", None).close()
    warnings = [r for r in caplog.records if "lexical" in r.getMessage()]
    assert len(warnings) == 1


def test_queries_with_fts_syntax_are_plain_text(mem: Memory) -> None:
    target = mem.remember("The NEAR operator is not special here")
    assert mem.recall('NEAR("x" OR) AND * ^ -"')  # no FTS syntax error
    assert mem.recall("NEAR operator")[0].id == target.id


def test_recalls_and_writes_from_many_threads_at_once(vmem: Memory) -> None:
    """The model runs on the engine's pool beside each call's database reads: callers on
    several threads still never use the connection at once, and no write is lost."""
    vmem.warm()
    errors: list[BaseException] = []
    written: list[str] = []

    def work(worker: int) -> None:
        try:
            for step in range(5):
                fact = f"Worker {worker} wrote note {step} about the {TOPICS[step]} setup."
                written.append(vmem.remember(fact).id or "")
                vmem.recall(f"what did worker {worker} note about {TOPICS[step]}")
                vmem.search(f"{TOPICS[step]} setup")
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    assert len(written) == 20 and all(vmem.get(memory_id) for memory_id in written)


TOPICS = ["logging", "deployment", "caching", "database", "testing"]


def test_recalling_one_thing_never_reorders_another_query(vmem: Memory, clock: Clock) -> None:
    """Issue 30: each recall raised the salience of what it returned, which tipped later,
    unrelated queries. A recall now only marks its hits seen."""
    for text in (
        "The deploy pipeline runs on Buildkite agents.",
        "Deploy previews are published to Netlify.",
        "Deploys to production need two approvals.",
        "The staging deploy happens every night.",
        "The API gateway is Envoy.",
    ):
        vmem.remember(text)
        clock.advance(1)
    before = [(h.id, h.score) for h in vmem.recall("how do deploys work", reinforce=False)]
    for _ in range(20):
        vmem.recall("staging deploy nightly")
        vmem.recall("production approvals")
    after = [(h.id, h.score) for h in vmem.recall("how do deploys work", reinforce=False)]
    assert after == before


def test_a_question_naming_a_speaker_finds_their_news_not_their_small_talk(
    vmem: Memory, clock: Clock
) -> None:
    """Issue 30: with the speaker's name embedded, 'Caroline: Okay, gotta run.' was the
    nearest memory to every question that named her."""
    turns = [
        "Caroline: Hey Melanie! How have you been?",
        "Caroline: We booked flights to Lisbon for the autumn! It's been on my list forever.",
        "Melanie: Amazing, what do you want to see there?",
        "Caroline: Okay, gotta run. Speak later!",
        "Caroline: Same here, honestly.",
        "Caroline: That's great to hear!",
    ]
    for turn in turns:
        vmem.remember(turn)
        clock.advance(0.01)
    top = vmem.recall("Which city did Caroline travel to?", k=3, reinforce=False)
    assert "Lisbon" in top[0].content
