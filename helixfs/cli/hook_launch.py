"""The hook launcher: `python -P -S ROOT/helixfs/cli/hook_launch.py --store STORE EVENT`
(ADR 0052). Only the door: Python compiles a script run as a file at every start, so
the work is in hook_forward.py, whose bytecode is cached."""

import sys

from helixfs.cli.hook_forward import log, main

__all__ = ["log", "main"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
