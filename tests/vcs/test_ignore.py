"""Ignore rules against git's own answer: each case is a tree on disk with rule files,
and every path in it is asked of `git check-ignore` and of vcs/ignore.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helixfs.vcs.ignore import (
    NO_RULES,
    RuleFiles,
    Scope,
    compile_rules,
    repo_on_disk,
    rules_on_disk,
    user_excludes_path,
)

# Each case: path -> content (a path ending in "/" is an empty folder). A `.helixignore`
# is given to git appended to the `.gitignore` beside it: the same precedence. The keys
# USER_XDG and USER_CONFIG are the user's excludes file, at its default place
# ($XDG_CONFIG_HOME/git/ignore) or named by core.excludesFile.
USER_XDG, USER_CONFIG = "~xdg", "~config"
CASES: dict[str, dict[str, str]] = {
    "basename, anchored, folder-only": {
        ".gitignore": "*.o\nbuild/\n/root_only\ndoc/*.txt\n",
        "a.o": "",
        "src/b.o": "",
        "src/c.c": "",
        "build/x": "",
        "src/build/y": "",
        "root_only": "",
        "src/root_only": "",
        "doc/a.txt": "",
        "doc/sub/b.txt": "",
        "src/doc/c.txt": "",
    },
    "negation and excluded parents": {
        ".gitignore": "*.log\n!keep.log\nlogs/\n!logs/keep.log\n/out/*\n!/out/keep\n",
        "a.log": "",
        "keep.log": "",
        "sub/keep.log": "",
        "logs/keep.log": "",
        "logs/other": "",
        "out/keep": "",
        "out/drop": "",
        "out/sub/x": "",
    },
    "nested files, deeper wins": {
        ".gitignore": "*.tmp\n*.dat\n",
        "a.tmp": "",
        "x.dat": "",
        "sub/.gitignore": "!special.tmp\n/local.txt\n",
        "sub/special.tmp": "",
        "sub/other.tmp": "",
        "sub/local.txt": "",
        "sub/deep/local.txt": "",
        "sub/deep/.gitignore": "!x.dat\n",
        "sub/deep/x.dat": "",
        "sub/deep/y.dat": "",
        "sub/deep/special.tmp": "",
    },
    "double stars": {
        ".gitignore": "**/cache\na/**/b\nlogs/**\n**/foo/bar\nx**y\n/deep/**/*.gen\n",
        "cache": "",
        "src/cache/f": "",
        "a/b": "",
        "a/x/b": "",
        "a/x/y/b": "",
        "c/a/b": "",
        "logs/one": "",
        "logs/sub/two": "",
        "foo/bar": "",
        "q/foo/bar": "",
        "xzzy": "",
        "x/y": "",
        "deep/a.gen": "",
        "deep/k/l/b.gen": "",
        "other/deep/c.gen": "",
    },
    "character classes": {
        ".gitignore": (
            "*.[oa]\nfile[0-9].txt\n[!a]*.c\n[[:digit:]]*\n[]x].md\n[a-]z\nun[closed\n"
            "[[:bogus:]]q\n[[:upper:][:punct:]]u\nr[^b]s\n"
        ),
        "m.o": "",
        "m.a": "",
        "m.b": "",
        "file5.txt": "",
        "fileX.txt": "",
        "abc.c": "",
        "bcd.c": "",
        "7up": "",
        "].md": "",
        "x.md": "",
        "y.md": "",
        "az": "",
        "-z": "",
        "bz": "",
        "un[closed": "",
        "bogusq": "",
        "Bu": "",
        "_u": "",
        "bu": "",
        "ras": "",
        "rbs": "",
    },
    "escapes, comments, trailing spaces": {
        ".gitignore": (
            "\\#hash\n\\!bang\n#comment\ntrailing   \nescaped\\ \ntab\t\n\\*star\nq\\?\n"
        ),
        "#hash": "",
        "!bang": "",
        "#comment": "",
        "comment": "",
        "trailing": "",
        "trailing   ": "",
        "escaped ": "",
        "escaped": "",
        "tab\t": "",
        "tab": "",
        "*star": "",
        "xstar": "",
        "q?": "",
        "qq": "",
    },
    "folder-only against files": {
        ".gitignore": "thing/\n*.d/\nsub/inner/\n",
        "thing": "",
        "a/thing/x": "",
        "b.d": "",
        "c.d/f": "",
        "sub/inner/f": "",
        "x/sub/inner/f": "",
    },
    "helixignore after gitignore": {
        ".gitignore": "*.o\n!keep.o\n",
        ".helixignore": "keep.o\n!main.o\nnode_modules/\n",
        "a.o": "",
        "keep.o": "",
        "main.o": "",
        "node_modules/pkg/index.js": "",
        "src/.helixignore": "*.cache\n",
        "src/.gitignore": "!z.cache\n",
        "src/z.cache": "",
        "src/y.cache": "",
        "src/main.o": "",
    },
    "info/exclude and the user's excludes, under every .gitignore": {
        ".git/info/exclude": "*.x\n!keep.u\n/top.e\nbin/\n",
        USER_XDG: "*.u\n!keep.x\n*.w\n",
        ".gitignore": "!a.x\n",
        "a.x": "",
        "b.x": "",
        "keep.x": "",
        "keep.u": "",
        "c.u": "",
        "top.e": "",
        "sub/top.e": "",
        "sub/d.u": "",
        "sub/.gitignore": "!e.w\n",
        "sub/e.w": "",
        "sub/f.w": "",
        "bin/tool": "",
    },
    "core.excludesFile over the default place": {
        USER_CONFIG: "*.cfg\n/only_top\n",
        USER_XDG: "*.xdg\n",
        "a.cfg": "",
        "b.xdg": "",
        "only_top": "",
        "sub/only_top": "",
        "sub/c.cfg": "",
    },
    "BOM and CRLF": {
        ".gitignore": "\ufeff*.bak\r\nfolder/\r\n",
        "a.bak": "",
        "folder/x": "",
        "b.txt": "",
    },
}


def user_files(home: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's excludes of a case, where git (and we) look: the environment names
    the global config and XDG_CONFIG_HOME, no system config is read."""
    config = home / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    if USER_XDG in files:
        (home / "xdg" / "git").mkdir(parents=True)
        (home / "xdg" / "git" / "ignore").write_text(files[USER_XDG])
    if USER_CONFIG in files:
        (home / "excludes").write_text(files[USER_CONFIG])
        config.write_text(f"[core]\n\texcludesFile = {home / 'excludes'}\n")


def build(root: Path, files: dict[str, str], *, for_git: bool) -> None:
    root.mkdir(parents=True, exist_ok=True)
    if for_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    for path, text in files.items():
        if path.startswith("~"):
            continue
        target = root / path
        if path.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        if for_git and target.name == ".gitignore":
            beside = files.get(str(Path(path).with_name(".helixignore")))
            if beside is not None:
                data = data.rstrip(b"\n") + b"\n" + beside.encode()
        target.write_bytes(data)
    if for_git:
        for path, text in files.items():  # a .helixignore alone: git reads it as one
            if Path(path).name == ".helixignore":
                gitignore = root / Path(path).with_name(".gitignore")
                if not gitignore.exists():
                    gitignore.write_bytes(text.encode())


def every_path(root: Path) -> list[bytes]:
    found = []
    for folder, dirs, names in os.walk(os.fsencode(root)):
        dirs[:] = [d for d in dirs if d != b".git"]
        for name in dirs + names:
            found.append(os.path.relpath(os.path.join(folder, name), os.fsencode(root)))
    return sorted(found)


def git_ignored(root: Path, paths: list[bytes]) -> set[bytes]:
    done = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--stdin", "-z", "--no-index"],
        input=b"\0".join(paths) + b"\0",
        capture_output=True,
    )
    assert done.returncode in (0, 1), done.stderr
    return {p for p in done.stdout.split(b"\0") if p}


def our_ignored(root: Path) -> set[bytes]:
    ignored: set[bytes] = set()
    files = RuleFiles(lambda oid: b"")  # only its user excludes are asked for

    def walk(folder: bytes, rel: bytes, outer: Scope) -> None:
        scope = outer.with_rules(rules_on_disk(folder), repo_on_disk(folder, outer, files))
        for entry in os.scandir(folder):
            if entry.name == b".git":
                continue
            path = rel + entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if scope.ignored(entry.name, is_dir):
                ignored.add(path)
                if is_dir:
                    for inner in every_path(Path(os.fsdecode(entry.path))):
                        ignored.add(path + b"/" + inner)
            elif is_dir:
                walk(entry.path, path + b"/", scope.below(entry.name))

    walk(os.fsencode(root), b"", NO_RULES)
    return ignored


@pytest.mark.parametrize("case", list(CASES))
def test_same_answer_as_git_check_ignore(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours_root, git_root = tmp_path / "ours", tmp_path / "git"
    user_files(tmp_path, CASES[case], monkeypatch)
    build(ours_root, CASES[case], for_git=False)
    build(git_root, CASES[case], for_git=True)
    paths = every_path(ours_root)
    expected = git_ignored(git_root, paths)
    assert expected, "a case where git ignores nothing tests nothing"
    assert our_ignored(ours_root) == expected


def test_last_line_wins_and_answers_are_memoised() -> None:
    rules = compile_rules(b"*.o\n!main.o\n", b"main.o\n")
    assert rules is not None
    assert rules.decide(b"src/main.o", b"main.o", False) is True  # .helixignore's line wins
    assert rules.decide(b"src/x.o", b"x.o", False) is True
    assert rules.decide(b"src/x.c", b"x.c", False) is None
    assert rules.decide(b"src/x.c", b"x.c", False) is None  # from the memo, same answer


def test_a_file_of_comments_is_no_rules() -> None:
    assert compile_rules(b"# nothing\n\n   \n") is None
    assert compile_rules() is None


def test_each_repository_s_exclude_applies_inside_it_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree holding several git repositories: a path's repository is the nearest
    folder above it holding `.git`; that one's info/exclude (anchored at its root) and
    the user's excludes decide below every .gitignore, no other repository's exclude."""
    files = {
        ".git/info/exclude": "*.outer\n/top\n",
        USER_XDG: "/top_user\n",
        "a.outer": "",
        "top": "",
        "top_user": "",
        "lib/.git/info/exclude": "*.inner\n/top\n",
        "lib/b.outer": "",
        "lib/c.inner": "",
        "lib/top": "",
        "lib/top_user": "",
        "lib/deep/top": "",
        "d.inner": "",
        "plain/.git": "gitdir: elsewhere\n",  # a linked repository: no exclude read
        "plain/e.outer": "",
        "plain/top_user": "",
    }
    user_files(tmp_path, files, monkeypatch)
    build(tmp_path / "t", files, for_git=False)
    assert our_ignored(tmp_path / "t") == {
        b"a.outer",
        b"top",
        b"top_user",
        b"lib/c.inner",
        b"lib/top",
        b"lib/top_user",
        b"plain/top_user",
    }


def test_the_user_s_excludes_path_follows_git_s_config(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "none")
    assert user_excludes_path(env) == os.fsencode(tmp_path / ".config/git/ignore")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "x")
    assert user_excludes_path(env) == os.fsencode(tmp_path / "x/git/ignore")
    (tmp_path / "cfg").write_text("[core]\n\texcludesFile = ~/mine\n")
    env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "cfg")
    assert user_excludes_path(env) == os.fsencode(tmp_path / "mine")
