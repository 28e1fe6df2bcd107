"""Text normalisation for the lexical index, equality checks and token budgets.

FTS5's unicode61 tokenizer already splits snake_case (the underscore is a separator) but
keeps `parseHttpResponse` as one token. Rather than a custom C tokenizer we index a
normalised copy: the text followed by the parts of every compound identifier, and we
normalise queries the same way, so `http response` finds `parseHttpResponse` and
`parseHttpResponse` finds `parse_http_response`.
"""

from __future__ import annotations

import functools
import math
import re

_WORD = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_STOPWORD_TEXT = """a an and are as at be but by do does for from has have how i if in into is it
its me my of on or our so than that the their them then there these they this to us was
we were what when where which who why will with you your"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def split_identifier(word: str) -> list[str]:
    """`parseHTTPResponse_v2` -> ['parse', 'http', 'response', 'v', '2'] (lowercase)."""
    if word.isascii() and word.isalpha() and word.islower():
        return [word]  # most words: nothing to split (and no regex to run)
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return parts


def fts_text(text: str) -> str:
    """The text as indexed: original, then the split parts of compound identifiers."""
    extra = [compound for compound in map(_compound, _WORD.findall(text)) if compound]
    return text if not extra else text + "\n" + " ".join(extra)


@functools.lru_cache(maxsize=1 << 16)
def _compound(word: str) -> str:
    """What a compound identifier adds to the index (its parts, then itself without
    underscores); '' for a plain word. Cached: code repeats its identifiers, and
    splitting each occurrence was most of the time of indexing a workspace."""
    parts = split_identifier(word)
    return f"{' '.join(parts)} {word.replace('_', '').lower()}" if len(parts) > 1 else ""


def query_terms(query: str) -> list[str]:
    """Distinct lowercase terms of a query, identifiers split, stopwords and single
    letters dropped (a single digit stays: `widget 3` names one file of several)."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(query):
        word = match.group(0)
        parts = split_identifier(word)
        candidates = parts + ([word.replace("_", "").lower()] if len(parts) > 1 else [])
        for term in candidates:
            if (len(term) > 1 or term.isdigit()) and term not in STOPWORDS:
                seen.setdefault(term, None)
    if not seen:  # a query of only stopwords still deserves an answer
        for match in _WORD.finditer(query):
            seen.setdefault(match.group(0).lower(), None)
    return list(seen)


def fts_query(query: str, *, all_terms: bool = False) -> str:
    """An FTS5 MATCH expression: each term quoted (no syntax injection), OR-ed."""
    terms = query_terms(query)
    joiner = " AND " if all_terms else " OR "
    return joiner.join(f'"{t}"' for t in terms)


def fts_names(names: list[str]) -> str:
    """An FTS5 MATCH for rows naming any of `names`, each compound identifier by its
    joined form only (`token_12` -> "token12", which fts_text indexes for every
    spelling of it): its parts alone (`token`, `12`) match most rows of a large memory,
    and ranking all of them was most of a hook's time at 10,000 memories."""
    terms: dict[str, None] = {}
    for match in (m for name in names for m in _WORD.finditer(name)):
        word = match.group(0)
        parts = split_identifier(word)
        term = word.replace("_", "").lower() if len(parts) > 1 else word.lower()
        if (len(term) > 1 or term.isdigit()) and term not in STOPWORDS:
            terms.setdefault(term, None)
    return " OR ".join(f'"{t}"' for t in terms)


def normalize(text: str) -> str:
    """Case-, punctuation- and whitespace-insensitive form, to spot identical facts."""
    return " ".join(m.group(0).lower() for m in _WORD.finditer(text))


@functools.lru_cache(maxsize=4096)
def word_set(text: str) -> frozenset[str]:
    """Cached: consolidation compares a new fact with the same neighbours and slot values
    over and over (a slot of 50 values costs 100 tokenisations per write uncached)."""
    return frozenset(query_terms(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def estimate_tokens(text: str) -> int:
    """Tokens for budget packing: ceil(UTF-8 bytes / 3).

    BPE tokenizers average ~4 bytes per token on English and ~3 on code; dividing by 3
    over-estimates for prose, so a block we call within budget is within budget for the
    model too (never over, at the cost of a little slack).
    """
    return math.ceil(len(text.encode("utf-8")) / 3)
