"""A contract's patterns over HTTP, on PostgreSQL (issue 33 §6; R13.2-03 step 1, wire.md §10).

The authority holds a submitted output to its inline schema inside the group's lock, so a
pattern that took a backtracking engine minutes would hold every other command of the group
for as long. Patterns run on RE2: the hostile submission is refused at once and a command
sent beside it to the same group is answered promptly. A pattern RE2 cannot run is refused
with the contract that carries it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.ledger.concurrency import run_in_threads

from .http import error_of
from .work_http import (
    Wire,
    WorkWorld,
    contract,
    evidence,
    machine_criteria,
    mission_create_body,
    started,
    submission,
)

#: a pattern exponential for a backtracking engine on the text below (2**100000 ways to fail)
CATASTROPHIC = "^(a+)+$"
HOSTILE_OUTPUT = json.dumps("a" * 100_000 + "!").encode()
#: generous for one HTTP command on a shared two-core machine; a backtracking engine would
#: not answer the hostile submission within any time this test could wait for
PROMPT_SECONDS = 2.0


def _schema_contract(schema: dict[str, Any]) -> dict[str, Any]:
    outputs = [{"name": "report", "media_type": "application/json", "schema": schema}]
    return contract(outputs=outputs, acceptance_criteria=machine_criteria())


@pytest.mark.django_db(transaction=True)
def test_a_catastrophic_pattern_delays_no_other_command_of_the_group(
    api: APIClient, ww: WorkWorld
) -> None:
    """Issue 33 §6: a 100 KB output against ``^(a+)+$`` is refused 400 MALFORMED within
    moments, and a ``mission.create`` sent to the same group at the same moment (it waits
    for the group's lock the submission holds) is appended as promptly."""
    wire = Wire(api, ww.group, ww.olga)
    schema = {"type": "string", "pattern": CATASTROPHIC}
    lease = started(wire, ww, "wi-1", contract=_schema_contract(schema))
    body = submission(wire, ww.w2, "wi-1", lease, [evidence("c1", ww.w2)], HOSTILE_OUTPUT)
    body["outputs"] = {"report": body["artifacts"][0]}

    def send(index: int) -> tuple[Any, float]:
        own = Wire(APIClient(), ww.group, ww.olga)
        begun = time.perf_counter()
        if index == 0:
            response = own.send(ww.w2, "work.submit", body)
        else:
            response = own.send(ww.w1, "mission.create", mission_create_body("m-beside"))
        return response, time.perf_counter() - begun

    (refusal, hostile_seconds), (beside, beside_seconds) = run_in_threads(2, send, timeout=60)

    error = error_of(refusal, 400, "MALFORMED")
    assert (error["details"]["output"], error["details"]["path"]) == ("report", "$")
    assert beside.status_code == 201, beside.content
    assert hostile_seconds < PROMPT_SECONDS, f"the hostile submission took {hostile_seconds} s"
    assert beside_seconds < PROMPT_SECONDS, f"the command beside it took {beside_seconds} s"
    assert wire.mission("m-beside")["state"]
    assert wire.item("wi-1")["state"] == "active"


@pytest.mark.django_db
def test_a_pattern_re2_cannot_run_is_refused_with_its_contract(
    api: APIClient, ww: WorkWorld
) -> None:
    """Issue 33 §6, R10.1-01: a lookahead in an output's schema is 400 CONTRACT_INVALID when
    the contract is proposed, at the pattern's path, saying patterns are RE2 syntax."""
    wire = Wire(api, ww.group, ww.olga)
    wire.ok(ww.w1, "mission.create", mission_create_body("m-1"))
    terms = _schema_contract({"type": "string", "pattern": "^(?!draft)"})
    body = {"work_item": "wi-1", "mission": "m-1", "contract": terms, "depends_on": []}
    error = wire.refused(ww.w1, "work.authorize", body, 400, "CONTRACT_INVALID", "R10.1-01")
    [problem] = error["details"]["errors"]
    assert problem["path"] == "$.contract.outputs[0].schema.pattern"
    assert "patterns are RE2 syntax" in problem["message"]
