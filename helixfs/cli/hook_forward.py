"""What the hook launcher runs (`python -P -S ROOT/helixfs/cli/hook_launch.py --store
STORE EVENT`; hook_launch.py is only the door, so that this module's bytecode is cached:
a script run as a file is compiled at every start, ~1.5-2.5 ms for this one).

It runs `helix hook EVENT` with the JSON Claude Code wrote on stdin, and must cost a few
milliseconds: so it starts without `site`, imports only the standard library and the
control socket's wire format, and hands the command line to the mount's daemon, whose
memory is open and warm (ADR 0052). With no daemon, it turns `site` on and runs the
command itself (lexical memory only: no model is loaded for a hook), or, for every
event once the engine has made memory.db, answers from it without the engine (light.py).

Whatever goes wrong, it exits 0 and prints nothing: a hook never fails the agent's step.
The reason goes to STORE/hooks.log.
"""

from __future__ import annotations

import _json  # the C encoder alone: json would import re, enum... (~10 ms)
import _socket  # socket.py imports enum and selectors
import os
import sys
import time

from helixfs.daemon import wire

MAX_INPUT = 8 << 20
ANSWER_SECONDS = 5.0  # a daemon that does not answer by then (a long gc): no context
LOG_NAME = "hooks.log"
LOG_LIMIT = 1 << 20


def main(argv: list[str]) -> int:
    store, event = "", "?"
    try:
        if len(argv) != 3 or argv[0] != "--store":
            raise ValueError(f"usage: hook_launch --store STORE EVENT, not {argv!r}")
        store, event = argv[1], argv[2]
        text = sys.stdin.buffer.read(MAX_INPUT).decode("utf-8", "replace")
        request = ["hook", event, "--input", text]
        answer = _ask_daemon(store, request)
        if answer is None:
            answer = _answer_here(store, request)
        if answer:
            sys.stdout.write(answer)
            sys.stdout.flush()
    except BaseException as err:  # noqa: BLE001 - a hook must never fail the agent's step
        log(store, event, f"{type(err).__name__}: {err}")
    return 0


def _request(argv: list[str]) -> bytes:
    quote = _json.encode_basestring_ascii
    words = ", ".join(quote(word) for word in argv)
    text = f'{{"v": {wire.PROTOCOL_VERSION}, "argv": [{words}], "cwd": {quote(_cwd())}}}'
    return text.encode("ascii")


def _exit_code(header: bytes) -> int:
    """`code` of the daemon's `{"v": 1, "code": N}`, read without the json module."""
    after = header.split(b'"code":', 1)[1]
    return int(after.split(b",", 1)[0].split(b"}", 1)[0])


def _ask_daemon(store: str, argv: list[str]) -> str | None:
    """The daemon's answer (its stdout), or None when no daemon serves the store."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(ANSWER_SECONDS)
    try:
        address, folder = wire.address_of(os.path.join(store, wire.SOCKET_NAME))
        try:
            sock.connect(address)
        except OSError as err:
            if err.errno in wire.NO_DAEMON:
                return None
            raise
        finally:
            if folder is not None:
                os.close(folder)
        wire.send_frame(sock, _request(argv))
        code = _exit_code(_frame(sock))
        out, said = _frame(sock), _frame(sock)
    finally:
        sock.close()
    if code != 0 or said:
        log(store, argv[1], said.decode("utf-8", "replace").strip() or f"exit {code}")
    return out.decode("utf-8", "replace")


def _frame(sock: _socket.socket) -> bytes:
    (size,) = wire.FRAME_LENGTH.unpack(_exactly(sock, wire.FRAME_LENGTH.size))
    if size > wire.MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    return _exactly(sock, size)


def _exactly(sock: _socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the daemon closed the connection before it answered")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _answer_here(store: str, argv: list[str]) -> str:
    """No daemon: the light path answers from memory.db (agents/light.py); a memory.db
    the engine has not made yet (or upgraded) runs the command in this process, with
    site-packages turned on."""
    import io
    import site

    sys.path.extend(p for p in _site_packages() if p not in sys.path)
    from helixfs.agents import light

    answer = light.answer(store, argv[1], argv[3])
    if answer is not None:
        return answer
    site.main()
    os.environ.setdefault("HELIX_MEMORY_LEXICAL", "1")  # never a model load per hook
    from helixfs.cli.main import run

    stdout, stderr = io.StringIO(), io.StringIO()
    run(["--store", store, *argv], stdout, stderr)
    if stderr.getvalue().strip():
        log(store, argv[1], stderr.getvalue().strip())
    return stdout.getvalue()


def _site_packages() -> list[str]:
    """The folders `site` would add (a venv's first), without running their .pth files
    (the editable install's finder: ~10 ms): the light path needs only apsw and blake3.
    Under -S, `site` alone does not know the venv: its pyvenv.cfg says so, as site.venv."""
    import site

    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    prefix = os.path.dirname(exe_dir)
    in_venv = any(os.path.isfile(os.path.join(d, "pyvenv.cfg")) for d in (exe_dir, prefix))
    paths: list[str] = site.getsitepackages([prefix, sys.prefix] if in_venv else None)
    return paths


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


def log(store: str, event: str, reason: str) -> None:
    """One line in STORE/hooks.log (cut back to its last half past LOG_LIMIT)."""
    if not store:
        return
    try:
        path = os.path.join(store, LOG_NAME)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"{stamp} {event} {' '.join(reason.split())[:2000]}\n"
        with open(path, "a", encoding="utf-8") as file:
            file.write(line)
            if file.tell() > LOG_LIMIT:
                _halve(path)
    except OSError:
        pass


def _halve(path: str) -> None:
    with open(path, "rb") as file:
        data = file.read()
    with open(path, "wb") as file:
        file.write(data[len(data) // 2 :])
