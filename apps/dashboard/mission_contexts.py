"""The context packages of a mission, as its page shows them (R13.3-01..04, R13.3-07).

A package is a coordinator's signed summary of the mission — what was decided, the
constraints, the open questions — and every update is a new version that keeps the earlier
ones (R13.3-04). The page lists each package with its latest version in full, who wrote it
(by name), and its earlier versions; where a version was sent to another group, it says so.
Ids, digests and the log's sequences stay in the collapsed technical details.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.work.selectors import context_packages
from missionweave.protocol.context import ContextPackage

#: the most packages a mission page lists (the API lists them all, page by page)
MAX_PACKAGES = 50


@dataclass(frozen=True)
class PackageVersion:
    version: int
    generator: str
    created_at: str
    recorded_at: str
    sequence: int
    digest: str
    decisions: tuple[str, ...]
    constraints: tuple[str, ...]
    open_questions: tuple[str, ...]
    work_items: tuple[str, ...]
    event_range: tuple[int, int]
    artifacts: int
    #: the groups this version was sent to (R13.3-07)
    sent_to: tuple[str, ...]

    @property
    def technical(self) -> list[tuple[str, str]]:
        first, last = self.event_range
        return [
            ("version", str(self.version)),
            ("digest", self.digest),
            ("recorded at event", f"#{self.sequence}"),
            ("summarises events", f"#{first}–#{last}"),
        ]


@dataclass(frozen=True)
class PackageCard:
    id: str
    #: newest first
    versions: tuple[PackageVersion, ...]

    @property
    def latest(self) -> PackageVersion:
        return self.versions[0]

    @property
    def earlier(self) -> tuple[PackageVersion, ...]:
        return self.versions[1:]


def mission_packages(group_id: str, mission_id: str) -> list[PackageCard]:
    """The packages published in ``group_id`` about ``mission_id``, by id."""
    packages, _next = context_packages(group_id, mission=mission_id, limit=MAX_PACKAGES)
    return [_card(package) for package in packages]


def generators(cards: list[PackageCard]) -> list[str]:
    """Every principal the cards name, to look their names up at once (``names.prime``)."""
    return [version.generator for card in cards for version in card.versions]


def _card(package: ContextPackage) -> PackageCard:
    sent: dict[int, list[str]] = {}
    for crossing in package.forwarded:
        sent.setdefault(crossing["version"], []).append(crossing["to_group"])
    versions = [
        _version(entry, tuple(sent.get(entry["version"], ()))) for entry in package.versions
    ]
    return PackageCard(package.id, tuple(reversed(versions)))


def _version(entry: dict[str, Any], sent_to: tuple[str, ...]) -> PackageVersion:
    package = entry["package"]
    first, last = package["event_range"]
    return PackageVersion(
        version=entry["version"],
        generator=package["generator"],
        created_at=package["created_at"],
        recorded_at=entry["recorded_at"],
        sequence=entry["sequence"],
        digest=entry["digest"],
        decisions=tuple(package["decisions"]),
        constraints=tuple(package["constraints"]),
        open_questions=tuple(package["open_questions"]),
        work_items=tuple(package["work_items"]),
        event_range=(first, last),
        artifacts=len(package["artifacts"]),
        sent_to=sent_to,
    )
