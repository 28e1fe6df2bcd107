"""Git repositories built with the git CLI that hold what real projects hold, for
comparing `helix import --from-git` + `helix export` with git itself."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC"}


def run_git(repo: Path, *args: str | bytes, env: dict[str, str | bytes] | None = None) -> bytes:
    full = {os.fsencode(k): os.fsencode(v) for k, v in {**os.environ, **ENV}.items()}
    full.update({os.fsencode(k): os.fsencode(v) for k, v in (env or {}).items()})
    argv = [b"git", b"-C", os.fsencode(repo), *(os.fsencode(a) for a in args)]
    proc = subprocess.run(argv, capture_output=True, env=full)
    assert proc.returncode == 0, (argv, proc.stderr.decode(errors="replace"))
    return proc.stdout


def who(
    author: str | bytes = "Ada Lovelace <ada@example.org>",
    when: str = "1600000000 +0200",
    committer: str | bytes = "Carl Committer <carl@example.org>",
    committed: str | None = None,
) -> dict[str, str | bytes]:
    """The environment that makes git write these author and committer lines."""

    def split(person: str | bytes) -> tuple[bytes, bytes]:
        raw = os.fsencode(person)
        name, _, rest = raw.partition(b" <")
        return name, rest.rstrip(b">")

    (an, ae), (cn, ce) = split(author), split(committer)
    return {
        "GIT_AUTHOR_NAME": an,
        "GIT_AUTHOR_EMAIL": ae,
        "GIT_AUTHOR_DATE": f"@{when}",
        "GIT_COMMITTER_NAME": cn,
        "GIT_COMMITTER_EMAIL": ce,
        "GIT_COMMITTER_DATE": f"@{committed or when}",
    }


def write(repo: Path, name: str | bytes, content: bytes | str, mode: int = 0o644) -> None:
    path = os.path.join(os.fsencode(repo), os.fsencode(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as sink:
        sink.write(content.encode() if isinstance(content, str) else content)
    os.chmod(path, mode)


def link(repo: Path, name: str, target: str) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def commit(
    repo: Path,
    message: str | bytes,
    env: dict[str, str | bytes],
    *extra: str,
    config: tuple[str, ...] = (),
) -> str:
    """`git add -A` and commit (`extra`: --allow-empty; `config`: `-c` options)."""
    run_git(repo, "add", "-A")
    msg = repo.parent / f"{repo.name}.msg"
    msg.write_bytes(os.fsencode(message))
    run_git(repo, *config, "commit", "-q", "--no-verify", *extra, "-F", str(msg), env=env)
    return run_git(repo, "rev-parse", "HEAD").decode().strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True)
    run_git(repo, "init", "-q", "-b", "main")
    return repo


def kitchen_sink(root: Path) -> Path:
    """One repository with every kind of entry, date, encoding and graph shape."""
    sub = init(root / "sub")
    write(sub, "inside", "a submodule's file\n")
    commit(sub, "sub root", who())
    repo = init(root / "sink")
    rng = random.Random(7)
    write(repo, "README", "hello\n")
    write(repo, "run.sh", "#!/bin/sh\necho hi\n", 0o755)
    write(repo, "empty", b"")
    write(repo, "crlf.txt", b"line one\r\nline two\r\n")
    write(repo, "big.txt", "".join(f"line {i} of a big file\n" for i in range(60_000)))  # 1.5 MB
    write(repo, "big.bin", rng.randbytes(2 << 20))
    write(repo, b"caf\xe9 latin1.txt", "a name that is not UTF-8\n")
    write(repo, "sp ace\ttab", "odd name\n")
    write(repo, "src/lib/deep.py", "x = 1\n")
    write(repo, "src/main.py", "import lib\n")
    link(repo, "rel-link", "README")
    link(repo, "abs-link", "/etc/hostname")
    link(repo, "dangling", "no/such/file")
    link(repo, "dir-link", "src/lib")
    link(repo, "up-link", "../outside")
    commit(
        repo,
        "root: every kind of entry\n\nwith a body\n",
        who(when="1600000000 +0530", committed="1600000500 -0800"),
    )
    commit(repo, "empty commit", who(when="1600001000 -1100"), "--allow-empty")
    write(repo, "big.txt", "changed head\n" + (repo / "big.txt").read_text()[10:])
    os.chmod(repo / "run.sh", 0o644)
    os.chmod(repo / "README", 0o755)
    commit(
        repo,
        "caf\xe9 in latin-1\n".encode("latin-1"),
        who(author="Jos\xe9 <j@example.org>".encode("latin-1"), when="1600002000 +1400"),
        config=("-c", "i18n.commitEncoding=latin1"),
    )
    run_git(repo, "mv", "src/lib", "src/renamed")
    run_git(repo, "rm", "-q", "sp ace\ttab")
    write(repo, "README", "hello\r\nnow crlf\r\n", 0o755)
    commit(repo, "rename a folder, delete a file", who(when="1600003000 -0330"))
    run_git(repo, "rm", "-q", "-r", "src")
    (repo / "rel-link").unlink()
    write(repo, "rel-link", "a file where a link was\n")
    (repo / "empty").unlink()
    write(repo, "empty/now-a-dir", "")
    commit(repo, "delete a folder, change entry kinds", who(when="1600004000 +0000"))
    run_git(
        repo,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(sub),
        "modules/sub",
        env=who(),
    )
    commit(repo, "add a submodule", who(when="1600005000 +0100"))
    # branches off main: a two-parent merge and an octopus
    run_git(repo, "checkout", "-q", "-b", "topic/a")
    write(repo, "a.txt", "from a\n")
    commit(repo, "topic a", who(author="Bob <bob@example.org>", when="1600006000 +0900"))
    run_git(repo, "checkout", "-q", "-b", "topic-b", "main")
    write(repo, "b.txt", "from b\n")
    commit(repo, "topic b", who(when="4102444800 +0000"))  # 2100
    run_git(repo, "checkout", "-q", "-b", "topic-c", "main")
    write(repo, "c.txt", "from c\n")
    commit(repo, "topic c", who(when="7258118400 -0700"))  # 2200
    run_git(repo, "checkout", "-q", "main")
    write(repo, "main.txt", "main moves on\n")
    commit(repo, "main moves", who(when="1600007000 +0200"))
    run_git(
        repo,
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge topic a",
        "topic/a",
        env=who(when="1600008000 +0200"),
    )
    run_git(
        repo,
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "octopus of b and c",
        "topic-b",
        "topic-c",
        env=who(when="1600009000 +0200"),
    )
    run_git(repo, "checkout", "-q", "-b", "topic-d", "HEAD~1")
    write(repo, "d.txt", "from d, dropped by the merge\n")
    commit(repo, "topic d", who(when="1600009500 +0200"))
    run_git(repo, "checkout", "-q", "main")
    ours = who(when="1600010000 +0200")
    run_git(
        repo,
        "merge",
        "-q",
        "-s",
        "ours",
        "-m",
        "ours: the tree of its first parent",
        "topic-d",
        env=ours,
    )
    run_git(repo, "tag", "light", "HEAD~2")
    run_git(repo, "tag", "-a", "-m", "annotated", "v1.0", env=who())
    # an orphan branch: a second root
    run_git(repo, "checkout", "-q", "--orphan", "pages")
    run_git(repo, "rm", "-q", "-r", "--cached", ".")
    for path in repo.iterdir():
        if path.name != ".git":
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    write(repo, "index.html", "<p>pages</p>\n")
    commit(repo, "pages root", who(when="0 +0000"))
    write(repo, "index.html", "<p>pages 2</p>\n")
    commit(repo, "pages two", who(when="86400 -1200"))
    run_git(repo, "tag", "-a", "-m", "on the orphan", "pages-v1", env=who())
    run_git(repo, "checkout", "-q", "-f", "main")
    return repo
