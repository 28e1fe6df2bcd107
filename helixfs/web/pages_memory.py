"""Memory pages: search (the very `Memory.recall` of `helix recall`), lists filtered by
type, tag, scope, status and branch (a search then reads as from that branch: ADR
0063), one memory with its history and supersession chain, and the corrections a
person makes (forget, restore, edit, confirm), each one call of the Memory API, so
each is in the memory's history exactly as from the CLI."""

from __future__ import annotations

from collections.abc import Mapping

from helixfs.errors import InvalidInput
from helixfs.memory import MEMORY_TYPES, STATUSES, HistoryEntry, Hit, MemoryRecord
from helixfs.vcs.sourceview import BranchView
from helixfs.web.html import e, form, link, message_box, page, select, table, url, when
from helixfs.web.pages_vcs import Query, text_of
from helixfs.web.site import Site

STALE = "stale"  # active, its file moved on in the branch looked from: `helix memories --stale`
IDLE = "idle"  # active, but decayed unused: what `helix memories --archive-candidates` lists
STATUS_CHOICES = (*STATUSES, STALE, IDLE, "any")
RECALL_K = 10  # helix recall's default
LIST_LIMIT = 100
CHAIN_LIMIT = 50
DONE = {
    "forget": "Forgotten (restore brings it back).",
    "restore": "Restored: the last change was undone.",
    "edit": "Saved.",
    "confirm": "Confirmed.",
}


def memory_list_page(site: Site, query: Query) -> str:
    q = text_of(query, "q")
    kind = text_of(query, "type") or None
    tag = text_of(query, "tag") or None
    scope = text_of(query, "scope") or None
    status = text_of(query, "status", "active") or "active"
    branch = text_of(query, "branch") or None
    if kind is not None and kind not in MEMORY_TYPES:
        raise InvalidInput(f"unknown memory type {kind!r}; use one of {', '.join(MEMORY_TYPES)}")
    if status not in STATUS_CHOICES:
        raise InvalidInput(f"unknown status {status!r}; use one of {', '.join(STATUS_CHOICES)}")
    mem = site.memory()
    branches = _branches(site)
    if branch is not None and branch not in branches:
        raise InvalidInput(f"no branch named {branch!r} has memories or a ref")
    if q:
        with site.repo.lock:  # the branch's view reads its tree (ADR 0063)
            view = _view(site, branch)
            hits = mem.recall(
                q, k=RECALL_K, types=[kind] if kind else None, scope=scope,
                include_superseded=status != "active", view=view,
            )  # fmt: skip
        if branch is not None and view is None:  # a deleted branch: its archived ones
            hits = [h for h in hits if h.branch == branch]
        note = "lexical (BM25) only: no embedding model is loaded" if mem.lexical_only else ""
        results = _hits_table([h for h in hits if tag is None or tag in h.tags], note)
    else:
        results = _records_table(_listed(site, kind, scope, status, tag, branch))
    filters = _filter_form(q, kind, tag, scope, status, branch, branches)
    return page("Memory", filters + results, active="memory")


def _branches(site: Site) -> list[str]:
    """Every branch a person may filter by: the repository's and those with memories."""
    with site.repo.lock:
        refs = {ref.name for ref in site.repo.branches()}
    return sorted(refs | set(site.memory().branch_names()))


def _view(site: Site, branch: str | None) -> BranchView | None:
    """The branch's view (None: the trunk's; a deleted branch has none)."""
    if branch is not None and not any(ref.name == branch for ref in site.repo.branches()):
        return None
    return BranchView(site.repo, branch)


def _listed(
    site: Site,
    kind: str | None,
    scope: str | None,
    status: str,
    tag: str | None,
    branch: str | None = None,
) -> list[MemoryRecord]:
    mem = site.memory()
    if status in (STALE, IDLE):
        if status == STALE:  # as from the branch chosen (ADR 0063), else the trunk
            with site.repo.lock:
                view = _view(site, branch)
                found = [] if view is None else mem.stale(view, limit=LIST_LIMIT * 10)
            branch = None  # every memory that branch sees, whoever wrote it
        else:
            found = [c.memory for c in mem.archive_candidates(limit=LIST_LIMIT * 10)]
        return [
            r for r in found
            if (kind is None or r.type == kind) and (scope is None or r.scope == scope)
            and (tag is None or tag in r.tags) and (branch is None or r.branch == branch)
        ][:LIST_LIMIT]  # fmt: skip
    return mem.memories(
        type=kind, scope=scope, status=None if status == "any" else status, tag=tag,
        limit=LIST_LIMIT, branch=branch,
    )  # fmt: skip


def _filter_form(
    q: str,
    kind: str | None,
    tag: str | None,
    scope: str | None,
    status: str,
    branch: str | None = None,
    branches: list[str] | tuple[str, ...] = (),
) -> str:
    return (
        '<form method="get" action="/memory" class="filters">'
        f'<input type="search" name="q" id="f-q" value="{e(q)}"'
        ' placeholder="search (as helix recall)">'
        f"{select('type', MEMORY_TYPES, kind, 'any type')}"
        f'<input name="tag" id="f-tag" value="{e(tag or "")}" placeholder="tag">'
        f'<input name="scope" id="f-scope" value="{e(scope or "")}" placeholder="scope">'
        f"{select('status', STATUS_CHOICES, status)}"
        f"{select('branch', branches, branch, 'every branch')}"
        '<button type="submit" id="f-go">search</button></form>'
    )


def _hits_table(hits: list[Hit], note: str) -> str:
    rows = [
        (
            link(f"/memory/{h.id}", h.id, "id"),
            e(h.type or ""),
            e((h.status or "") + (f" ({h.stale.how})" if h.stale else "")),
            e(h.branch or ""),
            e(f"{h.score:.3f}"),
            e(h.content),
        )
        for h in hits
    ]
    head = f'<p class="note">{e(note)}</p>' if note else ""
    if not rows:
        return head + '<p class="empty">No memory matches.</p>'
    columns = ("id", "type", "status", "branch", "score", "memory")
    return head + table(columns, rows, "memories hits")


def _records_table(recs: list[MemoryRecord]) -> str:
    rows = [
        (
            link(f"/memory/{r.id}", r.id, "id"),
            e(r.type),
            e(r.status),
            e(r.scope),
            e(r.branch or ""),
            e(", ".join(r.tags)),
            e(when(r.updated)),
            e(r.content),
        )
        for r in recs
    ]
    if not rows:
        return '<p class="empty">No memories.</p>'
    columns = ("id", "type", "status", "scope", "branch", "tags", "updated", "memory")
    return table(columns, rows, "memories")


# -- one memory ---------------------------------------------------------------------------


def memory_page(site: Site, memory_id: str, query: Query) -> str:
    mem = site.memory()
    rec = mem.get(memory_id)
    entries = mem.history(rec.id)
    done = DONE.get(text_of(query, "done"), "")
    facts = table(
        ("", ""),
        [
            ("id", f"<code>{e(rec.id)}</code>"),
            ("type", e(rec.type)),
            ("status", f'<span class="status" id="status">{e(rec.status)}</span>'),
            ("scope", e(rec.scope)),
            ("branch", e(rec.branch or "- (every branch)")),
            ("tags", e(", ".join(rec.tags))),
            ("source", e(_source(rec))),
            ("confidence", e(f"{rec.confidence:.2f}")),
            ("salience", e(f"{rec.salience:.2f}")),
            ("created / updated", e(f"{when(rec.created)} / {when(rec.updated)}")),
        ],
        "facts",
    )
    body = (
        (message_box(done, "done") if done else "")
        + f'<blockquote class="content" id="content">{e(rec.content)}</blockquote>'
        + facts
        + _actions(site, rec)
        + "<h2>Supersession chain</h2>"
        + _chain(site, rec.id)
        + "<h2>History</h2>"
        + _history_table(entries)
    )
    return page(f"Memory {rec.id}", body, active="memory")


def _source(rec: MemoryRecord) -> str:
    src = rec.source
    where = f"{src.file}:{src.line}" if src.file and src.line else (src.file or "")
    return " ".join(part for part in (src.agent or "", where) if part) or "-"


def _actions(site: Site, rec: MemoryRecord) -> str:
    base = f"/memory/{rec.id}"
    edit_fields = (
        f'<textarea name="content" id="f-content" rows="3">{e(rec.content)}</textarea>'
        f"{select('type', MEMORY_TYPES, rec.type)}"
        f'<input name="tags" id="f-tags" value="{e(", ".join(rec.tags))}" placeholder="tags">'
    )
    reason = '<input name="reason" id="f-reason" placeholder="why (optional)">'
    forms = [form(f"{base}/edit", site.csrf, edit_fields, "save edit", "edit")]
    if rec.status == "active":
        forms.append(form(f"{base}/confirm", site.csrf, "", "confirm", "confirm"))
    if rec.status != "forgotten":
        forms.append(form(f"{base}/forget", site.csrf, reason, "forget", "forget"))
    forms.append(form(f"{base}/restore", site.csrf, "", "restore (undo last change)", "restore"))
    return f'<div class="actions">{"".join(forms)}</div>'


def _chain(site: Site, memory_id: str) -> str:
    """Older memories this one superseded, and newer ones that superseded it, followed
    edge by edge in both directions."""
    mem = site.memory()
    older = _follow(site, memory_id, newer=False)
    newer = _follow(site, memory_id, newer=True)
    if not older and not newer:
        return "<p>Nothing superseded it, and it superseded nothing.</p>"
    items = [f"<li>{_chain_item(mem.get(i))}</li>" for i in reversed(newer)]
    items.append(f'<li class="self">{e(memory_id)} (this memory)</li>')
    items += [f"<li>{_chain_item(mem.get(i))}</li>" for i in older]
    return f'<ol class="chain">{"".join(items)}</ol>'


def _follow(site: Site, start: str, *, newer: bool) -> list[str]:
    found: list[str] = []
    current = start
    while len(found) < CHAIN_LIMIT:
        edges = [
            edge for edge in site.memory().edges(current)
            if edge.rel == "supersedes" and (edge.dst if newer else edge.src) == current
        ]  # fmt: skip
        step = [edge.src if newer else edge.dst for edge in edges]
        step = [i for i in step if i not in found and i != start]
        if not step:
            return found
        found.append(step[0])
        current = step[0]
    return found


def _chain_item(rec: MemoryRecord) -> str:
    return f"{link(f'/memory/{rec.id}', rec.id, 'id')} [{e(rec.status)}] {e(rec.content)}"


def _history_table(entries: list[HistoryEntry]) -> str:
    rows = [
        (
            e(entry.seq),
            e(when(entry.at)),
            f'<span class="op">{e(entry.op)}</span>',
            e(str((entry.after or entry.before or {}).get("content", ""))),
            e(entry.note),
        )
        for entry in entries
    ]
    return table(("seq", "when", "op", "content after", "note"), rows, "ops")


# -- corrections (POST) -------------------------------------------------------------------

ACTIONS = ("forget", "restore", "edit", "confirm")


def correct(site: Site, memory_id: str, action: str, fields: Mapping[str, str]) -> str:
    """Run one correction; returns the page to go to. Each is one Memory call."""
    mem = site.memory()
    if action == "forget":
        [memory_id] = mem.forget(mem.get(memory_id).id, reason=fields.get("reason", ""))
    elif action == "restore":
        memory_id = mem.rollback(memory_id).id
    elif action == "edit":
        content = fields.get("content", "").strip()
        tags = [t.strip() for t in fields.get("tags", "").split(",") if t.strip()]
        memory_id = mem.edit(
            memory_id, content or None, type=fields.get("type") or None, tags=tags
        ).id
    elif action == "confirm":
        memory_id = mem.confirm(memory_id).id
    else:
        raise InvalidInput(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    return url(f"/memory/{memory_id}", done=action)
