"""The MissionWeave agent client: pure Python (httpx, sqlite3), no Django.

It reuses ``missionweave.protocol`` for canonical JSON, signatures, the envelope and the
event hash chain, so what the client signs and verifies is byte-for-byte what the authority
checks. ``tests/protocol/test_purity.py`` proves it imports no Django.
"""

from __future__ import annotations

from .agent import AgentClient, CommandResult, Membership, Session
from .contexts import ContextPackage, ContextPackages, ContextVersion
from .errors import (
    ApiError,
    ArtifactMismatch,
    ChainBroken,
    ClientError,
    HistoryForked,
    SnapshotRejected,
    Unavailable,
)
from .feed import CursorStore, EventFeed
from .stream import StreamError, StreamFollower

__all__ = [
    "AgentClient",
    "ApiError",
    "ArtifactMismatch",
    "ChainBroken",
    "ClientError",
    "CommandResult",
    "ContextPackage",
    "ContextPackages",
    "ContextVersion",
    "CursorStore",
    "EventFeed",
    "HistoryForked",
    "Membership",
    "Session",
    "SnapshotRejected",
    "StreamError",
    "StreamFollower",
    "Unavailable",
]
