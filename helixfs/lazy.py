"""Modules loaded at their first use, for the code a command may never reach.

Every `helix` command is a new process, and importing the whole version store (merge,
gc, blame, the live worktree...) was about half of a short command's time: `helix log`
needs none of them. A lazy module is in sys.modules at once (so every later import of
it gets the same object) and runs its code when an attribute is first read
(importlib.util.LazyLoader, the standard library's recipe).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """`name`, imported now if it is already loaded, else loaded when first used."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
