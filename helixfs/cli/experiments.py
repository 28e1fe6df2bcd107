"""`helix experiment start|stop|list|score|compare|pick`: the agent's experiment loop.

Thin: each action is one call of `repo.experiments` (vcs/experiments.py) and its two
renderings. Through a mount's daemon like any command (ADR 0002), so the mount's saver
tags its commits from the moment `start` returns.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import add_command
from helixfs.cli.history import change_doc, iso_time
from helixfs.cli.memory_view import merge_memories
from helixfs.cli.output import Output, printable, table
from helixfs.cli.refs import refused_with_conflicts
from helixfs.errors import InvalidInput, MergeConflict
from helixfs.ids import hex_id

if TYPE_CHECKING:
    from helixfs.vcs.experiments import Compared, Comparison, Score, Summary
    from helixfs.vcs.repo import Repository


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "experiment",
        handler=cmd_experiment,
        help="named experiments on branches: start, stop, list, score, compare, pick",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = actions.add_parser("start", help="tag every commit on a branch with NAME from now")
    start.add_argument("name", metavar="NAME")
    start.add_argument("--branch", metavar="B", help="the branch (default: NAME; made if new)")
    start.add_argument("--from", dest="rev", metavar="REV", help="a new branch's start (HEAD)")
    start.add_argument("--checkout", action="store_true", help="then make it the current branch")
    stop = actions.add_parser("stop", help="stop tagging (default: the current branch's)")
    stop.add_argument("name", metavar="NAME", nargs="?")
    listed = actions.add_parser("list", help="experiments: branch, commits, times, scores")
    score = actions.add_parser("score", help="record a result on its current commit")
    score.add_argument("name", metavar="NAME")
    score.add_argument("value", metavar="VALUE", help="a number (a test score, a latency...)")
    score.add_argument("--metric", metavar="M", default="score", help="its name (score)")
    compare = actions.add_parser("compare", help="scores and changes against a common base")
    compare.add_argument("names", metavar="NAME", nargs="+")
    pick = actions.add_parser("pick", help="merge the winner into the current branch")
    pick.add_argument("name", metavar="NAME")
    pick.add_argument("--into", metavar="B", help="the branch that takes it (default: current)")
    for action in (start, stop, listed, score, compare, pick):
        # after the action too (`helix experiment list --json`)
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="one JSON document"
        )


def cmd_experiment(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    action = ACTIONS[args.action]
    return action(args, repo, out)


# -- documents -------------------------------------------------------------------------


def _time(ns: int | None) -> str | None:
    return iso_time(ns) if ns is not None else None


def _score_doc(score: Score) -> dict[str, Any]:
    return {
        "metric": score.metric,
        "value": score.value,
        "commit": hex_id(score.commit),
        "time": iso_time(score.time_ns),
    }


def experiment_doc(summary: Summary) -> dict[str, Any]:
    exp = summary.experiment
    latest = exp.latest_scores()
    default = exp.score("score")
    return {
        "name": exp.name,
        "branch": exp.branch,
        "running": exp.running,
        "base": hex_id(exp.base),
        "head": hex_id(summary.head) if summary.head is not None else None,
        "commits": summary.commits,
        "first_time": _time(summary.first_ns),
        "last_time": _time(summary.last_ns),
        "started_time": iso_time(exp.started_ns),
        "stopped_time": _time(exp.stopped_ns),
        "score": default.value if default is not None else None,
        "scores": {metric: _score_doc(s) for metric, s in latest.items()},
        "picked": None
        if exp.picked is None
        else {
            "into": exp.picked.into,
            "commit": hex_id(exp.picked.commit) if exp.picked.commit else None,
            "time": iso_time(exp.picked.time_ns),
        },
    }


def _scores_text(doc: dict[str, Any]) -> str:
    return " ".join(f"{m}={s['value']:g}" for m, s in doc["scores"].items()) or "-"


def _state(doc: dict[str, Any]) -> str:
    if doc["picked"]:
        return f"picked into {doc['picked']['into']}"
    return "running" if doc["running"] else "stopped"


# -- actions ---------------------------------------------------------------------------


def _start(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    exp = repo.experiments.start(args.name, branch=args.branch, rev=args.rev)
    if args.checkout:
        repo.checkout(exp.branch)
    doc = experiment_doc(repo.experiments.summary(exp))
    out.emit(
        doc,
        f"started experiment {exp.name} on branch {exp.branch} at {doc['base'][:12]}: every"
        f" commit on {exp.branch} is tagged experiment={exp.name} until it stops"
        + ("" if args.checkout else f" (work in .helix/branches/{exp.branch}/ of a mount)"),
    )
    return 0


def _stop(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    exp = repo.experiments.stop(args.name)
    doc = experiment_doc(repo.experiments.summary(exp))
    out.emit(doc, f"stopped experiment {exp.name}: {doc['commits']} commit(s) on {exp.branch}")
    return 0


def _list(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    docs = [experiment_doc(s) for s in repo.experiments.summaries()]
    rows = [
        (
            printable(d["name"]),
            printable(d["branch"]),
            _state(d),
            d["commits"],
            d["first_time"] or "-",
            d["last_time"] or "-",
            _scores_text(d),
        )
        for d in docs
    ]
    headers = ("EXPERIMENT", "BRANCH", "STATE", "COMMITS", "FIRST", "LAST", "SCORE")
    out.emit({"experiments": docs}, lambda: table(rows, headers) if rows else "no experiments")
    return 0


def _score(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    score = repo.experiments.score(args.name, _number(args.value), metric=args.metric)
    doc = {"experiment": args.name} | _score_doc(score)
    out.emit(doc, f"{args.name}: {score.metric}={score.value:g} at {doc['commit'][:12]}")
    return 0


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidInput(f"VALUE {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InvalidInput(f"VALUE {text!r}: a score must be a finite number")
    return value


def _compare(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    result = repo.experiments.compare(args.names)
    doc = comparison_doc(result)
    out.emit(doc, lambda: _comparison_text(doc))
    return 0


def comparison_doc(result: Comparison) -> dict[str, Any]:
    return {
        "base": hex_id(result.base),
        "experiments": [_compared_doc(entry) for entry in result.entries],
        "shared_paths": [printable(p.decode("utf-8", "surrogateescape")) for p in result.shared],
    }


def _compared_doc(entry: Compared) -> dict[str, Any]:
    return experiment_doc(entry.summary) | {
        "files": len(entry.changes),
        "added": entry.added,
        "removed": entry.removed,
        "uncounted": entry.uncounted,
        "changes": [change_doc(c) for c in entry.changes],
    }


def _comparison_text(doc: dict[str, Any]) -> str:
    rows = [
        (
            printable(e["name"]),
            printable(e["branch"]),
            _scores_text(e),
            e["commits"],
            e["files"],
            f"+{e['added']}",
            f"-{e['removed']}",
        )
        for e in doc["experiments"]
    ]
    headers = ("EXPERIMENT", "BRANCH", "SCORE", "COMMITS", "FILES", "ADDED", "REMOVED")
    lines = [f"against their common base {doc['base'][:12]}:", table(rows, headers)]
    if doc["shared_paths"]:
        lines.append("changed by more than one: " + ", ".join(doc["shared_paths"]))
    for e in doc["experiments"]:
        lines.append(f"\n{printable(e['name'])}:")
        lines += [f"    {c['status']} {printable(c['path'])}" for c in e["changes"]]
    return "\n".join(lines)


def _pick(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    try:
        exp, result = repo.experiments.pick(args.name, into=args.into)
    except MergeConflict as err:
        return refused_with_conflicts(err, out)
    commit = hex_id(result.commit) if result.commit is not None else None
    into = exp.picked.into if exp.picked is not None else ""
    doc: dict[str, object] = {
        "experiment": exp.name,
        "status": result.status,
        "commit": commit,
        "into": into,
    }
    memories = merge_memories(repo, exp.branch, into) if into else None
    if memories is not None:  # the branch's memories, as `helix merge` brings them (ADR 0063)
        doc["memories"] = memories
    at = f" at {commit[:12]}" if commit else ""
    out.emit(doc, f"picked experiment {exp.name} into {into}: {result.status}{at}")
    return 0


ACTIONS = {
    "start": _start,
    "stop": _stop,
    "list": _list,
    "score": _score,
    "compare": _compare,
    "pick": _pick,
}
