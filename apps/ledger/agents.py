"""What the write path must read about agents, which the registry owns (wire.md §3).

Step 3 checks a signature against the agent's current public keys; step 6 re-reads the
agent's session epoch under the group lock (R11.3-10). The ledger sits below the registry and
cannot import its models, so the registry hands in these reads from its
``AppConfig.ready()``, as it hands in the membership projection.

**Keys, cached and confirmed under the lock** (issue 15 §1). Reading an agent's keys before
every signature check cost each command a round trip. The keys a signature is checked
against now come from a per-process cache (``keys_for_signature``), and the statement that
reads the session epoch under the group lock reads the current keys with it (``Standing``).
The write path compares the two before anything else under the lock and checks the
signature again against the keys just read when they differ: a revoked key is refused from
the moment its revocation commits, as before, and a stale cache costs one more check,
never a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.core.exceptions import ImproperlyConfigured

from .reads import Read


@dataclass(frozen=True, slots=True)
class Standing:
    """An agent as the write path checks it under the group lock."""

    session_epoch: int
    #: the text of each unrevoked public key, oldest first
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AgentDirectory:
    #: the text of each of the agent's unrevoked public keys, oldest first (none: unknown)
    current_key_texts: Callable[[str], tuple[str, ...]]
    #: a public key's text, parsed (cached: a key's bytes never change)
    parse_key: Callable[[str], Ed25519PublicKey]
    #: the read of the agent's ``Standing`` (``None`` for an unknown agent)
    standing_read: Callable[[str], Read[Standing | None]]
    #: the ``version`` of a principal's current Agent Card (``None`` for a person or an
    #: unknown agent): recorded in artifact manifests (R13.1-03)
    card_version: Callable[[str], str | None]

    def current_keys(self, agent_id: str) -> list[Ed25519PublicKey]:
        """The agent's unrevoked public keys, read now."""
        return usable_keys(self.current_key_texts(agent_id), self.parse_key)


_installed: list[AgentDirectory] = []
#: agent id → the key texts last read (only non-empty sets: a new agent is read again)
_key_cache: dict[str, tuple[str, ...]] = {}
#: agents remembered at most; past it the cache starts again (a process serves a few)
_KEY_CACHE_SIZE = 10_000


def install(directory: AgentDirectory) -> None:
    """Called once, by the app that owns agents; a second, different directory is refused."""
    if _installed and _installed[0] != directory:
        raise ImproperlyConfigured("an agent directory is already installed")
    _installed[:] = [directory]


def directory() -> AgentDirectory:
    if not _installed:
        raise ImproperlyConfigured("no agent directory: is apps.registry in INSTALLED_APPS?")
    return _installed[0]


def keys_for_signature(agent_id: str, *, fresh: bool = False) -> tuple[str, ...]:
    """The key texts to check a signature of ``agent_id`` against: the cached ones, or
    read now when none are cached or ``fresh`` (a signature the cached keys refused may be
    by a key added since)."""
    keys = None if fresh else _key_cache.get(agent_id)
    if keys is None:
        keys = directory().current_key_texts(agent_id)
        remember_keys(agent_id, keys)
    return keys


def remember_keys(agent_id: str, keys: tuple[str, ...]) -> None:
    """Cache ``keys`` as the agent's current ones (read under a lock, or just now)."""
    if not keys:
        _key_cache.pop(agent_id, None)
        return
    if len(_key_cache) >= _KEY_CACHE_SIZE:
        _key_cache.clear()
    _key_cache[agent_id] = keys


def parsed(keys: tuple[str, ...]) -> list[Ed25519PublicKey]:
    return usable_keys(keys, directory().parse_key)


def usable_keys(
    texts: Iterable[str], parse: Callable[[str], Ed25519PublicKey]
) -> list[Ed25519PublicKey]:
    """The stored key texts ``texts`` that are Ed25519 public keys, parsed. One that is not
    (registered before wire.md §1 said a key is a point of the prime-order subgroup,
    2026-12-04) verifies no signature: it is left out, where raising would answer the
    agent's every command with a 500."""
    usable = []
    for text in texts:
        try:
            usable.append(parse(text))
        except ValueError:
            continue
    return usable
