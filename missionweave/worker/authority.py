"""What the runtime needs of the authority: the part of ``AgentClient`` it calls.

Named as a ``Protocol`` so the runtime's decisions can be tested against an in-process
authority (``tests/worker/fake_authority.py`` decides with the real protocol core) as well as
against the real server through ``AgentClient``, which satisfies it as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from missionweave.client.agent import CommandResult, Session


class Authority(Protocol):
    principal: str

    def submit(
        self,
        group: str,
        type_: str,
        body: dict[str, Any],
        command_id: str | None = None,
        *,
        extensions: dict[str, Any] | None = None,
    ) -> CommandResult: ...

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def current_session(self) -> Session: ...

    def report_presence(self, report: dict[str, Any]) -> dict[str, Any]: ...

    def upload(
        self, data: bytes | bytearray | memoryview | os.PathLike[str], *, content_type: str = ...
    ) -> str: ...

    def download(self, digest: str) -> bytes: ...

    def publish(
        self,
        group: str,
        work_item: str,
        lease_id: str,
        *,
        digest: str,
        media_type: str,
        schema: str | None = None,
        mission: str | None = None,
    ) -> CommandResult: ...

    def submit_work(
        self,
        group: str,
        work_item: str,
        lease_id: str,
        *,
        outputs: Mapping[str, str],
        evidence: Sequence[Mapping[str, Any]],
        artifacts: Sequence[str] | None = None,
    ) -> CommandResult: ...

    def close(self) -> None: ...
