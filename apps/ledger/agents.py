"""What the write path must read about agents, which the registry owns (wire.md §3).

Step 3 checks a signature against the agent's current public keys; step 6 re-reads the
agent's session epoch under the group lock (R11.3-10). The ledger sits below the registry and
cannot import its models, so the registry hands in these two reads from its
``AppConfig.ready()``, as it hands in the membership projection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True, slots=True)
class AgentDirectory:
    #: the agent's unrevoked public keys (none for an unknown agent)
    current_keys: Callable[[str], list[Ed25519PublicKey]]
    #: the agent's current session epoch (``None`` for an unknown agent)
    session_epoch: Callable[[str], int | None]
    #: the ``version`` of a principal's current Agent Card (``None`` for a person or an
    #: unknown agent): recorded in artifact manifests (R13.1-03)
    card_version: Callable[[str], str | None]


_installed: list[AgentDirectory] = []


def install(directory: AgentDirectory) -> None:
    """Called once, by the app that owns agents; a second, different directory is refused."""
    if _installed and _installed[0] != directory:
        raise ImproperlyConfigured("an agent directory is already installed")
    _installed[:] = [directory]


def directory() -> AgentDirectory:
    if not _installed:
        raise ImproperlyConfigured("no agent directory: is apps.registry in INSTALLED_APPS?")
    return _installed[0]
