"""Reading /proc/PID/mountinfo: the HelixFS mounts a process can see.

Apart from mounts.py so that lock.py can use it too (mounts.py imports lock.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FS_TYPE = "fuse.helixfs"
SELF = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class HelixMount:
    point: Path
    device: str  # "major:minor"
    source: str  # the store: the daemon mounts with fsname=STORE
    root: str = "/"  # the folder of the filesystem mounted there: "/proj" for a bind mount


def helix_mounts_in(mountinfo: Path = SELF) -> list[HelixMount]:
    """Every HelixFS mount in a mountinfo table, read without touching the mounts."""
    found = []
    for line in mountinfo.read_text().splitlines():
        fields = line.split(" ")
        try:
            separator = fields.index("-")
        except ValueError:
            continue
        if fields[separator + 1] == FS_TYPE:
            point, source = _unescape(fields[4]), _unescape(fields[separator + 2])
            found.append(HelixMount(Path(point), fields[2], source, _unescape(fields[3])))
    return found


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
