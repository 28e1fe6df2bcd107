"""The S3 server answers conditional writes as the client counts on (issue 31): of
writers racing to create one key with `If-None-Match: *`, exactly one wins, and an
`If-Match` on a key that is not there is a lost race, not an error. SeaweedFS answers
that with 412 and AWS with 404 (store/s3client.py takes both): each test runs against
SeaweedFS and against moto's server, which answers as AWS does."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from motoserver import MotoServer, moto_serving

from helixfs.store.s3client import S3Client, S3Location

from .conftest import Place

WRITERS = 16


@pytest.fixture(scope="module")
def aws_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_serving(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(params=["seaweedfs", "aws"])
def place(request: pytest.FixtureRequest) -> Place:
    """A fresh prefix on SeaweedFS (412 for a missing If-Match) or on moto (AWS: 404)."""
    server = request.getfixturevalue("s3_server" if request.param == "seaweedfs" else "aws_like")
    return Place(server, f"t/{uuid.uuid4().hex[:12]}")


def _client(place: Place) -> S3Client:
    return S3Client(S3Location(place.server.bucket, place.prefix, place.endpoint))


def test_one_of_sixteen_writers_creates_a_key(place: Place) -> None:
    clients = [_client(place) for _ in range(WRITERS)]
    won: list[bytes] = []
    ready = threading.Barrier(WRITERS)

    def write(n: int) -> None:
        body = b"writer %d" % n
        ready.wait()  # all at once
        if clients[n].put("race/key", body, if_none_match=True, size=len(body)):
            won.append(body)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(won) == 1, won
        assert clients[0].get("race/key") == won[0]  # the winner's bytes, whole
    finally:
        for client in clients:
            client.close()


def test_a_replace_of_a_missing_key_is_a_lost_race(place: Place) -> None:
    client = _client(place)
    try:
        won, etag = client.put_etag("refs/absent", b"x", if_match='"0123456789abcdef"')
        assert (won, etag) == (False, None)
        assert client.get("refs/absent") is None  # nothing was written
        created, first = client.put_etag("refs/here", b"1", if_none_match=True)
        assert created and first is not None
        assert client.put_etag("refs/here", b"2", if_match='"stale"') == (False, None)
        replaced, _ = client.put_etag("refs/here", b"2", if_match=first)
        assert replaced and client.get("refs/here") == b"2"
    finally:
        client.close()
