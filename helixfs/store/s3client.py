"""The few S3 calls the remote needs, over boto3, with S3's answers made domain errors.

S3 implementations differ in small ways this module hides: a conditional write that
loses is 412 (PreconditionFailed), but `If-Match` on a missing key is 404 on AWS and 412
on SeaweedFS, and AWS may answer 409 (ConditionalRequestConflict) to two conditional
writes in flight at once: all three mean "lost". No message here quotes the server's
text or a credential: the access key id is in neither.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from helixfs.errors import InvalidInput, NotFound, RemoteDenied, RemoteUnavailable

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")
_ENDPOINT = re.compile(r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?/?")
_LOST = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
_MISSING = {"NoSuchKey", "404", "NotFound", "InvalidRange", "416"}  # 416: a range past the end
_DENIED = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "403",
    "401",
}
CONNECT_SECONDS, READ_SECONDS = 5, 60
ATTEMPTS = 3  # botocore's standard retries: a dropped connection is tried again


@dataclass(frozen=True)
class S3Location:
    """Where a remote lives: `s3://BUCKET/PREFIX`, and an endpoint for non-AWS stores."""

    bucket: str
    prefix: str = ""
    endpoint: str | None = None
    region: str | None = None

    @classmethod
    def parse(cls, url: str, endpoint: str | None = None, region: str | None = None) -> S3Location:
        if not url.startswith("s3://"):
            raise InvalidInput(f"a remote is s3://BUCKET/PREFIX, not {_shown(url)}")
        bucket, _, prefix = url[len("s3://") :].partition("/")
        if not _BUCKET.fullmatch(bucket):
            raise InvalidInput(f"{_shown(bucket)} is not an S3 bucket name")
        prefix = prefix.strip("/")
        if "//" in prefix or not prefix.isprintable():
            raise InvalidInput(f"the prefix {prefix!r:.80} has an empty or unprintable part")
        if endpoint is not None and not _ENDPOINT.fullmatch(endpoint):
            # no user:password@, no path: credentials never travel in a location
            raise InvalidInput(
                f"--endpoint is http(s)://HOST[:PORT] (no user, password or path), "
                f"not {_shown(endpoint)}"
            )
        return cls(bucket, prefix, endpoint.rstrip("/") if endpoint else None, region)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name


_LOADER_LOCK = threading.Lock()
_loader: list[Any] = []


def _fresh_session() -> Any:
    """A botocore session of its own (credentials resolved anew: the default session is
    not thread-safe, and caches them), sharing one loader of the service models, which
    is what makes a client slow to create (~1 s the first time)."""
    import botocore.session

    session = botocore.session.Session()
    with _LOADER_LOCK:
        if not _loader:
            _loader.append(session.get_component("data_loader"))
        session.register_component("data_loader", _loader[0])
    return session


def _shown(text: str) -> str:
    """A location for a message, unless it may hold a credential (`user:secret@`)."""
    return "that (it has a user part, not shown)" if "@" in text else repr(text[:80])


def _code(err: Any) -> str:
    response = getattr(err, "response", {}) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
    return code or status


def _status(err: Any) -> str:
    response = getattr(err, "response", {}) or {}
    return str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


class S3Client:
    """One boto3 client (thread-safe) for one location; every call maps its errors."""

    def __init__(self, location: S3Location) -> None:
        import boto3
        from botocore.config import Config

        self.location = location
        config = Config(
            max_pool_connections=32,
            connect_timeout=CONNECT_SECONDS,
            read_timeout=READ_SECONDS,
            retries={"max_attempts": ATTEMPTS, "mode": "standard"},
            s3={"addressing_style": "path"} if location.endpoint else {},
        )
        session = boto3.session.Session(botocore_session=_fresh_session())
        self._s3: Any = session.client(
            "s3",
            endpoint_url=location.endpoint,
            region_name=location.region or "us-east-1",
            config=config,
        )
        self._lock = threading.Lock()

    def _fail(self, err: Exception, doing: str) -> Exception:
        """The domain error for an S3 failure (a ClientError or a botocore error)."""
        from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

        where = f"the remote {self.location}"
        if isinstance(err, NoCredentialsError | PartialCredentialsError):
            return RemoteDenied(
                f"no AWS credentials for {where}: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, a profile in ~/.aws/credentials, or an instance role"
            )
        if isinstance(err, ClientError):
            code = _code(err)
            if code in _DENIED or _status(err) in ("401", "403"):
                return RemoteDenied(
                    f"{where} refused our credentials while {doing} ({code}): check the "
                    "AWS credentials of this machine (environment or ~/.aws/credentials)"
                )
            if code == "NoSuchBucket":
                return NotFound(f"the bucket of {where} does not exist")
            return RemoteUnavailable(f"{where} failed while {doing} ({code})")
        return RemoteUnavailable(
            f"{where} cannot be reached while {doing} ({type(err).__name__}): it may be "
            "down or this machine offline; nothing was lost, try again"
        )

    def _call(self, doing: str, method: str, **kwargs: Any) -> Any:
        """Call one S3 operation; (None, code) for the answers callers handle themselves."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self._s3, method)(**kwargs), ""
        except ClientError as err:
            code = _code(err)
            if code in _LOST or code in _MISSING or _status(err) in ("404", "412", "409", "416"):
                return None, code or _status(err)
            raise self._fail(err, doing) from None
        except BotoCoreError as err:
            raise self._fail(err, doing) from None

    def get(self, key: str) -> bytes | None:
        found = self.get_with_etag(key)
        return None if found is None else found[0]

    def get_with_etag(self, key: str) -> tuple[bytes, str] | None:
        from botocore.exceptions import BotoCoreError

        answer, _ = self._call("reading", "get_object", **self._at(key))
        if answer is None:
            return None
        try:
            body = answer["Body"].read()
        except BotoCoreError as err:  # the connection dropped mid-body
            raise self._fail(err, "reading") from None
        return bytes(body), str(answer["ETag"])

    def get_range(self, key: str, first: int, last: int | None = None) -> bytes | None:
        """Bytes `first`..`last` (inclusive) of an object; `first` < 0 with no `last`:
        its last -`first` bytes. None: no such object."""
        from botocore.exceptions import BotoCoreError

        span = f"bytes={first}" if first < 0 else f"bytes={first}-{'' if last is None else last}"
        answer, _ = self._call("reading", "get_object", Range=span, **self._at(key))
        if answer is None:
            return None
        try:
            return bytes(answer["Body"].read())
        except BotoCoreError as err:
            raise self._fail(err, "reading") from None

    def exists(self, key: str) -> bool:
        answer, _ = self._call("looking up", "head_object", **self._at(key))
        return answer is not None

    def logical_size(self, key: str) -> int:
        answer, _ = self._call("looking up", "head_object", **self._at(key))
        if answer is None:
            return 0
        return int(answer.get("Metadata", {}).get("size", answer.get("ContentLength", 0)))

    def put(self, key: str, blob: bytes, *, if_none_match: bool, size: int) -> bool:
        """Whether this call stored it (False: an object was there already)."""
        extra: dict[str, Any] = {"IfNoneMatch": "*"} if if_none_match else {}
        answer, _ = self._call(
            "uploading",
            "put_object",
            Body=blob,
            Metadata={"size": str(size)},
            **self._at(key),
            **extra,
        )
        return answer is not None

    def put_etag(
        self, key: str, blob: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> tuple[bool, str | None]:
        """A conditional write: whether it won, and the new ETag."""
        extra: dict[str, Any] = {}
        if if_none_match:
            extra["IfNoneMatch"] = "*"
        if if_match is not None:
            extra["IfMatch"] = if_match
        answer, _ = self._call("moving a ref", "put_object", Body=blob, **self._at(key), **extra)
        if answer is None:
            return False, None
        etag = answer.get("ETag")
        return True, str(etag) if etag else None

    def listing(self, prefix: str) -> Iterator[tuple[str, int]]:
        """(key relative to the location's prefix, stored size) under `prefix`, sorted."""
        from botocore.exceptions import BotoCoreError, ClientError

        full = self.location.key(prefix)
        cut = len(self.location.key(""))
        paginator = self._s3.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.location.bucket, Prefix=full):
                for item in page.get("Contents", ()):
                    yield str(item["Key"])[cut:], int(item["Size"])
        except (BotoCoreError, ClientError) as err:
            raise self._fail(err, "listing") from None

    def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):
            batch = [{"Key": self.location.key(k)} for k in keys[start : start + 1000]]
            self._call(
                "deleting",
                "delete_objects",
                Bucket=self.location.bucket,
                Delete={"Objects": batch, "Quiet": True},
            )

    def raw_put(self, key: str, blob: bytes) -> None:
        """An unconditional write (tests damage objects with it)."""
        self._call("writing", "put_object", Body=blob, **self._at(key))

    def _at(self, key: str) -> dict[str, str]:
        return {"Bucket": self.location.bucket, "Key": self.location.key(key)}

    def close(self) -> None:
        self._s3.close()
