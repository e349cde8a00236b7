"""The demo's reviewer agent: it answers the reviews the authority asks of it (R13.2-03 step 3).

When a result is submitted, the authority checks it (steps 1–2) and asks the group's default
reviewer for evidence on the contract's ``agent_review`` criteria (``review.requested``).
Every beat this agent looks, in each group it reviews for, for requests addressed to it that
it has not answered; for each it downloads the submitted outputs through the SDK — which
verifies every byte against its digest (wire.md §9) — reads the report, and records its own
``evidence.record`` on the submission it was asked about: ``pass`` when the report is
complete, covers at least ``MIN_COVERAGE`` of the sources and states findings, ``fail``
saying what is missing otherwise. Independent evidence (R13.2-01): it never judges an item it
owns, and a claim is never copied as a verdict. It takes no decision, so a person's review
reservation does not hold it back: its evidence is input to that person's judgement (issue 34);
a ``REVIEW_RESERVED`` answer would be reported as a wait (``steps.WAIT``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from missionweave.client import AgentClient
from missionweave.client.errors import ClientError
from missionweave.protocol import states as S
from missionweave.protocol.work.items import WorkItem

from .contracts import MIN_COVERAGE, review_evidence
from .steps import Step, send
from .view import GroupView


def verdict_on(report: bytes) -> tuple[str, str, dict[str, Any]]:
    """(verdict, summary, data) for a submitted report's bytes."""
    try:
        document = json.loads(report)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "fail", "The report is not JSON.", {}
    if not isinstance(document, dict):
        return "fail", "The report is not a JSON object.", {}
    coverage = document.get("coverage")
    findings = document.get("findings")
    data = {"coverage": coverage, "findings": len(findings) if isinstance(findings, list) else 0}
    problems = []
    if document.get("status") != "complete":
        problems.append("it is not complete")
    if not isinstance(coverage, int | float) or coverage < MIN_COVERAGE:
        problems.append(f"it covers less than {MIN_COVERAGE:.0%} of the sources")
    if not findings:
        problems.append("it states no findings")
    if problems:
        return "fail", "Sent back: " + "; ".join(problems) + ".", data
    return "pass", f"Read it through: {data['findings']} findings, coverage {coverage}.", data


def open_requests(item: WorkItem, me: str) -> list[str]:
    """The criteria of ``item``'s current submission the authority asked ``me`` about and I
    have not answered."""
    if item.state != S.SUBMITTED or item.review is None or item.owner == me:
        return []
    return [
        criterion
        for request in item.review.get("requests", [])
        if request["reviewer"] == me
        for criterion in request["criteria"]
        if criterion not in request["answered"]
    ]


def review_steps(group: str, item: WorkItem, me: str, read: Mapping[str, bytes]) -> list[Step]:
    """The evidence ``me`` records on ``item``, having read its outputs (``read``: output
    name -> bytes)."""
    asked = open_requests(item, me)
    criteria = {c["id"]: c for c in item.contract["acceptance_criteria"]}
    outputs = dict((item.submission or {}).get("outputs", {}))
    report = next(iter(read.values()), b"")
    verdict, summary, data = verdict_on(report)
    return [
        Step(
            group,
            "evidence.record",
            review_evidence(
                item.id,
                criteria[name],
                me,
                artifacts=sorted(set(outputs.values())),
                submission=item.review["submission"] if item.review else None,
                verdict=verdict,
                summary=summary,
                data=data,
            ),
        )
        for name in asked
        if name in criteria
    ]


class Reviewer:
    """The reviewer's process (``python -m missionweave.demo reviewer``)."""

    def __init__(self, client: AgentClient, groups: tuple[str, ...]) -> None:
        self.client = client
        self.views = {group: GroupView(client, group) for group in groups}

    def beat(self) -> list[str]:
        lines: list[str] = []
        me = self.client.principal
        for group, view in self.views.items():
            view.refresh()
            for item in sorted(view.work_items(), key=lambda i: i.id):
                if not open_requests(item, me):
                    continue
                try:
                    read = self._outputs(item)
                except ClientError as problem:  # a corrupted or missing artifact: say so
                    lines.append(f"{self.client.agent_id}: cannot read {item.id}: {problem}")
                    read = {}
                lines += [send(self.client, step) for step in review_steps(group, item, me, read)]
        return lines

    def _outputs(self, item: WorkItem) -> dict[str, bytes]:
        outputs = (item.submission or {}).get("outputs", {})
        return {name: self.client.download(digest) for name, digest in sorted(outputs.items())}
