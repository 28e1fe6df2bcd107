"""The compiled hook launcher (cli/hook_launch.c, ADR 0080): the mounted path of
hook_forward.py without an interpreter's start, which is half the hook's 20 ms budget.

`helix hooks install` builds it with the C compiler into the user's cache folder, named
by a hash of its source and the compiler (a changed source is a new file, so a hook never
runs a launcher older than its tree). With no compiler, or a build that fails, the hooks
run the Python launcher, as before; so does the compiled one itself, for every case but
a daemon that answers.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "cli" / "hook_launch.c"
NAME = "hook_launch"  # claude_hooks.is_ours finds the entries by this word
BUILD_SECONDS = 120
FLAGS = ("-O2", "-std=gnu11", "-w")


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC") or "cc")


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "helixfs"


def binary_path(cc: str) -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes() + cc.encode() + " ".join(FLAGS).encode())
    return cache_folder() / f"{NAME}-{digest.hexdigest()[:16]}"


def existing() -> Path | None:
    """The launcher built for this source, if it is there (nothing is built)."""
    cc = compiler()
    if cc is None or not SOURCE.is_file():
        return None
    path = binary_path(cc)
    return path if os.access(path, os.X_OK) else None


def build() -> Path | None:
    """The compiled launcher, built if it is not there yet; None when it cannot be."""
    cc = compiler()
    if cc is None or not SOURCE.is_file():
        return None
    target = binary_path(cc)
    if os.access(target, os.X_OK):
        return target
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [cc, *FLAGS, "-o", str(partial), str(SOURCE)],
            capture_output=True,
            timeout=BUILD_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            return None
        os.replace(partial, target)  # whole or absent: a hook may run it at any moment
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        partial.unlink(missing_ok=True)
    return target
