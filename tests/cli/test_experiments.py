"""`helix experiment ...`, `helix log --meta` and `helix demo --clean` at the CLI, run in
this process (`cli.main.run`) against a real RocksDB store. Experiments in a mount:
tests/mount/test_mount_experiments.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from helixfs.cli.main import run


class Cli:
    def __init__(self, store: Path, tmp: Path) -> None:
        self.store, self.tmp = store, tmp

    def __call__(self, *argv: str, code: int = 0) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = run(["--store", str(self.store), *argv], out, err)
        assert status == code, f"{argv}: exit {status}\n{out.getvalue()}{err.getvalue()}"
        return out.getvalue(), err.getvalue()

    def doc(self, *argv: str, code: int = 0) -> Any:
        return json.loads(self(*argv, "--json", code=code)[0])

    def write(self, branch: str, path: str, text: str) -> str:
        source = self.tmp / "content"
        source.write_text(text)
        done = self.doc("commit", "-m", f"write {path}", "--branch", branch, f"{path}={source}")
        return str(done["commit"])

    def refs(self) -> tuple[Any, ...]:
        return self.doc("branch"), self.doc("experiment", "list"), self.doc("log", "--meta")


@pytest.fixture
def helix(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path / "store", tmp_path)
    cli("init")
    cli.write("main", "app.py", "a\nb\n")
    return cli


def test_the_experiment_loop_start_score_compare_pick(helix: Cli) -> None:
    started = helix.doc("experiment", "start", "fast")
    assert started["branch"] == "fast" and started["running"] and started["commits"] == 0
    helix("experiment", "start", "slow", "--branch", "slow-b", "--from", "main")
    fast = helix.write("fast", "app.py", "a\nB\n")
    helix.write("slow-b", "app.py", "a\nb\nc\n")
    helix.write("slow-b", "more.txt", "x\n")
    helix("experiment", "score", "fast", "0.92")
    helix("experiment", "score", "slow", "0.5", "--metric", "accuracy")
    listed = {e["name"]: e for e in helix.doc("experiment", "list")["experiments"]}
    assert listed["fast"]["commits"] == 1 and listed["slow"]["commits"] == 2
    assert listed["fast"]["score"] == 0.92 and listed["slow"]["score"] is None
    assert listed["slow"]["scores"]["accuracy"]["value"] == 0.5
    assert listed["fast"]["scores"]["score"]["commit"] == fast
    assert listed["fast"]["first_time"] and listed["slow"]["last_time"]
    table = helix("experiment", "list")[0]
    assert "EXPERIMENT" in table and "score=0.92" in table and "accuracy=0.5" in table
    compared = helix.doc("experiment", "compare", "fast", "slow")
    by_name = {e["name"]: e for e in compared["experiments"]}
    assert (by_name["fast"]["added"], by_name["fast"]["removed"]) == (1, 1)
    assert [c["path"] for c in by_name["slow"]["changes"]] == ["app.py", "more.txt"]
    assert compared["shared_paths"] == ["app.py"]
    assert "against their common base" in helix("experiment", "compare", "fast", "slow")[0]
    tagged = helix.doc("log", "--meta", "experiment=slow", "slow-b")
    assert len(tagged) == 2 and all(c["meta"]["experiment"] == "slow" for c in tagged)
    picked = helix.doc("experiment", "pick", "fast")
    assert picked["status"] == "fast-forward" and picked["into"] == "main"
    assert helix.doc("rev-parse", "main")["id"] == fast
    assert helix.doc("log", "--meta", "experiment=fast")[0]["id"] == fast
    stopped = helix.doc("experiment", "stop")  # slow is the one still running
    assert stopped["name"] == "slow" and not stopped["running"]


def test_bad_input_is_refused_and_changes_nothing(helix: Cli) -> None:
    helix("experiment", "start", "a")
    before = helix.refs()
    for argv, says in (
        (("experiment", "start", "a"), "exists"),
        (("experiment", "start", "b", "--branch", "a"), "runs experiment"),
        (("experiment", "start", "c", "--from", "nope"), "nope"),
        (("experiment", "score", "a", "high"), "not a number"),
        (("experiment", "score", "a", "nan"), "finite"),
        (("experiment", "score", "zz", "1"), "no experiment 'zz'"),
        (("experiment", "score", "a", "1", "--metric", ""), "metric"),
        (("experiment", "compare", "a", "zz"), "no experiment 'zz'"),
        (("experiment", "pick", "zz"), "no experiment"),
        (("experiment", "stop", "zz"), "no experiment"),
    ):
        out, err = helix(*argv, code=1)
        assert says in err, (argv, err)
        doc = helix.doc(*argv, code=1)
        assert says in doc["error"]["message"]
    helix("experiment", "score", "a", "1", "2", code=2)  # usage
    helix("log", "--meta", "main", code=2)
    assert helix.refs() == before


def test_log_shows_meta_with_verbose_and_filters_by_it(helix: Cli) -> None:
    source = helix.tmp / "f"
    source.write_text("1\n")
    helix("commit", "-m", "tagged", "--meta", "agent=claude", f"f={source}")
    text = helix("log", "-v")[0]
    assert "    meta: agent=claude" in text
    assert "meta:" not in helix("log")[0]
    assert [c["message"] for c in helix.doc("log", "--meta", "agent=claude")] == ["tagged"]
    assert helix.doc("log", "--meta", "agent=other") == []
    assert "agent=claude" in helix("log", "--meta", "agent=claude", "--graph")[0]


def test_commit_without_paths_needs_a_mount(helix: Cli) -> None:
    _, err = helix("commit", "-m", "x", "--meta", "k=v", code=2)
    assert "pending saves" in err and "no mount" in err


def test_demo_on_an_existing_store_says_where_and_clean_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    helix = Cli(tmp_path / "store", tmp_path)
    helix("init")
    out, err = helix("demo")
    made = json.loads(helix("demo", "--json")[0])["store"]
    assert "helix demo --clean" in err and str(tmp_path) in err
    assert Path(made).is_dir() and Path(made).is_relative_to(tmp_path)
    cleaned = helix.doc("demo", "--clean")
    assert made in cleaned["removed"] and len(cleaned["removed"]) == 2
    assert not Path(made).exists() and (tmp_path / "store").is_dir()
    assert helix.doc("demo", "--clean")["removed"] == []
    helix("demo", "--clean", "somedir", code=2)
