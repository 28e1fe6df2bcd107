"""Experiments in a running mount: the daemon's saves are tagged from the moment
`helix experiment start` (run through it) returns, and `helix commit -m` without paths
cuts its pending saves (ADR 0060)."""

from __future__ import annotations

import json
from typing import Any

from mount_harness import MountFactory


def test_saves_in_a_mount_are_tagged_while_an_experiment_runs(make_mount: MountFactory) -> None:
    mount = make_mount(60_000)  # only the commands below cut commits

    def doc(*argv: str, check: bool = True) -> Any:
        return json.loads(mount.helix(*argv, "--json", check=check).stdout)

    assert doc("experiment", "start", "e1")["branch"] == "e1"
    work = mount.path / ".helix" / "branches" / "e1"
    (work / "a.txt").write_text("one\n")
    saved = mount.log("e1")[0]  # a read cuts the pending saves, as the quiet window would
    assert saved["meta"]["experiment"] == "e1" and saved["meta"]["changed"] == ["a.txt"]
    assert saved["meta"]["process"]  # the saver is still named

    (work / "b.txt").write_text("two\n")
    made = doc("commit", "-m", "try 2", "--meta", "run=2", "--branch", "e1")
    cut = mount.log("e1")[0]
    assert cut["id"] == made["commit"] and cut["message"] == "try 2"
    assert cut["meta"]["run"] == "2" and cut["meta"]["experiment"] == "e1"
    assert cut["meta"]["changed"] == ["b.txt"]
    refused = doc("commit", "-m", "again", "--branch", "e1", check=False)
    assert "nothing to commit" in refused["error"]["message"]
    assert mount.log("e1")[0]["id"] == cut["id"]

    (work / "c.txt").write_text("three\n")
    scored = doc("experiment", "score", "e1", "0.8")
    assert scored["commit"] == mount.log("e1")[0]["id"]  # the saves it was tested on
    doc("experiment", "stop", "e1")
    (work / "d.txt").write_text("after\n")
    assert "experiment" not in mount.log("e1")[0]["meta"]
    (listed,) = doc("experiment", "list")["experiments"]
    assert listed["commits"] == 3 and listed["score"] == 0.8

    assert doc("experiment", "pick", "e1")["status"] == "fast-forward"
    assert (mount.path / "c.txt").read_text() == "three\n"  # main's files moved
    assert not (mount.path / "d.txt").exists()  # after the stop: not the experiment's

    doc("experiment", "start", "e2", "--checkout")
    assert "experiment e2 runs here" in (mount.path / ".helix" / "status").read_text()
    assert doc("status")["experiment"] == "e2"
    (mount.path / "x.txt").write_text("on e2\n")
    assert mount.log("e2")[0]["meta"]["experiment"] == "e2"
    assert "x.txt" not in {e["name"] for e in doc("ls", "main")}
    # a fleet: another experiment at once, on its own branch; each save keeps its own
    doc("experiment", "start", "e3", "--from", "main")
    (mount.path / ".helix" / "branches" / "e3" / "y.txt").write_text("on e3\n")
    (mount.path / "z.txt").write_text("on e2 again\n")
    assert mount.log("e3")[0]["meta"]["experiment"] == "e3"
    assert mount.log("e2")[0]["meta"]["experiment"] == "e2"
    assert {e["name"]: e["commits"] for e in doc("experiment", "list")["experiments"]} == {
        "e1": 3,
        "e2": 2,
        "e3": 1,
    }
