"""Editor droppings that live in the work tree but never in a commit.

Editors save through temporary names (vim's `.swp` and its `4913` write probe, emacs's
`#file#` and `.#lock`, `file~` backups). They must keep working on the mount, so the
work tree holds them, but a commit tree records only what the user meant to save: one
save, one commit, no temp file in history.
"""

from __future__ import annotations

import re

_PATTERNS = [
    # vim swap files: `.name.swp`, then `.swo`, `.swn` ... `.swa` while older ones exist
    # (vim's findswapname counts down). Past `.swa` vim goes on with `.svz` ... `.saa`,
    # but those are left out: that range holds real extensions (`.svg`, `.svh`, `.svx`),
    # and a 17th swap file of one name is not worth hiding a user's `.logo.svg`. `.swx`
    # is the probe vim creates (and deletes) while it picks a swap name.
    rb"\..+\.sw[a-px]",
    rb"4913",  # vim's "can I create a file here" probe
    rb"5036",  # the same probe when 4913 exists
    rb".*~",  # vim/emacs backups
    rb"\.#.*",  # emacs lock symlinks
    rb"#.*#",  # emacs auto-save
    rb"\..*\.kate-swp",
    rb".*\.tmp\.\d+\.\d+",  # atomic-write temp files of some tools: name.tmp.PID.N
    rb"\.goutputstream-.*",  # GLib atomic save
    rb"\.nfs[0-9a-f]+",
]
_EPHEMERAL = re.compile(b"|".join(b"(?:" + p + b")" for p in _PATTERNS), re.DOTALL)


def is_ephemeral(name: bytes) -> bool:
    """True for a base name that an editor creates only for the duration of a save."""
    return _EPHEMERAL.fullmatch(name) is not None
