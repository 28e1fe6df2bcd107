"""What `helix status` and the mount's `.helix/status` say: one document, one text.

The branch commands move, its commit, the experiment running on it, where it stands
against each remote's copy of it as last fetched or pushed (no network: as git
status), the saves a live worktree holds that no commit has yet (the quiet window's),
and the paths no commit takes (ignored). Only a mount's
daemon has live worktrees (ADR 0002), so only there can anything be pending; reading
it commits nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from helixfs.ids import CommitId
from helixfs.vcs.ancestry import ahead_behind
from helixfs.vcs.refs import REMOTES

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

LISTED = 20
"""Pending paths the text lists; the document carries them all."""


@dataclass(frozen=True)
class Tracking:
    """The branch against one remote's copy of it, as the last fetch or push saw it."""

    remote: str
    commit: CommitId
    ahead: int  # commits here the remote's copy lacks
    behind: int  # and the other way
    complete: bool = True  # False: the counts stopped at ancestry.ahead_behind's limit

    def as_json(self) -> dict[str, object]:
        return {
            "remote": self.remote,
            "commit": self.commit.hex(),
            "ahead": self.ahead,
            "behind": self.behind,
            "counted": self.complete,
        }


@dataclass(frozen=True)
class Status:
    branch: str
    commit: CommitId
    subject: str
    mounted: bool  # read in the mount's daemon
    pending: list[bytes] | None  # None: some saves pending, no list says which
    # topmost paths in the work tree that no commit takes (ignore rules, editor temp
    # names; a folder as `name/`): Repository.ignored_paths, ADR 0061
    ignored: list[bytes] = field(default_factory=list)
    experiment: str | None = None  # running on the branch: its commits carry its name
    remotes: list[Tracking] = field(default_factory=list)

    @property
    def has_pending(self) -> bool:
        return self.pending is None or bool(self.pending)


def status(repo: Repository, *, mounted: bool) -> Status:
    branch = repo.current_branch()
    head = repo.commit_info("HEAD")
    subject = head.message.splitlines()[0] if head.message else ""
    pending = repo.pending_saves(branch)
    ignored = repo.ignored_paths(branch)
    experiment = repo.experiments.running_on(branch)
    remotes = tracking(repo, branch, head.id)
    return Status(branch, head.id, subject, mounted, pending, ignored, experiment, remotes)


def tracking(repo: Repository, branch: str, head: CommitId) -> list[Tracking]:
    """`branch` against every remote that has a copy of it (`remotes/NAME/BRANCH`)."""
    found = []
    for name, value in repo.store.refs(REMOTES):
        remote, _, tracked = name[len(REMOTES) :].partition("/")
        if tracked == branch:
            commit = CommitId(value)
            found.append(Tracking(remote, commit, *ahead_behind(repo, head, commit)))
    return found


def status_lines(state: Status, shown: Callable[[bytes], str]) -> list[str]:
    """The human form; `shown` renders a path (escaped for a terminal, or as is)."""
    lines = [f"on branch {state.branch} at {state.commit.hex()[:12]}  {state.subject}"]
    if state.experiment is not None:
        lines.append(f"experiment {state.experiment} runs here: each commit is tagged with it")
    lines += [_tracking_line(state.branch, t) for t in state.remotes]
    paths = state.pending
    if not state.mounted:
        lines.append("no mount of this store runs: every change is committed")
    elif not state.has_pending:
        lines.append("no saves pending: the mount's files are the commit's")
    elif paths is None:
        lines.append("saves pending, not committed yet (more than a list holds)")
    else:
        lines.append(f"saves pending, not committed yet ({len(paths)}):")
        lines += [f"    {shown(p)}" for p in paths[:LISTED]]
        if len(paths) > LISTED:
            lines.append(f"    ... and {len(paths) - LISTED} more")
    return lines + _ignored_lines(state.ignored, shown)


def _tracking_line(branch: str, t: Tracking) -> str:
    where = f"{t.remote}/{branch} (as last fetched or pushed)"
    more = "" if t.complete else " or more"
    if t.ahead == t.behind == 0:
        return f"up to date with {where}"
    if not t.behind:
        return f"{t.ahead}{more} commit(s) ahead of {where}: push to send them"
    if not t.ahead:
        return f"{t.behind}{more} commit(s) behind {where}: pull to bring them"
    return f"diverged from {where}: {t.ahead} here, {t.behind} there{more}: pull to merge"


def _ignored_lines(ignored: list[bytes], shown: Callable[[bytes], str]) -> list[str]:
    if not ignored:
        return []
    lines = [f"ignored, in the work tree but never committed ({len(ignored)}):"]
    lines += [f"    {shown(p)}" for p in ignored[:LISTED]]
    if len(ignored) > LISTED:
        lines.append(f"    ... and {len(ignored) - LISTED} more")
    return lines
