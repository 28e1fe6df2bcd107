"""Experiments: a named line of work on a branch, whose commits carry its name.

An agent's loop is: try a variant, commit, test, score it, keep it or drop it; a fleet
runs several at once, each on its branch, and a person picks the winner. An experiment
is two refs (ADR 0060):

- `experiments/NAME` holds its record (below): made by `start`, rewritten by `stop`,
  `score` and `pick`, each a compare-and-swap on the bytes it read;
- `experiment-on/BRANCH` holds NAME while the experiment runs on BRANCH. Every commit
  `Repository.write_commit` makes on BRANCH (a mount's saves, API commits, merges,
  reverts) gets meta `experiment=NAME` from it (`tag`). It is one ref read, which the
  store keeps in memory, so a mount's saver tags its commits from the moment a command
  run through its daemon moved the ref: no restart, no second copy of the state.

Record: b"HXX" + version (1) + UTF-8 JSON {"branch", "base" (hex: the branch's commit
when it started), "started_ns", "stopped_ns" (null while it runs), "tip" (hex: the
branch's commit when it stopped, null while it runs), "scores" ([{"metric", "value",
"commit", "time_ns"}], oldest first, the last SCORES_KEPT), "picked" (null, or {"into",
"commit", "time_ns"})}.
"""

from __future__ import annotations

import json
import math
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from helixfs.errors import AlreadyExists, HelixError, InvalidInput, NotFound, UnsupportedVersion
from helixfs.ids import CommitId, hex_id
from helixfs.lazy import lazy_module
from helixfs.store import ObjectStore, RefUpdate
from helixfs.vcs.ancestry import merge_base
from helixfs.vcs.refs import branch_ref, check_name, shown_name
from helixfs.vcs.text import as_text

if TYPE_CHECKING:
    from helixfs.vcs import linediff
    from helixfs.vcs.merge import MergeResult
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.treeops import Change
else:  # a commit tags its experiment without loading the merge (helixfs/lazy.py)
    linediff = lazy_module("helixfs.vcs.linediff")

EXPERIMENTS = "experiments/"
RUNNING_ON = "experiment-on/"
META_KEY = "experiment"
DEFAULT_METRIC = "score"
SCORES_KEPT = 1000
MAGIC, VERSION = b"HXX", 1
COUNTED_BYTES = 1 << 20  # a bigger file's lines are not counted in a comparison
_METRIC_CHARS = 64


def tag_experiment(store: ObjectStore, branch: str, meta: dict[str, Any]) -> None:
    """Name the experiment running on `branch` in the meta of a commit made on it (a
    caller's own `experiment` key wins)."""
    name = store.ref(RUNNING_ON + branch)
    if name is not None:
        meta.setdefault(META_KEY, name.decode("utf-8", "replace"))


def refuse_if_running(store: ObjectStore, branch: str, doing: str) -> None:
    """A branch in an experiment keeps its name: its `experiment-on/` ref would tag
    the commits of the next branch of that name."""
    name = store.ref(RUNNING_ON + branch)
    if name is not None:
        running = name.decode("utf-8", "replace")
        raise InvalidInput(
            f"cannot {doing} branch {shown_name(branch)}: experiment {shown_name(running)}"
            f" runs on it (helix experiment stop {running} first)"
        )


@dataclass(frozen=True)
class Score:
    metric: str
    value: float
    commit: CommitId
    time_ns: int


@dataclass(frozen=True)
class Picked:
    into: str
    commit: CommitId | None  # the merge (or the head fast-forwarded to)
    time_ns: int


@dataclass(frozen=True)
class Experiment:
    name: str
    branch: str
    base: CommitId
    started_ns: int
    stopped_ns: int | None = None
    tip: CommitId | None = None
    scores: tuple[Score, ...] = ()
    picked: Picked | None = None

    def commits(self) -> list[CommitId]:
        """Every commit the record names: gc keeps them (maint.roots)."""
        named = [self.base, *(s.commit for s in self.scores)]
        named += [c for c in (self.tip, self.picked.commit if self.picked else None) if c]
        return list(dict.fromkeys(named))

    @property
    def running(self) -> bool:
        return self.stopped_ns is None

    def score(self, metric: str | None = None) -> Score | None:
        """The latest score (of `metric`, if given)."""
        for score in reversed(self.scores):
            if metric is None or score.metric == metric:
                return score
        return None

    def latest_scores(self) -> dict[str, Score]:
        """Each metric's latest score, in the order the metrics were first scored."""
        latest: dict[str, Score] = {}
        for score in self.scores:
            latest.pop(score.metric, None)
            latest[score.metric] = score
        return dict(sorted(latest.items(), key=lambda kv: self._first(kv[0])))

    def _first(self, metric: str) -> int:
        return next(i for i, s in enumerate(self.scores) if s.metric == metric)


@dataclass(frozen=True)
class Summary:
    experiment: Experiment
    head: CommitId | None  # its current commit; None: its branch is gone
    commits: int  # commits made on it since it started, tagged with it
    first_ns: int | None
    last_ns: int | None


@dataclass(frozen=True)
class Compared:
    summary: Summary
    changes: list[Change]  # against the common base
    added: int  # lines, over the text files counted
    removed: int
    uncounted: int  # changed files whose lines are not counted (binary, big, not files)


@dataclass(frozen=True)
class Comparison:
    base: CommitId
    entries: list[Compared]
    shared: list[bytes] = field(default_factory=list)  # paths more than one changed


# -- the record ------------------------------------------------------------------------


def encode(exp: Experiment) -> bytes:
    doc = {
        "branch": exp.branch,
        "base": hex_id(exp.base),
        "started_ns": exp.started_ns,
        "stopped_ns": exp.stopped_ns,
        "tip": hex_id(exp.tip) if exp.tip is not None else None,
        "scores": [
            {"metric": s.metric, "value": s.value, "commit": hex_id(s.commit), "time_ns": s.time_ns}
            for s in exp.scores
        ],
        "picked": None
        if exp.picked is None
        else {
            "into": exp.picked.into,
            "commit": hex_id(exp.picked.commit) if exp.picked.commit else None,
            "time_ns": exp.picked.time_ns,
        },
    }
    return MAGIC + bytes([VERSION]) + json.dumps(doc, sort_keys=True).encode()


def decode(name: str, value: bytes) -> Experiment:
    if value[:3] != MAGIC:
        raise HelixError(f"ref {EXPERIMENTS}{name} holds no experiment record")
    if value[3:4] != bytes([VERSION]):
        raise UnsupportedVersion(
            f"experiment {name!r} was recorded by a newer HelixFS (record version "
            f"{value[3:4].hex()}): upgrade helixfs to read it"
        )
    doc = json.loads(value[4:])
    picked = doc.get("picked")
    return Experiment(
        name=name,
        branch=doc["branch"],
        base=_cid(doc["base"]),
        started_ns=doc["started_ns"],
        stopped_ns=doc.get("stopped_ns"),
        tip=_cid(doc["tip"]) if doc.get("tip") else None,
        scores=tuple(
            Score(s["metric"], float(s["value"]), _cid(s["commit"]), s["time_ns"])
            for s in doc.get("scores", ())
        ),
        picked=None
        if not picked
        else Picked(
            picked["into"], _cid(picked["commit"]) if picked["commit"] else None, picked["time_ns"]
        ),
    )


def _cid(text: str) -> CommitId:
    return CommitId(bytes.fromhex(text))


def check_value(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"a score is a number, not {value!r:.40}")
    if not math.isfinite(value):
        raise InvalidInput(f"a score must be a finite number, not {value}")
    return float(value)


def check_metric(metric: object) -> str:
    if not isinstance(metric, str) or not metric or len(metric) > _METRIC_CHARS:
        raise InvalidInput(f"a metric is a name of 1 to {_METRIC_CHARS} characters")
    if not metric.isprintable() or any(c.isspace() for c in metric):
        raise InvalidInput(f"metric {metric!r}: no spaces or control characters")
    return metric


# -- the operations --------------------------------------------------------------------


class Experiments:
    """The experiment operations over one Repository (`repo.experiments`)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.store = repo.store

    def get(self, name: str) -> Experiment:
        return self._read(name)[0]

    def all(self) -> list[Experiment]:
        """Every experiment, oldest first."""
        found = [decode(ref[len(EXPERIMENTS) :], v) for ref, v in self.store.refs(EXPERIMENTS)]
        return sorted(found, key=lambda e: (e.started_ns, e.name))

    def running_on(self, branch: str) -> str | None:
        value = self.store.ref(RUNNING_ON + branch)
        return value.decode("utf-8", "replace") if value is not None else None

    def start(self, name: str, branch: str | None = None, rev: str | None = None) -> Experiment:
        """Start experiment `name` on `branch` (default: a branch named `name`), made
        from `rev` (default HEAD) when it does not exist yet."""
        check_name(name, "experiment")
        target = check_name(branch if branch is not None else name)
        with self.repo.lock:
            if self.store.ref(EXPERIMENTS + name) is not None:
                raise AlreadyExists(f"experiment {shown_name(name)} exists: choose another name")
            running = self.running_on(target)
            if running is not None:
                raise AlreadyExists(
                    f"branch {shown_name(target)} runs experiment {shown_name(running)}:"
                    f" stop it first (helix experiment stop {running})"
                )
            base = self._base(target, rev)
            exp = Experiment(name, target, base, time.time_ns())
            self.store.write(
                {},
                [
                    RefUpdate(EXPERIMENTS + name, encode(exp), expected=None),
                    RefUpdate(RUNNING_ON + target, name.encode(), expected=None),
                ],
            )
            return exp

    def _base(self, branch: str, rev: str | None) -> CommitId:
        """The branch's commit the experiment starts from, the branch made if need be.
        Saves pending on a live branch are committed first: they are not the
        experiment's."""
        if self.repo.has_branch(branch):
            if rev is not None:
                raise InvalidInput(
                    f"branch {shown_name(branch)} exists: --from applies to a new branch"
                )
            self.repo.settle_rev(branch_ref(branch))
            return self.repo.branch_head(branch)
        self.repo.resolve(rev or "HEAD")  # a bad REV is refused before anything is made
        return self.repo.create_branch(branch, rev or "HEAD")

    def stop(self, name: str | None = None) -> Experiment:
        """Stop a running experiment (default: the one on the current branch, or the
        only one running). Its saves so far are committed first, tagged."""
        with self.repo.lock:
            exp, raw = self._read(self._running_name(name))
            if not exp.running:
                raise InvalidInput(f"experiment {shown_name(exp.name)} is stopped already")
            stopped = replace(exp, stopped_ns=time.time_ns(), tip=self._current(exp))
            self._rewrite(exp, raw, stopped, running_ends=True)
            return stopped

    def _running_name(self, name: str | None) -> str:
        if name is not None:
            return name
        here = self.running_on(self.repo.current_branch())
        if here is not None:
            return here
        running = [e.name for e in self.all() if e.running]
        if len(running) == 1:
            return running[0]
        if not running:
            raise NotFound("no experiment is running")
        raise InvalidInput(f"experiments {', '.join(running)} are running: name the one to stop")

    def score(self, name: str, value: object, metric: str = DEFAULT_METRIC) -> Score:
        """Record `value` of `metric` on the experiment's current commit (the saves
        that commit holds are the state that was tested)."""
        number, metric = check_value(value), check_metric(metric)
        with self.repo.lock:
            exp, raw = self._read(name)
            commit = self._current(exp)
            if commit is None:
                raise NotFound(self._gone(exp))
            score = Score(metric, number, commit, time.time_ns())
            scores = (*exp.scores, score)[-SCORES_KEPT:]
            self._rewrite(exp, raw, replace(exp, scores=scores))
            return score

    def summaries(self, names: Iterable[str] | None = None) -> list[Summary]:
        exps = self.all() if names is None else [self.get(n) for n in names]
        with self.repo.lock:
            return [self.summary(exp) for exp in exps]

    def summary(self, exp: Experiment) -> Summary:
        """Its commits: those tagged with it from its current commit back to its base,
        first parents only."""
        head = self._current(exp)
        count, first, last = 0, None, None
        try:
            for commit in self.repo.log(hex_id(head)) if head is not None else ():
                if commit.id == exp.base or commit.time_ns < exp.started_ns:
                    break
                if commit.meta.get(META_KEY) == exp.name:
                    count, first = count + 1, commit.time_ns
                    last = last or commit.time_ns
        except NotFound:  # history no ref keeps was collected by gc: counted so far
            pass
        return Summary(exp, head, count, first, last)

    def compare(self, names: list[str]) -> Comparison:
        """Each experiment's changes since the base they share (the merge base of
        their current commits; one alone: its own base)."""
        if not names:
            raise InvalidInput("name at least one experiment to compare")
        if len(set(names)) != len(names):
            raise InvalidInput("an experiment is named twice")
        with self.repo.lock:
            summaries = self.summaries(names)
            for s in summaries:
                if s.head is None:
                    raise NotFound(self._gone(s.experiment))
            base = self._common_base(summaries)
            entries = [self._compared(base, s) for s in summaries]
        return Comparison(base, entries, _shared(entries))

    def _common_base(self, summaries: list[Summary]) -> CommitId:
        if len(summaries) == 1:
            return summaries[0].experiment.base
        heads = [s.head for s in summaries if s.head is not None]
        base: CommitId | None = heads[0]
        for head in heads[1:]:
            base = merge_base(self.repo, base, head) if base is not None else None
        if base is None:
            raise InvalidInput("these experiments share no history: nothing to compare against")
        return base

    def _compared(self, base: CommitId, summary: Summary) -> Compared:
        assert summary.head is not None
        changes = self.repo.diff(hex_id(base), hex_id(summary.head))
        added = removed = uncounted = 0
        for change in changes:
            counted = self._line_counts(change)
            if counted is None:
                uncounted += 1
            else:
                added, removed = added + counted[0], removed + counted[1]
        return Compared(summary, changes, added, removed, uncounted)

    def _line_counts(self, change: Change) -> tuple[int, int] | None:
        """(lines added, lines removed), or None for what has no lines to count."""
        sides: list[list[bytes]] = []
        for entry in (change.old, change.new):
            if entry is None:
                sides.append([])
                continue
            if not stat.S_ISREG(entry.mode) or entry.size > COUNTED_BYTES:
                return None
            text = as_text(self.repo.contents.read(entry.oid))
            if text is None:
                return None
            sides.append(text.encode().splitlines())
        ranges = linediff.changed_ranges(sides[0], sides[1])
        return sum(j2 - j1 for _, _, j1, j2 in ranges), sum(i2 - i1 for i1, i2, _, _ in ranges)

    def pick(self, name: str, into: str | None = None) -> tuple[Experiment, MergeResult]:
        """Merge the experiment's current commit into `into` (default: the current
        branch), then mark it picked (and stopped). A conflict changes nothing."""
        with self.repo.lock:
            exp, raw = self._read(name)
            target = into if into is not None else self.repo.current_branch()
            if target == exp.branch:
                raise InvalidInput(
                    f"experiment {shown_name(name)} is on {shown_name(target)}, the branch to"
                    " pick it into: check out the branch that takes it first"
                )
            head = self._current(exp)
            if head is None:
                raise NotFound(self._gone(exp))
            source = exp.branch if exp.running else hex_id(head)
            message = f"pick experiment {name} ({exp.branch} at {hex_id(head)[:12]})"
            result = self.repo.merge(source, into=target, message=message)
            now = time.time_ns()
            done = replace(exp, picked=Picked(target, result.commit, now))
            if exp.running:
                done = replace(done, stopped_ns=now, tip=head)
            self._rewrite(exp, raw, done, running_ends=exp.running)
            return done, result

    # -- helpers -----------------------------------------------------------------------

    def _read(self, name: str) -> tuple[Experiment, bytes]:
        raw = self.store.ref(EXPERIMENTS + name) if _storable(name) else None
        if raw is None:
            known = ", ".join(e.name for e in self.all()) or "none yet"
            raise NotFound(f"no experiment {shown_name(name)} (experiments: {known})")
        return decode(name, raw), raw

    def _current(self, exp: Experiment) -> CommitId | None:
        """Its current commit: the branch's head while it runs (the saves pending on
        it committed first), else its tip. None when its running branch is gone."""
        if not exp.running:
            return exp.tip
        if not self.repo.has_branch(exp.branch):
            return None
        self.repo.settle_rev(branch_ref(exp.branch))
        return self.repo.branch_head(exp.branch)

    def _rewrite(
        self, old: Experiment, raw: bytes, new: Experiment, *, running_ends: bool = False
    ) -> None:
        updates = [RefUpdate(EXPERIMENTS + old.name, encode(new), expected=raw)]
        if running_ends:
            mine = old.name.encode()
            if self.store.ref(RUNNING_ON + old.branch) == mine:
                updates.append(RefUpdate(RUNNING_ON + old.branch, None, expected=mine))
        self.store.write({}, updates)

    @staticmethod
    def _gone(exp: Experiment) -> str:
        return (
            f"experiment {shown_name(exp.name)} runs on branch {shown_name(exp.branch)},"
            " which no longer exists: stop it (helix experiment stop NAME)"
        )


def _storable(name: str) -> bool:
    try:
        check_name(name, "experiment")
    except HelixError:
        return False
    return True


def _shared(entries: list[Compared]) -> list[bytes]:
    seen: dict[bytes, int] = {}
    for entry in entries:
        for change in entry.changes:
            seen[change.path] = seen.get(change.path, 0) + 1
    return sorted(path for path, count in seen.items() if count > 1)
