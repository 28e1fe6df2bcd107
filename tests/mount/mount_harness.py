"""The real-mount harness shared by the tests in this folder (fixtures: conftest.py).

Each mount is a `helix mount --foreground` subprocess (the same code path users run),
started on a fresh store in a tmp dir, and driven with ordinary tools in subprocesses.
Teardown always detaches the mount (`fusermount3 -u`, then `-u -z`) and ends the daemon,
whatever the test did, so a failing test never leaves a mount or a process behind.

Without a usable /dev/fuse these tests skip on a developer machine but FAIL under CI
(CI=true): a CI run that silently skipped the real-mount suite would prove nothing.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import pytest

from helixfs.daemon.mountinfo import SELF, helix_mounts_in

HELIX = [sys.executable, "-m", "helixfs.cli.main"]
START_TIMEOUT = 90.0
STOP_TIMEOUT = 90.0


def fuse_problem() -> str | None:
    """Why real mounts cannot run here, or None if they can."""
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed"
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError as exc:
        return f"/dev/fuse is not usable: {exc}"
    os.close(fd)
    return None


def require_fuse() -> None:
    problem = fuse_problem()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"real-mount tests cannot run in CI: {problem}", pytrace=False)
    pytest.skip(problem)


def need(*tools: str) -> None:
    """Fail (never skip) when a tool a workload runs is missing: .ci/run installs them."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing tools: {missing} (.ci/run's apt line installs them)")


def helix(*args: str | Path, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run the `helix` CLI in a subprocess, as a user would."""
    done = subprocess.run(
        [*HELIX, *map(str, args)], capture_output=True, text=True, timeout=120, **kwargs
    )
    if check and done.returncode != 0:
        raise AssertionError(f"helix {args} exited {done.returncode}:\n{done.stderr}{done.stdout}")
    return done


def sh(
    command: str, cwd: Path, *, check: bool = True, timeout: float = 240, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """A shell command line run inside the mount (or anywhere)."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"`{command}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def run_both(mnt: Mount, tmp_path: Path, session: str) -> tuple[Path, str, str]:
    """`session` in the mount's `work/` and in a local `work/`: the mount's folder, and
    each run's output (stdout, stderr and exit status)."""
    outputs = []
    for root in (mnt.path, tmp_path):
        work = root / "work"
        work.mkdir()
        done = sh(session, work, check=False)
        outputs.append(f"{done.stdout}{done.stderr}exit={done.returncode}\n")
    return mnt.path / "work", outputs[0], outputs[1]


def wait_until(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    """Poll for an asynchronous effect (a quiet-window commit); never a timing assertion."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.05)


def detach(path: Path) -> None:
    """Unmount: cleanly first (the daemon then commits and exits), and if that fails or
    hangs, `fusermount3 -u -z`, which always detaches."""
    for flags in (["-u"], ["-u", "-z"]):
        try:
            done = subprocess.run(
                ["fusermount3", *flags, str(path)],
                capture_output=True,
                text=True,
                check=False,
                timeout=20,
            )
        except subprocess.TimeoutExpired:
            continue
        if done.returncode == 0 or "not mounted" in done.stderr or "not found" in done.stderr:
            return


def read_until_line(fd: int, prefix: str, timeout: float) -> tuple[bool, str]:
    """Read a pipe until a line starts with `prefix` (True) or it ends or times out.

    Raw reads of the descriptor: a buffered readline() after select() can swallow the
    awaited line into its buffer along with an earlier one, and select() then waits for
    data that has already arrived.
    """
    deadline = time.monotonic() + timeout
    text = b""
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 0.5)[0]:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        text += chunk
        if any(line.startswith(prefix.encode()) for line in text.splitlines()):
            return True, text.decode(errors="replace")
    return False, text.decode(errors="replace")


def helix_mounts_under(base: Path, mountinfo: Path = SELF) -> list[Path]:
    """HelixFS mount points in `base` or below it; not beside it: pytest-79's mounts
    are not pytest-795's (a name that merely starts the same)."""
    return [m.point for m in helix_mounts_in(mountinfo) if base in (m.point, *m.point.parents)]


def is_mounted(path: Path) -> bool:
    target = str(path)
    with open("/proc/self/mountinfo") as info:
        return any(line.split(" ")[4] == target for line in info)


@dataclass
class Mount:
    store: Path
    path: Path
    proc: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)
    ended: str = "still running"  # how the daemon ended, for a failing test's report

    def helix(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        return helix("--store", self.store, *args, check=check)

    def log(self, rev: str = "HEAD", limit: int | None = None) -> list[dict[str, Any]]:
        extra = ["-n", str(limit)] if limit else []
        commits: list[dict[str, Any]] = json.loads(self.helix("log", rev, "--json", *extra).stdout)
        return commits

    def head(self) -> str:
        return str(self.log(limit=1)[0]["id"])

    def sh(
        self, command: str, *, check: bool = True, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        return sh(command, self.path, check=check, **kwargs)

    def assert_exits_cleanly(self, timeout: float = 60.0) -> None:
        """The daemon exits 0 within `timeout`; if not, the failure shows what it said."""
        assert self.proc is not None and self.proc.stdout is not None
        code = self.proc.wait(timeout)
        assert code == 0, f"daemon exited {code}: {self.proc.stdout.read()}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*HELIX, "mount", "--foreground", *extra, str(self.store), str(self.path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        found, text = read_until_line(self.proc.stdout.fileno(), "mounted ", START_TIMEOUT)
        self.output.append(text)
        if not found:
            self.stop()
            raise AssertionError("the mount did not come up:\n" + "".join(self.output))

    def stop(self) -> int | None:
        """Unmount and end the daemon; its exit status (None if it had to be killed)."""
        # before the unmount: a daemon that died under the test is told from one
        # that exited because we unmounted it
        dead_before = self.proc is not None and self.proc.poll() is not None
        detach(self.path)
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        try:
            code = proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            code = None
        self.ended = describe_exit(proc.returncode, forced=code is None)
        if dead_before:
            self.ended += ", before the test's teardown unmounted it"
        if proc.stdout is not None:
            self.output.append(proc.stdout.read())
            proc.stdout.close()
        return code

    def kill9(self, *, leave_dead_mount: bool = False) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.ended = "killed with SIGKILL by the test"
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
        if not leave_dead_mount:
            detach(self.path)


MountFactory = Callable[..., Mount]


def describe_exit(returncode: int, *, forced: bool = False) -> str:
    """A daemon's end in words: its exit status, or the signal that killed it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        how = f"killed by {name}" + (" (the OOM killer? dmesg says)" if name == "SIGKILL" else "")
    else:
        how = f"exited with status {returncode}"
    return how + (" (it did not exit when unmounted; the harness signalled it)" if forced else "")


class Background:
    """`count` threads, each running `self.run(n)` until the `with` block ends (they
    poll `self.stopping`); what goes wrong goes into `self.errors`."""

    def __init__(self, count: int) -> None:
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self._threads = [threading.Thread(target=self.run, args=(n,)) for n in range(count)]

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self._threads:
            thread.join()

    def run(self, n: int) -> None:
        raise NotImplementedError
