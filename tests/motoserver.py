"""AWS's own answers for the conditional-write tests: moto's server (`moto_server`, from
the PyPI package moto[server]) on 127.0.0.1, in memory. SeaweedFS answers an `If-Match`
on a missing key with 412, AWS with 404 (NoSuchKey); moto answers as AWS does, so the
client's handling of that 404 is exercised against a real server and not only read in
store/s3client.py. Missing in CI it fails, elsewhere it skips (as tests/seaweed.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from seaweed import free_ports, in_ci

READY_SECONDS = 30


class MotoServer:
    """One `moto_server` process holding one bucket (nothing touches a disk)."""

    def __init__(self, folder: Path, bucket: str = "helix") -> None:
        self.folder = folder
        self.bucket = bucket
        self.port = free_ports(1)[0]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder / "moto.log").open("ab")
        self.process = subprocess.Popen(
            [moto_binary(), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self._create_bucket()

    def _create_bucket(self) -> None:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        client = boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1"
        )
        deadline = time.monotonic() + READY_SECONDS
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"moto_server exited: {self.log()}")
            try:
                client.create_bucket(Bucket=self.bucket)
                return
            except (BotoCoreError, ClientError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not answer: {self.log()}") from None
                time.sleep(0.2)

    def log(self) -> str:
        path = self.folder / "moto.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait(timeout=30)
        self.process = None


def moto_binary() -> str:
    found = shutil.which(
        "moto_server",
        path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    if found:
        return found
    message = "moto_server is missing: pip install 'moto[server]' (the dev extra has it)"
    if in_ci():
        raise RuntimeError(message)
    import pytest

    pytest.skip(message)


@contextlib.contextmanager
def moto_serving(folder: Path) -> Iterator[MotoServer]:
    server = MotoServer(folder)
    try:
        server.start()
        yield server
    finally:
        server.stop()
