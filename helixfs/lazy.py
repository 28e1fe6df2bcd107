"""Modules and names loaded at their first use, for the code a command may never reach.

Every `helix` command is a new process, and importing the whole version store (merge,
gc, blame, the live worktree...) was about half of a short command's time: `helix log`
needs none of them. A lazy module is in sys.modules at once (so every later import of
it gets the same object) and runs its code when an attribute is first read
(importlib.util.LazyLoader, the standard library's recipe). A lazy name is a package's
attribute imported from its module when first read (PEP 562, `names_from`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging


def lazy_module(name: str) -> ModuleType:
    """`name`, imported now if it is already loaded, else loaded when first used."""
    if name in sys.modules:
        return sys.modules[name]
    import importlib.util  # here: a hook imports this module for names_from only

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


def names_from(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's `__getattr__` (PEP 562): each name of `modules` imported from the
    module it maps to when first read. Through `__import__`, the import statement's own
    path, which `python -X importtime` reports (the hook tests read it) and
    importlib.import_module bypasses."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(__import__(module, fromlist=[name]), name)

    return __getattr__


def logger(name: str) -> Callable[[], logging.Logger]:
    """`log()` for module `name`: `logging` (and traceback under it, ~4 ms) is imported
    at the first line logged, not by a hook that only reads the store (ADR 0083)."""

    def log() -> logging.Logger:
        import logging

        return logging.getLogger(name)

    return log
