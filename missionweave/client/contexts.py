"""Context packages for agents (R13.3): publish a version, read a package and its versions,
list a mission's packages, read the events a version cites, forward one to another group.

A context package is a signed, versioned summary of one mission of one group, never a
replacement for its history (R13.3-01). What an agent reads is therefore checked before it is
handed back: every version's signature verifies under the authority's key (``GET /authority``,
pinned or read once), its ``digest`` is over the package without the signature, and each
version names its predecessor's digest as ``previous`` (R13.3-04). A package that fails is
``ApiError`` ``CONTEXT_NOT_SIGNED`` naming the version, never a half-trusted summary.

    packages = ContextPackages(client)
    packages.publish("g-research", "ctx-incidents", mission="m-1", work_items=["wi-1"],
                     decisions=["one summary per incident"])
    latest = packages.read("g-research", "ctx-incidents").latest
    packages.forward("g-research", "ctx-incidents", latest.version, to_group="g-lab")

Forwarding (R13.3-07) needs the coordinator role in both groups; the target group then holds
the version under ``<from_group>/<id>`` (``read(..., from_group=...)``), and its members read
the events it cites only if they are members of the source group too (R13.3-03).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from missionweave.protocol.context import package_digest
from missionweave.protocol.signing import document_signature_holds
from missionweave.protocol.timefmt import format_timestamp

from .agent import AgentClient, CommandResult
from .errors import ApiError

#: the code of a package whose signature, digest or version chain does not verify
NOT_SIGNED = "CONTEXT_NOT_SIGNED"


@dataclass(frozen=True)
class ContextVersion:
    """One recorded version: the signed ``package`` (R13.3-02 fields, ``previous`` and
    ``signature``) and where this group's log recorded it."""

    version: int
    digest: str
    package: Mapping[str, Any]
    sequence: int
    recorded_at: str
    #: a received version: its ``context.published`` in the source group, and who forwarded it
    source_sequence: int | None = None
    forwarded_by: str | None = None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> ContextVersion:
        return cls(
            version=int(entry["version"]),
            digest=str(entry["digest"]),
            package=dict(entry["package"]),
            sequence=int(entry["sequence"]),
            recorded_at=str(entry["recorded_at"]),
            source_sequence=entry.get("source_sequence"),
            forwarded_by=entry.get("forwarded_by"),
        )

    @property
    def mission(self) -> str:
        return str(self.package["mission"])

    @property
    def work_items(self) -> tuple[str, ...]:
        return tuple(self.package["work_items"])

    @property
    def event_range(self) -> tuple[int, int]:
        first, last = self.package["event_range"]
        return int(first), int(last)

    @property
    def decisions(self) -> tuple[str, ...]:
        return tuple(self.package["decisions"])

    @property
    def constraints(self) -> tuple[str, ...]:
        return tuple(self.package["constraints"])

    @property
    def open_questions(self) -> tuple[str, ...]:
        return tuple(self.package["open_questions"])

    @property
    def artifacts(self) -> tuple[str, ...]:
        return tuple(self.package["artifacts"])

    @property
    def generator(self) -> str:
        return str(self.package["generator"])


@dataclass(frozen=True)
class ContextPackage:
    """A package as one group holds it: every version it recorded, oldest first (a listing
    holds only the latest whole: ``complete`` is false there)."""

    id: str
    source_group: str
    versions: tuple[ContextVersion, ...]
    received_from: str | None = None
    forwarded_by: str | None = None
    #: the crossings of a package published here: {version, to_group, sequence, forwarded_by}
    forwarded: tuple[Mapping[str, Any], ...] = ()
    complete: bool = True

    @property
    def latest(self) -> ContextVersion:
        return self.versions[-1]


class ContextPackages:
    """The context-package calls of one ``AgentClient``. ``verify`` (default) checks every
    version read before returning it (module doc)."""

    def __init__(self, client: AgentClient, *, verify: bool = True) -> None:
        self.client = client
        self.verify = verify

    # -- publish and forward (coordinator) ------------------------------------------------------

    def publish(
        self,
        group: str,
        package_id: str,
        *,
        mission: str,
        work_items: Sequence[str] = (),
        event_range: tuple[int, int] | None = None,
        artifacts: Sequence[str] = (),
        decisions: Sequence[str] = (),
        constraints: Sequence[str] = (),
        open_questions: Sequence[str] = (),
        generator: str | None = None,
        version: int | None = None,
        created_at: str | None = None,
        command_id: str | None = None,
    ) -> CommandResult:
        """``context.publish`` of the next version of ``package_id`` (R13.3-04): ``version``
        read from the group when not given (1 for a new id). ``event_range`` defaults to the
        whole log so far (1 to the signed head); ``generator`` to this agent. The body is built
        once, so a retry sends the same content under the same id."""
        if version is None:
            version = self._next_version(group, package_id)
        if event_range is None:
            event_range = (1, int(self.client.signed_head(group)["sequence"]))
        package = {
            "id": package_id,
            "version": version,
            "mission": mission,
            "work_items": list(work_items),
            "event_range": list(event_range),
            "artifacts": list(artifacts),
            "decisions": list(decisions),
            "constraints": list(constraints),
            "open_questions": list(open_questions),
            "generator": generator or self.client.principal,
            "created_at": created_at or format_timestamp(datetime.now(UTC)),
        }
        return self.client.submit(group, "context.publish", {"package": package}, command_id)

    def forward(
        self,
        group: str,
        package_id: str,
        version: int,
        *,
        to_group: str,
        command_id: str | None = None,
    ) -> CommandResult:
        """``context.forward`` of one version to ``to_group`` (R13.3-05, R13.3-07): auditable in
        both logs; it carries no events and opens no membership."""
        body = {"package": {"id": package_id, "version": version}, "to_group": to_group}
        return self.client.submit(group, "context.forward", body, command_id)

    # -- read ---------------------------------------------------------------------------------

    def read(self, group: str, package_id: str, *, from_group: str | None = None) -> ContextPackage:
        """Every version of a package published in ``group`` (or received there from
        ``from_group``), verified; ``ApiError`` 404 ``NOT_FOUND`` for an unknown one."""
        document = self.client.get_json(_package_path(group, package_id, from_group))
        versions = tuple(ContextVersion.of(entry) for entry in document["versions"])
        self._verified(package_id, versions, chained=True)
        return ContextPackage(
            id=str(document["id"]),
            source_group=str(document["source_group"]),
            versions=versions,
            received_from=document.get("received_from"),
            forwarded_by=document.get("forwarded_by"),
            forwarded=tuple(document.get("forwarded") or ()),
        )

    def versions(
        self, group: str, package_id: str, *, from_group: str | None = None
    ) -> tuple[ContextVersion, ...]:
        return self.read(group, package_id, from_group=from_group).versions

    def listing(
        self, group: str, *, mission: str | None = None, work_item: str | None = None
    ) -> list[ContextPackage]:
        """The packages ``group`` holds (``GET /groups/{g}/contexts``), every page, each with
        its latest version verified; only those in ``mission``'s (or ``work_item``'s) context
        when given — never one received from another group (R13.3-05)."""
        params: dict[str, Any] = {"limit": 1000}
        if mission is not None:
            params["mission"] = mission
        if work_item is not None:
            params["work_item"] = work_item
        found: list[ContextPackage] = []
        while True:
            page = self.client.get_json(f"/groups/{group}/contexts", params=params)
            for entry in page["packages"]:
                latest = ContextVersion.of(entry["latest"])
                self._verified(str(entry["id"]), (latest,), chained=False)
                found.append(
                    ContextPackage(
                        id=str(entry["id"]),
                        source_group=str(entry["source_group"]),
                        versions=(latest,),
                        received_from=entry.get("received_from"),
                        forwarded_by=entry.get("forwarded_by"),
                        complete=False,
                    )
                )
            if page.get("next_after") is None:
                return found
            params["after"] = page["next_after"]

    def cited_events(
        self,
        group: str,
        package_id: str,
        version: int,
        *,
        from_group: str | None = None,
        page_size: int = 1000,
    ) -> Iterator[dict[str, Any]]:
        """The events a version cites, from its source group's log, in order (R13.3-03): for
        members of that group only (``ApiError`` 403 ``NOT_A_MEMBER`` naming it otherwise)."""
        path = f"{_package_path(group, package_id, from_group)}/versions/{version}/events"
        after: int | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if after is not None:
                params["after"] = after
            page = self.client.get_json(path, params=params)
            yield from page["events"]
            last = int(page["event_range"][1])
            if not page["events"] or page["next_after"] >= last:
                return
            after = int(page["next_after"])

    # -- machinery ------------------------------------------------------------------------------

    def _next_version(self, group: str, package_id: str) -> int:
        try:
            return self.read(group, package_id).latest.version + 1
        except ApiError as error:
            if error.code == "NOT_FOUND":
                return 1
            raise

    def _verified(
        self, package_id: str, versions: Sequence[ContextVersion], *, chained: bool
    ) -> None:
        """Each version signed by the authority over its digest; with ``chained``, each one's
        ``previous`` the digest of the one before (R13.3-01, R13.3-04)."""
        if not self.verify:
            return
        key = self.client.authority_key()
        previous: str | None = None
        for number, entry in enumerate(versions):
            problem = None
            if not document_signature_holds(key, entry.package):
                problem = "its signature does not verify under the authority's key"
            elif package_digest(dict(entry.package)) != entry.digest:
                problem = "its digest is not the package's"
            elif chained and number and entry.package.get("previous") != previous:
                problem = "it does not name the version before it as previous"
            if problem is not None:
                message = f"version {entry.version} of context package {package_id!r}: {problem}"
                raise ApiError(200, NOT_SIGNED, message, "R13.3-01", {"version": entry.version})
            previous = entry.digest


def _package_path(group: str, package_id: str, from_group: str | None) -> str:
    if from_group is None:
        return f"/groups/{group}/contexts/{package_id}"
    return f"/groups/{group}/contexts/{from_group}/{package_id}"
