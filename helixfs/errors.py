"""Domain errors, shared by every layer.

Each surface maps them once: the FUSE edge to an errno, the CLI to a message and exit
status 1. The message is written for the user: it says what was wrong and, where it
helps, what to do.
"""

from __future__ import annotations

import errno


class HelixError(Exception):
    """Base of every error HelixFS reports on purpose."""

    errno: int = errno.EIO


class NotFound(HelixError):
    """A revision, path, branch, snapshot or memory that does not exist."""

    errno = errno.ENOENT


class AlreadyExists(HelixError):
    errno = errno.EEXIST


class InvalidName(HelixError):
    """A branch, snapshot or path name that cannot be used."""

    errno = errno.EINVAL


class NameTooLong(InvalidName):
    """A file name longer than NAME_MAX (255 bytes), as Linux filesystems refuse it."""

    errno = errno.ENAMETOOLONG


class InvalidInput(HelixError):
    """Any other bad argument."""

    errno = errno.EINVAL


class AmbiguousRevision(HelixError):
    errno = errno.EINVAL


class NotADirectory(HelixError):
    errno = errno.ENOTDIR


class IsADirectory(HelixError):
    errno = errno.EISDIR


class DirectoryNotEmpty(HelixError):
    errno = errno.ENOTEMPTY


class ReadOnly(HelixError):
    """A write to a snapshot or a commit view."""

    errno = errno.EROFS


class RefConflict(HelixError):
    """A ref moved under us: compare-and-swap lost, nothing was written."""

    errno = errno.EAGAIN


class StoreLocked(HelixError):
    """Another process owns the store (single writer)."""

    errno = errno.EBUSY


class CorruptObject(HelixError):
    """An object whose bytes do not hash to its id, or cannot be decoded."""

    errno = errno.EIO


class UnsupportedVersion(HelixError):
    """A record or schema written by a newer HelixFS."""

    errno = errno.EPROTO


class MergeConflict(HelixError):
    """A merge that needs a human (or an agent) to resolve conflicts."""

    errno = errno.EAGAIN


class FileTooBig(HelixError):
    """A file size past the largest a file may have (vcs.content.MAX_FILE_SIZE)."""

    errno = errno.EFBIG


class NotPermitted(HelixError):
    """An operation HelixFS refuses by design (a hard link to a folder, writing a
    `.helix/` file that is read-only, creating entries where only the system creates
    them)."""

    errno = errno.EPERM


class TooManyLinks(HelixError):
    """A hard link past the names one file may have (vcs.links.LINK_MAX)."""

    errno = errno.EMLINK


class Busy(HelixError):
    """The target is in use: e.g. deleting the branch the mount currently shows."""

    errno = errno.EBUSY


class StoreFull(HelixError):
    """The disk holding the store has no room for a write: nothing of it was stored."""

    errno = errno.ENOSPC


class DiskFailed(HelixError):
    """The disk refused a write of the store (an I/O error): nothing of it was stored."""

    errno = errno.EIO


class DaemonNotAnswering(HelixError):
    """The daemon of a mounted store cannot answer a command: stopped, or gone."""

    errno = errno.EIO


def is_failure(exc: BaseException) -> bool:
    """An error that fails one request or one side job, never the whole daemon: any
    Exception, and a panic in a Rust extension (rocksdict, blake3). PyO3 raises that as
    `pyo3_runtime.PanicException`, a BaseException (one class per extension, none
    importable), so `except Exception` misses it. False for trio.Cancelled,
    KeyboardInterrupt, SystemExit and GeneratorExit: those must go on ending their task."""
    if isinstance(exc, Exception):
        return True
    return any(
        cls.__name__ == "PanicException" and cls.__module__ == "pyo3_runtime"
        for cls in type(exc).__mro__
    )


class RemoteUnavailable(HelixError):
    """The remote object store cannot be reached now (network, server down): nothing of
    the operation landed on it that a retry would not find and complete."""

    errno = errno.EHOSTUNREACH


class NotFetched(HelixError):
    """A file content of a lazy clone that is not here yet and that its remote cannot
    give now (unreachable, refused, or missing there)."""

    errno = errno.EIO


class RemoteDenied(HelixError):
    """The remote object store refused our credentials or the bucket's permissions."""

    errno = errno.EACCES
