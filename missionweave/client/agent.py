"""``AgentClient``: sessions and signed commands over the REST API (wire.md §3, §4, §5).

The client owns what an agent must get right to be safe on a flaky network:

* one command id per logical command, kept across retries, so a retry after a lost answer is
  the *same* command (wire.md §3 step 5): the authority answers it from its idempotency
  record with ``Idempotent-Replayed: true`` and appends nothing. Each attempt is re-signed
  with a fresh ``issued_at`` and the current epochs, which are not part of the content.
* network errors and 5xx answers are retried with exponential backoff; a 4xx is a refusal
  and raises ``ApiError`` at once (resending cannot change it).
* a 401 ``STALE_SESSION`` (another process opened a newer session for this agent, R11.3-10)
  reopens the session and resends; a 403 ``STALE_MEMBERSHIP`` re-reads the memberships and
  resends once, signed with the new membership epoch.

Artifacts (wire.md §4, §9) travel the same way: ``upload`` hashes before it sends, so the
digest in the URL is the content's and a retry is the same idempotent ``PUT``; ``download``
verifies the digest while it receives (R13.1-05); ``publish`` and ``submit_work`` are signed
commands built from what was uploaded (R13.1-03, R13.2-02).
"""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from missionweave.protocol.canonical import canonical_bytes, is_digest
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.errors import ErrorCode, ProtocolError, http_status
from missionweave.protocol.identifiers import agent_principal
from missionweave.protocol.signing import document_signature_holds, parse_public_key, sign
from missionweave.protocol.strictjson import parse as parse_json
from missionweave.protocol.timefmt import format_timestamp

from .artifacts import (
    CHUNK_BYTES,
    DEFAULT_CLASSIFICATION,
    OCTET_STREAM,
    SOFTWARE_VERSION,
    build_manifest,
    payload_of,
    receive_bytes,
    receive_file,
    signed_manifest,
)
from .errors import ApiError, ClientError, Unavailable

API_PREFIX = "/api/v1"
#: a full artifact store: refused at once, not retried (issue 16 §8)
STORAGE_FULL_STATUS = http_status(ErrorCode.STORAGE_FULL)


@dataclass(frozen=True)
class Membership:
    roles: tuple[str, ...]
    epoch: int


@dataclass
class Session:
    """What ``POST /sessions`` answered (wire.md §5), memberships refreshed since."""

    session_id: str
    epoch: int
    token: str
    expires_at: str
    memberships: dict[str, Membership] = field(default_factory=dict)


@dataclass(frozen=True)
class CommandResult:
    """A 201/202 answer to a command. ``replayed`` is true when the authority answered from
    its idempotency record (wire.md §3 step 5): the command had already been accepted."""

    command_id: str
    status: int
    body: dict[str, Any]
    replayed: bool

    @property
    def events(self) -> list[dict[str, Any]]:
        return list(self.body.get("events", []))


def _memberships(document: object) -> dict[str, Membership]:
    if not isinstance(document, dict):
        return {}
    return {
        group: Membership(tuple(info.get("roles", ())), int(info["epoch"]))
        for group, info in document.items()
        if isinstance(info, dict) and isinstance(info.get("epoch"), int)
    }


class AgentClient:
    """An agent's connection to one Group Authority.

    ``transport`` is any ``httpx.BaseTransport`` (tests wrap the real one to lose answers or
    tamper with events); ``sleep`` is injectable so backoff costs nothing in tests.
    ``agent_card_version`` (the ``version`` of this agent's current Agent Card) and
    ``software_version`` (the producing software) go into every manifest it publishes
    (R13.1-03): the authority keeps the card but serves it to no agent, so the agent says it.
    """

    def __init__(
        self,
        base_url: str,
        agent_id: str,
        private_key: Ed25519PrivateKey,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 10.0,
        max_attempts: int = 6,
        backoff_s: float = 0.1,
        max_backoff_s: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        authority_key: Ed25519PublicKey | None = None,
        agent_card_version: str | None = None,
        software_version: str = SOFTWARE_VERSION,
    ) -> None:
        self.agent_id = agent_id
        self.principal = agent_principal(agent_id)
        self._key = private_key
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + API_PREFIX, transport=transport, timeout=timeout_s
        )
        self._max_attempts = max(1, max_attempts)
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._sleep = sleep
        self.session: Session | None = None
        self._authority_key = authority_key
        # the stream follower's thread and the caller's share the session: one opens it
        self._session_lock = threading.RLock()
        self.agent_card_version = agent_card_version
        self.software_version = software_version
        # digest -> size of what this client uploaded: a manifest states the stored size
        self._sizes: dict[str, int] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- sessions (wire.md §5) ----------------------------------------------------------------

    def open_session(self) -> Session:
        """Open a new session: a signed body with a fresh nonce (``REPLAYED_NONCE`` otherwise).

        Opening raises this agent's session epoch and revokes its active leases (R11.3-10);
        any earlier token of this agent answers ``STALE_SESSION`` from now on.
        """

        def attempt() -> httpx.Response:
            body = {
                "agent": self.agent_id,
                "issued_at": format_timestamp(datetime.now(UTC)),
                "nonce": secrets.token_urlsafe(24),
            }
            signed = {**body, "signature": sign(self._key, canonical_bytes(body))}
            return self._http.post("/sessions", json=signed)

        response = self._retrying(attempt)
        document = self._ok(response)
        self.session = Session(
            session_id=str(document["session_id"]),
            epoch=int(document["session_epoch"]),
            token=str(document["token"]),
            expires_at=str(document.get("expires_at", "")),
            memberships=_memberships(document.get("memberships")),
        )
        return self.session

    def refresh_memberships(self) -> dict[str, Membership]:
        """Re-read ``GET /sessions/current``: the membership epochs commands must carry."""
        document = self.get_json("/sessions/current")
        session = self._require_session()
        session.memberships = _memberships(document.get("memberships"))
        return session.memberships

    # -- commands (wire.md §3) ----------------------------------------------------------------

    def submit(
        self,
        group: str,
        type_: str,
        body: dict[str, Any],
        command_id: str | None = None,
        *,
        extensions: dict[str, Any] | None = None,
    ) -> CommandResult:
        """Sign and send one command; retry it under the SAME id until it is answered.

        Raises ``ApiError`` for a refusal (4xx) and ``Unavailable`` when every attempt failed.
        """
        command_id = command_id or f"cmd-{uuid.uuid4().hex}"
        refreshed_membership = False

        def attempt() -> httpx.Response:
            session = self._require_session()
            membership = session.memberships.get(group)
            document: dict[str, Any] = {
                "id": command_id,
                "type": type_,
                "group": group,
                "actor": self.principal,
                "session_epoch": session.epoch,
                # a group we do not know yet: the authority answers NOT_A_MEMBER
                "membership_epoch": membership.epoch if membership else 0,
                "issued_at": format_timestamp(datetime.now(UTC)),
                "body": body,
            }
            if extensions:
                document["extensions"] = extensions
            return self._http.post(
                f"/groups/{group}/commands",
                json=signed_envelope(self._key, document),
                headers=self._auth(),
            )

        while True:
            try:
                response = self._with_session(attempt)
            except ApiError as error:
                if error.code == "STALE_MEMBERSHIP" and not refreshed_membership:
                    refreshed_membership = True
                    self.refresh_memberships()
                    continue
                raise
            return CommandResult(
                command_id=command_id,
                status=response.status_code,
                body=response.json(),
                replayed=response.headers.get("Idempotent-Replayed") == "true",
            )

    # -- reads ---------------------------------------------------------------------------------

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """An authenticated GET below ``/api/v1``, retried like commands; 4xx raises.

        The body is parsed strictly (duplicate keys, lone surrogates and numbers beyond
        2^53 are refused, as the authority refuses them): an answer that does not parse is
        ``ApiError`` ``UNEXPECTED_RESPONSE``, never a half-read document."""
        response = self._with_session(
            lambda: self._http.get(path, params=params, headers=self._auth())
        )
        try:
            document = parse_json(response.content)
        except ProtocolError as error:
            raise ApiError(response.status_code, "UNEXPECTED_RESPONSE", error.message) from None
        if not isinstance(document, dict):
            raise ApiError(response.status_code, "UNEXPECTED_RESPONSE", "not a JSON object")
        return document

    def get_bytes(self, path: str) -> bytes:
        """The raw body of an authenticated GET: a snapshot is verified byte for byte, as
        signed (wire.md §7). ``path`` may carry the ``/api/v1`` prefix, as snapshot
        references do."""
        if path.startswith(API_PREFIX + "/"):
            path = path[len(API_PREFIX) :]
        response = self._with_session(lambda: self._http.get(path, headers=self._auth()))
        return response.content

    def report_presence(self, report: dict[str, Any]) -> dict[str, Any]:
        """``POST /presence`` (R11.1-11): this agent's current capacity, ``{"slots",
        "slots_free", "resources"?}``; the authority's stored document."""
        response = self._with_session(
            lambda: self._http.post("/presence", json=report, headers=self._auth())
        )
        return self._ok(response)

    def authority_key(self) -> Ed25519PublicKey:
        """The key heads and snapshots must be signed with: the one pinned at construction,
        else the one ``GET /authority`` publishes, read once (trust on first use)."""
        if self._authority_key is None:
            response = self._retrying(lambda: self._http.get("/authority"))
            self._authority_key = parse_public_key(str(self._ok(response)["public_key"]))
        return self._authority_key

    def signed_head(self, group: str) -> dict[str, Any]:
        """``GET /groups/{g}/head`` once its signature verifies with ``authority_key``
        (wire.md §4); a head that does not verify is ``ApiError`` ``HEAD_NOT_SIGNED``."""
        head = self.get_json(f"/groups/{group}/head")
        if not document_signature_holds(self.authority_key(), head):
            raise ApiError(200, "HEAD_NOT_SIGNED", "the head is not signed by the authority")
        return head

    # -- artifacts (wire.md §4, §9) --------------------------------------------------------------

    def upload(
        self,
        data: bytes | bytearray | memoryview | os.PathLike[str],
        *,
        content_type: str = OCTET_STREAM,
    ) -> str:
        """``PUT /artifacts/{digest}``: store bytes in hand or a file's content; its digest.

        The digest is computed first (a file is hashed, then streamed in 1 MiB chunks with
        its ``Content-Length``, so the authority can refuse an oversized one before reading
        it). 201 and 200 (already stored) are both success: the content is immutable
        (R13.1-01), so uploading it again is harmless and a retry is the same request. A
        refusal is ``ApiError`` (``TOO_LARGE``, ``ARTIFACT_HASH_MISMATCH``, ...).
        """
        payload = payload_of(data)

        def attempt() -> httpx.Response:
            headers = {
                **self._auth(),
                "Content-Type": content_type,
                "Content-Length": str(payload.size),
            }
            return self._http.put(
                f"/artifacts/{payload.digest}", content=payload.chunks(), headers=headers
            )

        self._with_session(attempt)
        self._sizes[payload.digest] = payload.size
        return payload.digest

    @overload
    def download(self, digest: str, *, to: None = None) -> bytes: ...

    @overload
    def download(self, digest: str, *, to: str | os.PathLike[str]) -> Path: ...

    def download(self, digest: str, *, to: str | os.PathLike[str] | None = None) -> bytes | Path:
        """``GET /artifacts/{digest}``, verified against the digest as it streams (R13.1-05).

        Without ``to`` the verified bytes are returned; with it they are written there
        (through a temporary file renamed into place once verified) and the path returned.
        Bytes that do not hash to ``digest`` raise ``ArtifactMismatch`` at once, not retried,
        and leave nothing behind. The authority's own refusal to serve an object that no
        longer matches is ``ApiError`` 409 ``ARTIFACT_CORRUPTED``; one this agent may not
        read is 404 ``NOT_FOUND``, like one never stored. A connection lost halfway is
        retried from the start.
        """
        if not is_digest(digest):
            raise ValueError(f"not a digest: {digest!r} (expected sha256:<64 lowercase hex>)")
        target = Path(to) if to is not None else None
        received: list[bytes | Path] = []

        def attempt() -> httpx.Response:
            with self._http.stream("GET", f"/artifacts/{digest}", headers=self._auth()) as response:
                if response.status_code != 200:
                    response.read()  # a refusal's error document
                    return response
                chunks = response.iter_bytes(CHUNK_BYTES)
                if target is None:
                    received[:] = [receive_bytes(chunks, digest)]
                else:
                    received[:] = [receive_file(chunks, digest, target)]
                return response

        self._with_session(attempt)
        return received[0]

    def artifact_size(self, digest: str) -> int:
        """The stored size of an artifact this agent may read (``HEAD /artifacts/{digest}``)."""
        if digest not in self._sizes:
            response = self._with_session(
                lambda: self._http.head(f"/artifacts/{digest}", headers=self._auth())
            )
            self._sizes[digest] = int(response.headers["content-length"])
        return self._sizes[digest]

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
        sources: Sequence[str] = (),
        tool_versions: Mapping[str, str] | None = None,
        classification: str = DEFAULT_CLASSIFICATION,
        created_at: str | None = None,
        size: int | None = None,
        version: str | None = None,
        agent_card_version: str | None = None,
        sign: bool = True,
        command_id: str | None = None,
    ) -> CommandResult:
        """``artifact.publish``: the manifest of an uploaded artifact (R13.1-03).

        Built here from what the agent knows: ``size`` from its upload (else ``HEAD``),
        ``mission`` from the WorkItem (read once when not given), ``producer`` this agent at
        ``agent_card_version`` running ``version`` (the client's defaults unless given), the
        authority's ``uri``. With ``sign`` the agent signs the canonical manifest with its
        own key, so the manifest verifies as the producer's outside the authority; without,
        the authority signs it as it records it (the event's ``signed_by`` says which).
        The manifest is built once, so a retry sends the same content under the same id.
        """
        card = agent_card_version or self.agent_card_version
        if card is None:
            raise ClientError(
                "publish needs this agent's Agent Card version: pass agent_card_version "
                "to AgentClient or to publish (R13.1-03)"
            )
        if mission is None:
            mission = str(self.get_json(f"/groups/{group}/work-items/{work_item}")["mission"])
        manifest = build_manifest(
            digest=digest,
            size=size if size is not None else self.artifact_size(digest),
            media_type=media_type,
            schema=schema,
            producer=self.principal,
            version=version or self.software_version,
            agent_card_version=card,
            mission=mission,
            work_item=work_item,
            sources=sources,
            tool_versions=tool_versions or {},
            created_at=created_at or format_timestamp(datetime.now(UTC)),
            classification=classification,
        )
        if sign:
            manifest = signed_manifest(self._key, manifest)
        body = {"work_item": work_item, "lease_id": lease_id, "manifest": manifest}
        return self.submit(group, "artifact.publish", body, command_id)

    def submit_work(
        self,
        group: str,
        work_item: str,
        lease_id: str,
        *,
        outputs: Mapping[str, str],
        evidence: Sequence[Mapping[str, Any]],
        artifacts: Sequence[str] | None = None,
        command_id: str | None = None,
    ) -> CommandResult:
        """``work.submit``: the result, with evidence for every acceptance criterion
        (R13.2-02) and ``outputs`` naming which artifact is which declared output.

        ``artifacts`` defaults to the distinct digests of ``outputs``. An evidence item
        without ``producer`` gets this agent (the authority requires the sender, R13.2-04),
        one without ``artifacts`` an empty list. A former owner's submission is answered 202
        (``CommandResult.status``): kept for audit, state unchanged (R11.5-02).
        """
        submitted = (
            list(artifacts) if artifacts is not None else list(dict.fromkeys(outputs.values()))
        )
        items = [{"producer": self.principal, "artifacts": [], **item} for item in evidence]
        body: dict[str, Any] = {
            "work_item": work_item,
            "lease_id": lease_id,
            "artifacts": submitted,
            "evidence": items,
        }
        if outputs:
            body["outputs"] = dict(outputs)
        return self.submit(group, "work.submit", body, command_id)

    # -- machinery ------------------------------------------------------------------------------

    def current_session(self) -> Session:
        """The open session, opened first if there is none (once, whatever the threads)."""
        with self._session_lock:
            return self.session if self.session is not None else self.open_session()

    def renew_session(self, stale_token: str) -> Session:
        """Open a new session because ``stale_token`` was refused; if another thread already
        replaced it, use that one instead of replacing it again (each new session makes the
        previous token stale, R11.3-10, so two threads renewing in turn would never settle)."""
        with self._session_lock:
            if self.session is None or self.session.token == stale_token:
                return self.open_session()
            return self.session

    _require_session = current_session

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._require_session().token}"}

    def _with_session(self, attempt: Callable[[], httpx.Response]) -> httpx.Response:
        """Run ``attempt`` with retries; on 401 ``STALE_SESSION`` reopen once and resend."""
        token = self.current_session().token
        response = self._retrying(attempt)
        if response.status_code == 401 and _code(response) == "STALE_SESSION":
            self.renew_session(token)
            response = self._retrying(attempt)
        self._refused(response)
        return response

    def _retrying(self, attempt: Callable[[], httpx.Response]) -> httpx.Response:
        """Network errors and 5xx are retried with exponential backoff and jitter, except 507
        ``STORAGE_FULL`` (room is made by an operator, not by waiting); any other answer is
        returned. Every attempt is rebuilt by ``attempt`` (fresh signature and
        ``issued_at``), with the same content."""
        last: str = ""
        for number in range(self._max_attempts):
            if number:
                delay = min(self._max_backoff_s, self._backoff_s * 2 ** (number - 1))
                self._sleep(delay * (0.5 + random.random() / 2))  # noqa: S311 - jitter only
            try:
                response = attempt()
            except httpx.TransportError as error:
                last = f"{type(error).__name__}: {error}"
                continue
            if response.status_code >= 500 and response.status_code != STORAGE_FULL_STATUS:
                last = f"HTTP {response.status_code}"
                continue
            return response
        raise Unavailable(f"no answer after {self._max_attempts} attempts ({last})")

    @staticmethod
    def _ok(response: httpx.Response) -> dict[str, Any]:
        AgentClient._refused(response)
        document = _document(response)
        return document if isinstance(document, dict) else {}

    @staticmethod
    def _refused(response: httpx.Response) -> None:
        """Raise the refusal a 4xx answer carries. A success is not parsed here: its body
        may be an artifact's bytes, already consumed as a stream."""
        if response.status_code >= 400:
            raise ApiError.from_response(response.status_code, _document(response))


def _document(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def _code(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""
