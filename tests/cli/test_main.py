"""The `helix` front end: exit codes, usage errors, store resolution, in-process runs."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helixfs.cli.main import run_in_process
from helixfs.cli.store_path import resolve_store
from helixfs.vcs.repo import Repository

from .conftest import fails, ok, run_helix


def test_help_and_version_exit_0(tmp_path: Path) -> None:
    assert "usage: helix" in ok(run_helix("--help", store=None)).out
    assert ok(run_helix("--version", store=None)).out.startswith("helix ")
    assert "REV" in ok(run_helix("log", "--help", store=None)).out


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    fails(run_helix("no-such-command", store=None), 2, says="invalid choice")
    fails(run_helix("cat", "HEAD", store=tmp_path / "s"), 2, says="required")
    result = fails(run_helix("log", "-n", "zero", store=tmp_path / "s"), 2, says="not a number")
    assert "_positive" not in result.err  # argparse named our function in the message
    fails(run_helix(store=None), 2)


def test_missing_store_is_one_clear_line(tmp_path: Path) -> None:
    result = fails(run_helix("log", store=tmp_path / "nowhere"), says="no HelixFS store")
    assert "helix init" in result.err


def test_init_twice_fails_and_keeps_the_store(tmp_path: Path) -> None:
    store = tmp_path / "s"
    ok(run_helix("init", store=store))
    head = ok(run_helix("rev-parse", "HEAD", store=store)).out
    fails(run_helix("init", store=store), says="already exists")
    assert ok(run_helix("rev-parse", "HEAD", store=store)).out == head


def test_a_file_named_objects_is_no_store_for_init_either(tmp_path: Path) -> None:
    """QA: `log` said "no HelixFS store (create one with `helix init`)" and `init` then
    said "a HelixFS store already exists"."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "objects").write_text("not a database\n")
    fails(run_helix("log", store=tmp_path / "s"), says="no HelixFS store")
    fails(run_helix("init", store=tmp_path / "s"), says="objects is not a folder")
    assert (tmp_path / "s" / "objects").read_text() == "not a database\n"


def test_a_folder_named_objects_without_a_database_is_no_store(tmp_path: Path) -> None:
    """QA: `helix log` on a folder whose objects/ is someone's own folder made a RocksDB
    in it (a read command writing files), and `init` called it a store that exists."""
    objects = tmp_path / "s" / "objects"
    objects.mkdir(parents=True)
    (objects / "notes.txt").write_text("mine\n")
    fails(run_helix("log", store=tmp_path / "s"), says="holds no HelixFS database")
    fails(run_helix("init", store=tmp_path / "s"), says="holds no HelixFS database")
    assert [p.name for p in objects.iterdir()] == ["notes.txt"]
    (objects / "notes.txt").unlink()  # empty, as an init stopped before RocksDB leaves it
    ok(run_helix("init", store=tmp_path / "s"))
    ok(run_helix("log", store=tmp_path / "s"))


def test_init_takes_a_path_argument(tmp_path: Path) -> None:
    doc = ok(run_helix("init", "--json", tmp_path / "here", store=None)).json()
    assert Path(doc["store"]) == (tmp_path / "here").resolve()
    ok(run_helix("log", store=tmp_path / "here"))


def test_console_script_is_installed(tmp_path: Path) -> None:
    helix = shutil.which("helix")
    assert helix, "the `helix` console script is not on PATH (pip install -e .)"
    proc = subprocess.run([helix, "--store", str(tmp_path / "x"), "init"], capture_output=True)
    assert proc.returncode == 0, proc.stderr


def test_store_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mp = monkeypatch
    mp.setenv("HOME", str(tmp_path / "home"))
    mp.delenv("HELIX_STORE", raising=False)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert resolve_store(None, plain) == tmp_path / "home" / ".helix" / "default"
    mount = tmp_path / "mnt"
    (mount / ".helix").mkdir(parents=True)
    (mount / ".helix" / "store").write_text(str(tmp_path / "mounted") + "\n")
    (mount / "deep" / "er").mkdir(parents=True)
    assert resolve_store(None, mount / "deep" / "er") == tmp_path / "mounted"
    mp.setenv("HELIX_STORE", str(tmp_path / "env"))
    assert resolve_store(None, mount) == tmp_path / "env"
    assert resolve_store(str(tmp_path / "flag"), mount) == tmp_path / "flag"


def test_default_store_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(run_helix("init", store=None, home=home, cwd=tmp_path))
    assert (home / ".helix" / "default").is_dir()
    ok(run_helix("log", store=None, home=home, cwd=tmp_path))


def test_store_option_after_the_command(tmp_path: Path) -> None:
    ok(run_helix("init", store=tmp_path / "s"))
    assert "main" in ok(run_helix("branch", "--store", str(tmp_path / "s"), store=None)).out


def test_env_store_is_used(tmp_path: Path) -> None:
    store = tmp_path / "envstore"
    ok(run_helix("init", store=store))
    out = ok(run_helix("branch", store=None, env={"HELIX_STORE": str(store)}, cwd=tmp_path)).out
    assert "main" in out


def test_commit_in_the_daemon_compares_with_the_head_after_pending_saves(
    tmp_path: Path,
) -> None:
    """A mount's unsaved write of the same bytes: the settle committed it under its own
    message, then `commit -m mine` changed nothing, yet said 'changed': true with the
    settle's id, so a script believed its message was in the log."""
    (tmp_path / "fc").write_bytes(b"content\n")
    with Repository.init(tmp_path / "s") as repo:
        tree = repo.worktree()
        tree.set_content(tree.create(tree.root, b"f", 0o100644), b"content\n")
        assert tree.dirty
        out, err = io.StringIO(), io.StringIO()
        argv = ["commit", "--json", "-m", "mine", f"f={tmp_path / 'fc'}"]
        assert run_in_process(argv, repo, out, err) == 0, err.getvalue()
        doc = json.loads(out.getvalue())
        head = repo.commit_info("HEAD")
        assert doc["changed"] is False and doc["commit"] == head.id.hex()
        assert head.message != "mine" and repo.read("HEAD", "f") == b"content\n"


READS_OF_A_LIVE_BRANCH = [
    (["log", "HEAD", "f", "--json"], '"f"'),
    (["cat", "HEAD", "f"], "content"),
    (["ls", "main", "--json"], '"f"'),
    (["diff", "HEAD~1", "--name-status"], "A  f"),
    (["export", "@", "out"], "exported 1 files"),
]


@pytest.mark.parametrize(("argv", "shows"), READS_OF_A_LIVE_BRANCH)
def test_a_read_in_the_daemon_sees_the_saves_of_the_quiet_window(
    tmp_path: Path, argv: list[str], shows: str
) -> None:
    """A mount with a quiet window: `helix log HEAD f` right after saving f answered
    that f was in no commit; a read of the live branch commits its pending saves first
    (the commit the window would have cut, under its usual message)."""
    with Repository.init(tmp_path / "s") as repo:
        tree = repo.worktree()
        tree.set_content(tree.create(tree.root, b"f", 0o100644), b"content\n")
        tree.save()
        out, err = io.StringIO(), io.StringIO()
        argv = [str(tmp_path / a) if a == "out" else a for a in argv]
        assert run_in_process(argv, repo, out, err) == 0, err.getvalue()
        assert shows in out.getvalue() and not tree.dirty
        head = repo.commit_info("HEAD")
        assert head.meta["changed"] == ["f"] and "out-of-band" not in head.message


def test_log_of_a_file_saved_within_the_quiet_window_is_its_path_log(
    tmp_path: Path,
) -> None:
    """`helix log f` (a path where a rev goes) is f's log, as in git: for a file just
    saved, still in its quiet window, it was missing (HEAD read unsettled)."""
    with Repository.init(tmp_path / "s") as repo:
        tree = repo.worktree()
        tree.set_content(tree.create(tree.root, b"f", 0o100644), b"content\n")
        tree.save()
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["log", "--json", "f"], repo, out, err) == 0, err.getvalue()
        assert [c["meta"]["changed"] for c in json.loads(out.getvalue())] == [["f"]]


def test_run_in_process_captures_output_and_errors(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["rev-parse", "HEAD"], repo, out, err) == 0
        assert out.getvalue().strip() == repo.resolve("HEAD").hex()
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["cat", "HEAD", "missing.txt"], repo, out, err) == 1
        assert err.getvalue().startswith("helix: error: ") and out.getvalue() == ""
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["bogus"], repo, out, err) == 2
        assert "invalid choice" in err.getvalue()
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["--help"], repo, out, err) == 0
        assert "usage: helix" in out.getvalue()


def test_command_index_names_the_registering_module() -> None:
    import argparse
    import importlib

    from helixfs.cli.main import COMMAND_INDEX, COMMAND_MODULES, modules_for

    for module in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        importlib.import_module(module).register(parser.add_subparsers())
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for name in actions[0].choices:
            assert COMMAND_INDEX.get(name, module) == module, f"{name} is in {module}"
    assert modules_for(["--store", "log", "log", "-n", "1"]) == ("helixfs.cli.history",)
    assert modules_for(["--json", "branch"]) == ("helixfs.cli.refs",)
    assert modules_for(["--help"]) == COMMAND_MODULES
    assert modules_for(["no-such-command"]) == COMMAND_MODULES


def test_stdin_is_refused_in_the_daemon(tmp_path: Path) -> None:
    with Repository.init(tmp_path / "s") as repo:
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["commit", "-m", "x", "a.txt=-"], repo, out, err) == 1
        assert "stdin" in err.getvalue() and repo.log().__next__().message == "init"


JSON_FAILURES = [
    (["log", "HEAD~99", "--json"], 1, "NotFound", "past the first commit"),
    (["--json", "branch", "-d", "main"], 1, "InvalidInput", "current branch"),
    (["export", "HEAD", "proj", "--json"], 1, "InvalidInput", "not an empty folder"),
    (["import", "--json"], 2, "UsageError", "either DIR or --from-git"),
    (["log", "--bogus", "--json"], 2, "UsageError", "unrecognized arguments: --bogus"),
    (["stats", "--json", "--store", "nowhere"], 1, "NotFound", "no HelixFS store"),
]


@pytest.mark.parametrize(("argv", "code", "kind", "says"), JSON_FAILURES)
def test_a_failure_under_json_is_one_document_too(
    tmp_path: Path, argv: list[str], code: int, kind: str, says: str
) -> None:
    """QA: with --json a failure left stdout empty (json.loads failed on it) while fsck
    and merge conflicts printed a document: a caller could not tell without knowing."""
    store = tmp_path / "store"
    ok(run_helix("init", store=store))
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.txt").write_text("a\n")
    result = fails(run_helix(*argv, store=store, cwd=tmp_path), code, says=says)
    error = result.json()["error"]
    assert error["kind"] == kind and says in error["message"] and error["exit"] == code
    assert result.err.count("helix: error:") == 1 and "Traceback" not in result.err


def test_a_failure_under_json_in_the_daemon_is_one_document(tmp_path: Path) -> None:
    """The same path runs forwarded commands (ADR 0002)."""
    with Repository.init(tmp_path / "s") as repo:
        for argv, code in ((["cat", "HEAD", "nope", "--json"], 1), (["log", "-x", "--json"], 2)):
            out, err = io.StringIO(), io.StringIO()
            assert run_in_process(argv, repo, out, err) == code
            assert json.loads(out.getvalue())["error"]["exit"] == code
            assert err.getvalue().count("helix: error:") == 1


def test_ctrl_c_under_json_is_one_document_too(tmp_path: Path) -> None:
    """A command interrupted under --json printed "helix: interrupted" on stderr and
    nothing on stdout. It waits here in the open of a FIFO that nobody writes."""
    store = tmp_path / "store"
    ok(run_helix("init", store=store))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "helixfs.cli.main", "--store", str(store)]
    client = subprocess.Popen(
        [*argv, "commit", "--json", "-m", "m", f"a.txt={fifo}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_fifo_reader(client, fifo)
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=30)
    finally:
        client.kill()
    assert client.returncode == 130, err
    assert json.loads(out) == {
        "error": {"kind": "Interrupted", "message": "interrupted", "exit": 130}
    }
    assert err == "helix: interrupted\n"


def _wait_for_fifo_reader(client: subprocess.Popen[str], fifo: Path) -> None:
    """Until the client waits in the open of `fifo` (its stack says fifo_open). A loaded
    host may take many seconds to start it: the wait is long, and ends if it exits."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and client.poll() is None:
        try:
            if "fifo_open" in Path(f"/proc/{client.pid}/stack").read_text():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the command never opened the FIFO (exit {client.poll()})")


def test_the_daemon_runs_every_memory_command_on_a_worker_thread() -> None:
    """The daemon's list of memory commands (run off the FUSE loop) is the memory
    module's whole list: a new one left out would stop the mount while it ran. So is
    the CLI's index of them: one left out would load every command module."""
    import argparse

    from helixfs.cli import memory
    from helixfs.cli.main import COMMAND_INDEX
    from helixfs.daemon.control_server import MEMORY_COMMANDS

    parser = argparse.ArgumentParser()
    memory.register(parser.add_subparsers())
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(actions[0].choices) == MEMORY_COMMANDS
    assert {c for c, m in COMMAND_INDEX.items() if m == "helixfs.cli.memory"} == MEMORY_COMMANDS
