"""One writer thread of :mod:`tests.stream.load_writer`, imported once Django is set up."""

from __future__ import annotations

from typing import Any

from django.db import connections

from apps.ledger.write_path import submit_batch
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.signing import b64url_decode, private_key_from_seed
from tests.factories import AgentPersona, mission_body


def write(spec: dict[str, Any], batch: int, accepted: list[int], refused: list[str]) -> None:
    persona = AgentPersona(
        spec["agent"],
        private_key_from_seed(b64url_decode(spec["seed"])),
        session_epoch=spec["session_epoch"],
        membership_epochs={spec["group"]: spec["membership_epoch"]},
    )
    try:
        remaining = spec["count"]
        while remaining:
            size = min(batch, remaining)
            documents = [
                persona.command(spec["group"], "mission.create", mission_body())
                for _ in range(size)
            ]
            for result in submit_batch(
                group_id=spec["group"], documents=documents, caller=persona.caller
            ):
                if isinstance(result, ProtocolError):
                    refused.append(f"{result.code.value}: {result.message}")
                else:
                    accepted.append(1)
            remaining -= size
    except Exception as error:  # reported, so the test names why events are missing
        refused.append(f"writer {spec['agent']} stopped: {error!r}")
    finally:
        connections.close_all()
