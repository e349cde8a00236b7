"""Context packages (R13.3): signed, versioned, scoped summaries of one mission in one group.

A package is never an authoritative replacement for history (R13.3-01): it cites a range of
its group's log, so a reader whose membership permits checks the summary against the events
(R13.3-03). The authority signs every recorded version (``NewEvent.authority_signs``), and
each version names the digest of the one before it (``previous``), so an update keeps its
predecessor's provenance (R13.3-04).

Three commands:

- ``context.publish`` (coordinator) records a version in this group: ``context.published``.
- ``context.forward`` (a coordinator of both groups, R13.3-07) appends ``context.forwarded``
  here, the audit trail of the crossing, and hands the signed version to the other group as
  an authority follow-up, ``context.receive`` → ``context.received`` there. There is no
  cross-group transaction (R10.4-05): the follow-up's command id is derived from this
  command's, so a resend is an idempotent replay.
- ``context.receive`` is submitted only by the authority.

The aggregate (kind ``context``) is keyed by the package id for a package published in this
group, and by ``<from_group>/<id>`` for one received from another group: an id cannot hold a
``/`` (wire.md §1), so the two never collide, and a package another group forwards never
mixes its versions into this group's own package of the same id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .artifacts.naming import require_nameable, stored_keys
from .canonical import canonical_bytes, digest, without
from .errors import ErrorCode, ProtocolError
from .evolvers import REGISTRY, evolves
from .facts import Command, Decision, Fact, FollowUp, NewEvent, StateKey, View
from .frozen import replace
from .missions.model import mission_key, mission_or_404
from .validation import check_fields, check_id, check_principal, malformed
from .work.checks import digests, no_private_reasoning, strings, timestamp
from .work.items import WorkItem, work_item_key

PUBLISH = "context.publish"
FORWARD = "context.forward"
RECEIVE = "context.receive"
PUBLISHED = "context.published"
FORWARDED = "context.forwarded"
RECEIVED = "context.received"

#: what a package must say (R13.3-02); the authority adds ``previous`` and ``signature``
PACKAGE_FIELDS = (
    "id", "version", "mission", "work_items", "event_range", "artifacts", "decisions",
    "constraints", "open_questions", "generator", "created_at",
)  # fmt: skip
#: the most WorkItems or artifacts one package may name: each is a state the command loads
MAX_SCOPE = 1000


# --- the aggregate ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContextPackage:
    """Every recorded version of one package in one group's log.

    ``versions`` holds ``{version, digest, package, sequence, recorded_at}`` in version order,
    ``package`` as recorded (signed, with ``previous``); a received version adds
    ``source_sequence`` (of its ``context.published`` in the source group) and
    ``forwarded_by``. ``forwarded`` lists the crossings of a package published here.
    """

    id: str
    #: the group whose log the package summarises (its ``event_range`` is of that log)
    source_group: str
    versions: tuple[dict[str, Any], ...]
    #: ``{version, to_group, sequence, forwarded_by}``, for a package published here
    forwarded: tuple[dict[str, Any], ...] = ()
    #: for a received package: the group it came from, and who forwarded its highest version
    received_from: str | None = None
    forwarded_by: str | None = None

    @property
    def latest(self) -> int:
        """The highest version recorded (0 for none)."""
        return max((entry["version"] for entry in self.versions), default=0)

    def version(self, number: int) -> dict[str, Any] | None:
        return next((entry for entry in self.versions if entry["version"] == number), None)

    def latest_entry(self) -> dict[str, Any]:
        """The highest recorded version: ``{version, digest, package, sequence, …}``."""
        return self.versions[-1]

    def in_context_of(self, mission: str | None, work_item: str | None = None) -> bool:
        """Whether this package summarises ``mission`` (and names ``work_item``) of this
        group, by its latest version. A package received from another group summarises that
        group's mission, whatever its id: it enters none of this group's mission contexts
        (R13.3-05), so it is in none here."""
        if mission is None and work_item is None:
            return True
        if self.received_from is not None:
            return False
        package = self.latest_entry()["package"]
        if mission is not None and package["mission"] != mission:
            return False
        return work_item is None or work_item in package["work_items"]

    def summary(self) -> dict[str, Any]:
        """The package in a listing (``GET /groups/{g}/contexts``): its latest version whole
        (signed), every version by number, digest and place in the log."""
        return {
            "id": self.id,
            "source_group": self.source_group,
            "received_from": self.received_from,
            "forwarded_by": self.forwarded_by,
            "latest": self.latest_entry(),
            "versions": [
                {key: entry[key] for key in ("version", "digest", "sequence", "recorded_at")}
                for entry in self.versions
            ],
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source_group": self.source_group,
            "versions": list(self.versions),
            "forwarded": list(self.forwarded),
            "received_from": self.received_from,
            "forwarded_by": self.forwarded_by,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextPackage:
        return cls(
            id=data["id"],
            source_group=data["source_group"],
            versions=tuple(data["versions"]),
            forwarded=tuple(data.get("forwarded", ())),
            received_from=data.get("received_from"),
            forwarded_by=data.get("forwarded_by"),
        )


def context_key(package_id: str, from_group: str | None = None) -> StateKey:
    """A package published here by its id; one received from ``from_group`` by
    ``<from_group>/<id>``."""
    return ("context", package_id if from_group is None else f"{from_group}/{package_id}")


def package_digest(package: dict[str, Any]) -> str:
    """The digest of a recorded package: over its canonical form without ``signature``, so
    it is the same before the authority signs it and after (what ``previous`` names)."""
    return digest(without(package, "signature"))


def receive_command_id(group: str, command_id: str) -> str:
    """The deterministic id of the ``context.receive`` a forward hands on: a resend of the
    same forward is the same command, so the target's idempotency makes it a replay
    (R10.4-05). Hashed, so two long ids never truncate into one (wire.md §1: ≤ 128 chars)."""
    source = hashlib.sha256(canonical_bytes([group, command_id])).hexdigest()
    return f"{RECEIVE}:{source}"


# --- context.publish (R13.3-01, R13.3-02, R13.3-04) ---------------------------------------


def validate_publish(body: dict[str, Any]) -> None:
    # R13.3-01: a summary, never anyone's private reasoning (as evidence, R13.2-05)
    no_private_reasoning(body, "$", "R13.3-01")
    check_fields(body, required=("package",))
    package = body["package"]
    if not isinstance(package, dict):
        raise malformed("package is an object", "$.package", "R13.3-02")
    check_fields(package, required=PACKAGE_FIELDS, path="$.package")
    check_id(package["id"], "$.package.id")
    _check_version(package["version"], "$.package.version")
    check_id(package["mission"], "$.package.mission")
    _unique(package["work_items"], "$.package.work_items")
    for index, work_item in enumerate(package["work_items"]):
        check_id(work_item, f"$.package.work_items[{index}]")
    _check_range_shape(package["event_range"])
    digests(package["artifacts"], "$.package.artifacts")
    _unique(package["artifacts"], "$.package.artifacts")
    for name in ("decisions", "constraints", "open_questions"):
        strings(package[name], f"$.package.{name}")
    check_principal(package["generator"], "$.package.generator")
    timestamp(package["created_at"], "$.package.created_at")


def keys_of_publish(command: Command, view: View) -> set[StateKey]:
    package = command.body["package"]
    return {
        context_key(package["id"]),
        mission_key(package["mission"]),
        *(work_item_key(work_item) for work_item in package["work_items"]),
        *stored_keys(package["artifacts"]),
    }


def decide_publish(view: View, command: Command) -> Decision:
    package = command.body["package"]
    last = package["event_range"][1]
    if last > command.head_sequence:
        # R13.3-02: the source range is of events that exist, so every citation resolves
        raise malformed(
            f"event_range ends after the head {command.head_sequence}",
            "$.package.event_range",
            "R13.3-02",
        )
    mission = mission_or_404(view, package["mission"], "$.package.mission", "R13.3-02")
    for index, work_item in enumerate(package["work_items"]):
        _require_in_mission(view, work_item, mission.id, f"$.package.work_items[{index}]")
    current: ContextPackage | None = view.get(context_key(package["id"]))
    latest = current.latest if current is not None else 0
    if package["version"] != latest + 1:
        # R13.3-04: an update is the next version; a recorded version is never replaced
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"package {package['id']!r} is at version {latest}: the next is {latest + 1}",
            requirement="R13.3-04",
            details={"package": package["id"], "latest": latest},
        )
    # wire.md §9: a digest is not a key; last, as for every command naming artifacts
    require_nameable(
        view,
        [(f"$.package.artifacts[{index}]", d) for index, d in enumerate(package["artifacts"])],
    )
    previous = current.version(latest) if current is not None else None
    # R13.3-04: the new version names its predecessor, and the authority's signature covers
    # that link, so the provenance chain verifies outside the server
    recorded = {**package, "previous": previous["digest"] if previous is not None else None}
    package_hash = package_digest(recorded)
    event = NewEvent(
        PUBLISHED,
        {"package": recorded, "digest": package_hash},
        authority_signs=("package",),  # R13.3-01: every recorded version is signed
    )
    result = {"package": package["id"], "version": package["version"], "digest": package_hash}
    return Decision([event], result)


def _require_in_mission(view: View, work_item: str, mission: str, path: str) -> None:
    """R13.3-02: the package's WorkItem scope lies within its mission."""
    item: WorkItem | None = view.get(work_item_key(work_item))
    if item is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no WorkItem {work_item!r} in this group",
            requirement="R13.3-02",
            details={"path": path, "work_item": work_item},
        )
    if item.mission != mission:
        raise ProtocolError(
            ErrorCode.MALFORMED,
            f"WorkItem {work_item!r} belongs to mission {item.mission!r}, not {mission!r}",
            requirement="R13.3-02",
            details={"path": path, "work_item": work_item, "mission": item.mission},
        )


# --- context.forward (R13.3-05, R13.3-07) --------------------------------------------------


def validate_forward(body: dict[str, Any]) -> None:
    check_fields(body, required=("package", "to_group"))
    reference = body["package"]
    if not isinstance(reference, dict):
        raise malformed("package is {id, version}", "$.package", "R13.3-07")
    check_fields(reference, required=("id", "version"), path="$.package")
    check_id(reference["id"], "$.package.id")
    _check_version(reference["version"], "$.package.version")
    check_id(body["to_group"], "$.to_group")


def keys_of_forward(command: Command, view: View) -> set[StateKey]:
    return {context_key(command.body["package"]["id"])}


def decide_forward(view: View, command: Command) -> Decision:
    """R13.3-05: a group's content reaches another group only by this explicit act of a
    coordinator of both (R13.3-07: the write path checks the role in ``to_group``), recorded
    in both logs: ``context.forwarded`` here, ``context.received`` there."""
    reference, to_group = command.body["package"], command.body["to_group"]
    package_id, number = reference["id"], reference["version"]
    if to_group == command.group:
        raise malformed("a package is forwarded to another group", "$.to_group", "R13.3-07")
    package: ContextPackage | None = view.get(context_key(package_id))
    entry = package.version(number) if package is not None else None
    if package is None or entry is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no version {number} of package {package_id!r} in this group",
            requirement="R13.3-07",
            details={"path": "$.package", "package": package_id, "version": number},
        )
    crossed = next(
        (f for f in package.forwarded if f["version"] == number and f["to_group"] == to_group),
        None,
    )
    if crossed is not None:
        # One crossing per version and group: the target holds it already (or will, from the
        # outbox), and a second would append a forward the target never receives.
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"version {number} of {package_id!r} was already forwarded to {to_group}",
            requirement="R13.3-07",
            details={
                "package": package_id,
                "version": number,
                "to_group": to_group,
                "sequence": crossed["sequence"],
            },
        )
    receive = FollowUp(
        group=to_group,
        type=RECEIVE,
        body={
            "package": entry["package"],
            "digest": entry["digest"],
            "from_group": command.group,
            "forwarded_by": command.actor,
            "source_sequence": entry["sequence"],
        },
        command_id=receive_command_id(command.group, command.id),
    )
    payload = {
        "package": {"id": package_id, "version": number},
        "digest": entry["digest"],
        "to_group": to_group,
    }
    return Decision(
        [NewEvent(FORWARDED, payload)],
        {**payload, "receive_command": receive.command_id},
        follow_ups=(receive,),
    )


# --- context.receive (authority only) --------------------------------------------------------


def validate_receive(body: dict[str, Any]) -> None:
    check_fields(
        body, required=("package", "digest", "from_group", "forwarded_by", "source_sequence")
    )


def keys_of_receive(command: Command, view: View) -> set[StateKey]:
    body = command.body
    return {context_key(body["package"]["id"], body["from_group"])}


def decide_receive(view: View, command: Command) -> Decision:
    body = command.body
    package_id, number = body["package"]["id"], body["package"]["version"]
    current: ContextPackage | None = view.get(context_key(package_id, body["from_group"]))
    if current is not None and current.version(number) is not None:
        # a forward crosses once per version (decide_forward), and a resend of it replays
        # by command id before this; anything else would record one version twice
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"version {number} of {package_id!r} from {body['from_group']} is already here",
            requirement="R13.3-07",
            details={"package": package_id, "version": number, "from_group": body["from_group"]},
        )
    result = {"package": package_id, "version": number, "from_group": body["from_group"]}
    return Decision([NewEvent(RECEIVED, dict(body))], result)


# --- shared checks ---------------------------------------------------------------------------


def _check_version(value: object, path: str) -> int:
    if type(value) is not int or value < 1:
        raise malformed("a version is an integer ≥ 1", path, "R13.3-04")
    return value


def _check_range_shape(value: object) -> None:
    """[from, to], whole sequences with 1 ≤ from ≤ to (the head bound is ``decide``'s)."""
    if (
        not isinstance(value, list)
        or len(value) != 2
        or any(type(bound) is not int for bound in value)
        or not 1 <= value[0] <= value[1]
    ):
        raise malformed(
            "event_range is [from, to], sequences with 1 ≤ from ≤ to ≤ head",
            "$.package.event_range",
            "R13.3-02",
        )


def _unique(value: object, path: str) -> None:
    """A list of at most ``MAX_SCOPE`` items, none twice (a scope is a set)."""
    if not isinstance(value, list):
        raise malformed("expected a list", path, "R13.3-02")
    if len(value) > MAX_SCOPE:
        raise malformed(f"at most {MAX_SCOPE} entries", path, "R13.3-02")
    seen: set[object] = set()
    for index, item in enumerate(value):
        if isinstance(item, str):
            if item in seen:
                raise malformed(f"{item!r} is named twice", f"{path}[{index}]", "R13.3-02")
            seen.add(item)


# --- evolvers --------------------------------------------------------------------------------

CONTEXT = REGISTRY.aggregate("context")


def _published_key(fact: Fact) -> list[StateKey]:
    return [context_key(fact.payload["package"]["id"])]


def _received_key(fact: Fact) -> list[StateKey]:
    return [context_key(fact.payload["package"]["id"], fact.payload["from_group"])]


def _by_version(entries: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    return tuple(sorted(entries, key=lambda entry: entry["version"]))


@evolves(PUBLISHED, aggregate=CONTEXT, keys=_published_key, creates=True)
def _published(current: ContextPackage | None, fact: Fact, key: StateKey) -> ContextPackage:
    package = fact.payload["package"]
    entry = {
        "version": package["version"],
        "digest": fact.payload["digest"],
        "package": package,
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
    }
    if current is None:
        return ContextPackage(id=package["id"], source_group=fact.group, versions=(entry,))
    return replace(current, versions=_by_version((*current.versions, entry)))


@evolves(FORWARDED, aggregate=CONTEXT, keys=_published_key)
def _forwarded(current: ContextPackage, fact: Fact, key: StateKey) -> ContextPackage:
    crossing = {
        "version": fact.payload["package"]["version"],
        "to_group": fact.payload["to_group"],
        "sequence": fact.sequence,
        "forwarded_by": fact.actor,
    }
    return replace(current, forwarded=(*current.forwarded, crossing))


@evolves(RECEIVED, aggregate=CONTEXT, keys=_received_key, creates=True)
def _received(current: ContextPackage | None, fact: Fact, key: StateKey) -> ContextPackage:
    payload = fact.payload
    package = payload["package"]
    entry = {
        "version": package["version"],
        "digest": payload["digest"],
        "package": package,
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
        "source_sequence": payload["source_sequence"],
        "forwarded_by": payload["forwarded_by"],
    }
    if current is None:
        return ContextPackage(
            id=package["id"],
            source_group=payload["from_group"],
            versions=(entry,),
            received_from=payload["from_group"],
            forwarded_by=payload["forwarded_by"],
        )
    versions = _by_version((*current.versions, entry))
    return replace(current, versions=versions, forwarded_by=versions[-1]["forwarded_by"])
