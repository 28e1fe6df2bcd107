"""Pages over the Repository: history (every branch), a commit, a comparison, a tree or
file of any revision, and a file's history. Each takes the Site and the request's
parsed query, and returns HTML; errors are HelixErrors, mapped to pages by app.py."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from helixfs.errors import InvalidInput
from helixfs.vcs.dates import shown_time
from helixfs.vcs.node import saved_by
from helixfs.vcs.objects import Commit, TreeEntry
from helixfs.vcs.text import as_text
from helixfs.web import history
from helixfs.web.html import e, link, message_box, page, table, url
from helixfs.web.site import Site

PAGE_SIZE = 100
MAX_DIFF_CHARS = 400_000  # more is cut, with a note: a browser chokes on megabytes of <pre>
MAX_SHOWN_FILE = 2 << 20  # bytes of a file shown inline
FILE_LOG_LIMIT = 50

Query = Mapping[str, bytes]


def text_of(query: Query, name: str, default: str = "") -> str:
    raw = query.get(name)
    return default if raw is None else os.fsdecode(raw).strip()


def short(cid: bytes) -> str:
    return cid.hex()[:12]


def commit_link(cid: bytes) -> str:
    return link(f"/commit/{cid.hex()}", short(cid), "id")


def subject(commit: Commit) -> str:
    return commit.message.splitlines()[0] if commit.message else ""


def ref_badge(label: str) -> str:
    return f'<span class="ref" style="border-color:{history.colour(label)}">{e(label)}</span>'


# -- history ------------------------------------------------------------------------------


def history_page(site: Site, query: Query) -> str:
    after = text_of(query, "after") or None
    with site.repo.lock:
        found = history.walk(site.repo, after, PAGE_SIZE)
        version = history.refs_version(site.repo)
        refs = history.ref_labels(site.repo)
    legend = " ".join(ref_badge(label) for label, _ in refs)
    rows = "".join(_history_row(row) for row in found.rows)
    older = link(url("/", after=found.after), "older commits →", "older") if found.after else ""
    newer = link("/", "← newest", "newer") if after else ""
    body = (
        f'<p class="legend">{legend}</p>'
        f'<div class="history" id="history">{history.graph_svg(found)}'
        f'<ol class="commits">{rows}</ol></div><p class="pager">{newer} {older}</p>'
    )
    live = {"version": version, "poll": "/api/version"} if after is None else {}
    return page("Branches and history", body, active="history", scripts=live)


def _history_row(row: history.Row) -> str:
    commit = row.commit
    tips = "".join(ref_badge(label) for label in row.tips)
    return (
        f'<li style="--lane:{history.colour(row.ref)}">{commit_link(commit.id)}'
        f' <span class="time">{e(shown_time(commit, "%Y-%m-%d %H:%M:%S"))}</span> {tips}'
        f' <span class="msg">{e(subject(commit))}</span>'
        f' <span class="who">{e(commit.author)}{e(saved_by(commit.meta))}</span></li>'
    )


# -- one commit, a comparison -------------------------------------------------------------


def commit_page(site: Site, hexid: str) -> str:
    with site.repo.lock:
        commit = site.repo.commit_info(site.repo.resolve_id(hexid))
        base = commit.parents[0].hex() if commit.parents else None
        diff = _diff_html(site, base, commit.id.hex()) if base else ""
    parents = " ".join(commit_link(p) for p in commit.parents) or "none (a root commit)"
    compare = "".join(
        " " + link(url("/compare", a=p.hex(), b=commit.id.hex()), f"diff against {short(p)}")
        for p in commit.parents[1:]
    )
    facts = table(
        ("", ""),
        [
            ("id", f"<code>{e(commit.id.hex())}</code>"),
            ("time", e(shown_time(commit, "%Y-%m-%d %H:%M:%S"))),
            ("author", e(commit.author) + e(saved_by(commit.meta))),
            ("parents", parents + compare),
            ("tree", link(url("/tree", rev=commit.id.hex()), "browse the files at this commit")),
        ],
        "facts",
    )
    message = f'<pre class="message">{e(commit.message)}</pre>'
    if base is None:
        diff = "<p>A root commit: nothing before it to compare with.</p>"
    return page(f"Commit {short(commit.id)}", facts + message + diff)


def compare_page(site: Site, query: Query) -> str:
    a, b = text_of(query, "a"), text_of(query, "b")
    with site.repo.lock:
        names = [label for label, _ in history.ref_labels(site.repo)]
        result = _compare_result(site, a, b) if a or b else ""
    options = "".join(f'<option value="{e(n.removeprefix("snapshot "))}">' for n in names)
    form = (
        '<form method="get" action="/compare" class="compare">'
        f'<input name="a" id="f-a" list="revs" value="{e(a)}" placeholder="from: id, branch">'
        f'<input name="b" id="f-b" list="revs" value="{e(b)}" placeholder="to">'
        f'<datalist id="revs">{options}</datalist><button type="submit">compare</button></form>'
    )
    return page("Compare two commits or branches", form + result, active="compare")


def _compare_result(site: Site, a: str, b: str) -> str:
    if not a or not b:
        raise InvalidInput(
            "give both sides to compare: a commit id, a branch, a snapshot or HEAD~N"
        )
    left, right = site.repo.resolve(a), site.repo.resolve(b)
    heading = f"<h2>{commit_link(left)} → {commit_link(right)}</h2>"
    return heading + _diff_html(site, left.hex(), right.hex())


def _diff_html(site: Site, a: str, b: str) -> str:
    """Changed paths (each linked to its history) and the unified diff, coloured."""
    changes = site.repo.diff(a, b)
    if not changes:
        return "<p>No changes.</p>"
    rows = [
        (
            f'<span class="st st-{c.status}">{c.status}</span>',
            link(f"#file-{i}", c.path),
            link(url("/log", rev=b, path=c.path), "history"),
        )
        for i, c in enumerate(changes)
    ]
    listing = table(("", "path", ""), rows, "changes")
    text = site.repo.diff_text(a, b)
    cut = len(text) > MAX_DIFF_CHARS
    return listing + _diff_lines(text[:MAX_DIFF_CHARS], cut)


def _diff_lines(text: str, cut: bool) -> str:
    out: list[str] = []
    files = 0
    for line in text.splitlines():
        if line.startswith("diff --helix "):
            out.append(f'<span class="dh" id="file-{files}">{e(line)}</span>')
            files += 1
            continue
        cls = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        if line.startswith(("+++ ", "--- ")):
            cls = "fh"
        out.append(f'<span class="{cls}">{e(line)}</span>')
    note = message_box("The diff is cut here: it is too long to show.", "note") if cut else ""
    return f'<pre class="diff">{"".join(out)}</pre>{note}'


# -- browse -------------------------------------------------------------------------------


def tree_page(site: Site, query: Query) -> str:
    rev = text_of(query, "rev", "HEAD") or "HEAD"
    path = query.get("path", b"").strip(b"/")
    with site.repo.lock:
        cid = site.repo.resolve(rev)
        commit = site.repo.commit_info(cid)
        entry = site.repo.entry(rev, path) if path else None
        if entry is None or entry.is_dir():
            body = _listing(site, rev, path)
        else:
            body = _file_view(site, rev, path, entry)
    picker = (
        '<form method="get" action="/tree" class="rev">'
        f'<label>revision <input name="rev" id="f-rev" value="{e(rev)}"></label>'
        f'<input type="hidden" name="path" value="{e(path)}"><button type="submit">go</button>'
        f"</form><p>at {commit_link(cid)} {e(shown_time(commit))} {e(subject(commit))}"
        f" · {link(url('/log', rev=rev, path=path), 'history of this path')}</p>"
    )
    return page(f"Browse {rev}", picker + _crumbs(rev, path) + body, active="browse")


def _crumbs(rev: str, path: bytes) -> str:
    parts = [link(url("/tree", rev=rev), "/")]
    done = b""
    for name in path.split(b"/") if path else []:
        done = done + b"/" + name if done else name
        parts.append(link(url("/tree", rev=rev, path=done), name))
    return f'<p class="crumbs">{" / ".join(parts)}</p>'


def _listing(site: Site, rev: str, path: bytes) -> str:
    entries = site.repo.ls(rev, path)
    rows = [
        (
            _kind(en),
            link(
                url("/tree", rev=rev, path=_join(path, en.name)),
                en.name + (b"/" if en.is_dir() else b""),
            ),
            e(f"{en.size:,}" if not en.is_dir() else ""),
        )
        for en in entries
    ]  # noqa: E501
    return table(("", "name", "bytes"), rows, "tree") if rows else "<p>An empty folder.</p>"


def _join(path: bytes, name: bytes) -> bytes:
    return path + b"/" + name if path else name


def _kind(entry: TreeEntry) -> str:
    if entry.is_dir():
        return "dir"
    if entry.is_symlink():
        return "link"
    return "exec" if entry.mode & stat.S_IXUSR else "file"


def _file_view(site: Site, rev: str, path: bytes, entry: TreeEntry) -> str:
    if entry.is_symlink():
        target = site.repo.read(rev, path)
        return f'<p class="desc">A symbolic link to <code>{e(target)}</code>.</p>'
    if entry.size > MAX_SHOWN_FILE:
        return (
            f'<p class="desc">A file of {entry.size:,} bytes: too large to show here'
            f" (<code>helix cat {e(rev)} {e(path)}</code> prints it).</p>"
        )
    data = site.repo.read(rev, path)
    text = as_text(data)
    if text is None:
        return f'<p class="desc">A binary file of {len(data):,} bytes ({e(_magic(data))}).</p>'
    parts = text.split("\n")
    if parts[-1] == "":  # the newline ending the last line starts no line of its own
        parts.pop()
    lines = "".join(f"<span>{e(line)}</span>" for line in parts)
    return f'<pre class="file numbered">{lines}</pre>'


MAGIC = (
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "zip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip data"),
    (b"SQLite format 3", "SQLite database"),
)


def _magic(data: bytes) -> str:
    for prefix, name in MAGIC:
        if data.startswith(prefix):
            return name
    return "not UTF-8 text"


def file_log_page(site: Site, query: Query) -> str:
    rev = text_of(query, "rev", "HEAD") or "HEAD"
    path = query.get("path", b"").strip(b"/")
    with site.repo.lock:
        commits = list(site.repo.log(rev, FILE_LOG_LIMIT, path=path))
    rows = [
        (
            commit_link(c.id),
            e(shown_time(c, "%Y-%m-%d %H:%M:%S")),
            e(subject(c)),
            e(c.author) + e(saved_by(c.meta)),
            link(url("/tree", rev=c.id.hex(), path=path), "this version"),
        )
        for c in commits
    ]
    shown = os.fsdecode(path) or "/"
    more = (
        f"<p>The newest {FILE_LOG_LIMIT} are shown.</p>" if len(commits) == FILE_LOG_LIMIT else ""
    )
    body = (
        table(("commit", "time", "message", "by", ""), rows, "log")
        if rows
        else "<p>No commit changed it.</p>"
    )
    return page(f"History of {shown}", f"<p>on {e(rev)}</p>{body}{more}", active="browse")


def version_json(site: Site) -> dict[str, str]:
    with site.repo.lock:
        return {"version": history.refs_version(site.repo)}
