"""What every page handler is given: the store's core objects and the secrets of this
server (its URL token and the CSRF token of its forms)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from helixfs.errors import HelixError
from helixfs.vcs import Repository
from helixfs.web.sizes import SizeSamples

if TYPE_CHECKING:
    from helixfs.memory import Memory

MemorySource = Callable[[], "Memory"]


@dataclass
class Site:
    repo: Repository
    memory_source: MemorySource | None
    store: Path
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    sizes: SizeSamples | None = None

    @property
    def csrf(self) -> str:
        """Derived from the token: a form from another site cannot know it."""
        return hmac.new(self.token.encode(), b"helix-web-csrf", hashlib.sha256).hexdigest()[:32]

    def memory(self) -> Memory:
        if self.memory_source is None:
            raise HelixError("this web view has no memory database")
        return self.memory_source()
