"""A worker agent as a process of its own, for the SIGSTOP test (R11.5-02, R11.5-03).

It speaks only HTTP to the authority (wire.md §3–§5) and signs with its own key, like any
agent written by anyone: it opens a session, accepts its offer, starts the WorkItem with a
short lease, prints one JSON line and then waits for a line on stdin. The test freezes it
with SIGSTOP while the lease runs out, lets the real Celery sweep reassign the item, thaws it
with SIGCONT and writes ``submit``: the agent, unaware of the time it lost, uploads its result
(``PUT /api/v1/artifacts/{digest}``: a command names only stored bytes, wire.md §9), submits
it and prints the authority's answer as a JSON line.

Run as ``python tests/work/late_agent.py URL AGENT GROUP WORK_ITEM OFFER`` with the agent's
Ed25519 seed (base64url) in ``MWP_AGENT_KEY_SEED``. Only the pure protocol package is
imported (canonical JSON, signing, timestamps): no Django.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from missionweave.protocol.canonical import canonical_bytes, sha256_digest
from missionweave.protocol.signing import b64url_decode, private_key_from_seed, sign
from missionweave.protocol.timefmt import format_timestamp

LEASE_TTL_S = 2


def _now() -> str:
    return format_timestamp(datetime.now(UTC))


#: the one output the example contract declares (``summary``), as this agent produces it
RESULT = b"# November incidents\n\nthe late result\n"


def _post(url: str, document: dict[str, Any], token: str | None = None) -> tuple[int, Any]:
    return _send(url, json.dumps(document).encode(), "POST", "application/json", token)


def _send(
    url: str, data: bytes, method: str, content_type: str, token: str | None = None
) -> tuple[int, Any]:
    headers = {"Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main(argv: list[str]) -> int:
    base, agent, group, work_item, offer = argv
    key = private_key_from_seed(b64url_decode(os.environ["MWP_AGENT_KEY_SEED"]))
    api = f"{base}/api/v1"

    hello = {"agent": agent, "issued_at": _now(), "nonce": secrets.token_urlsafe(18)}
    status, session = _post(
        f"{api}/sessions", {**hello, "signature": sign(key, canonical_bytes(hello))}
    )
    if status != 201:
        _say(step="session", status=status, body=session)
        return 1
    token = session["token"]

    def command(type_: str, body: dict[str, Any]) -> tuple[int, Any]:
        document = {
            "id": f"cmd-{secrets.token_hex(8)}",
            "type": type_,
            "group": group,
            "actor": f"agent:{agent}",
            "session_epoch": session["session_epoch"],
            "membership_epoch": session["memberships"][group]["epoch"],
            "issued_at": _now(),
            "body": body,
        }
        document["signature"] = sign(key, canonical_bytes(document))
        return _post(f"{api}/groups/{group}/commands", document, token)

    status, accepted = command(
        "work.accept_offer", {"work_item": work_item, "offer": offer, "contract_revision": 1}
    )
    if status != 201:
        _say(step="accept", status=status, body=accepted)
        return 1
    epoch = accepted["result"]["ownership_epoch"]
    status, started = command(
        "work.start",
        {"work_item": work_item, "ownership_epoch": epoch, "lease_ttl_s": LEASE_TTL_S},
    )
    _say(step="start", status=status, body=started)
    if status != 201:
        return 1

    if sys.stdin.readline().strip() != "submit":  # frozen here by SIGSTOP, then thawed
        return 1
    result = sha256_digest(RESULT)
    status, stored = _send(f"{api}/artifacts/{result}", RESULT, "PUT", "text/markdown", token)
    if status not in (200, 201):
        _say(step="upload", status=status, body=stored)
        return 1
    status, answer = command(
        "work.submit",
        {
            "work_item": work_item,
            "lease_id": started["result"]["lease"]["lease_id"],
            "artifacts": [result],
            "evidence": [
                {
                    "criterion": "c1",
                    "method": "deterministic",
                    "result": {"verdict": "pass", "summary": "c1: pass", "data": {}},
                    "producer": f"agent:{agent}",
                    "artifacts": [result],
                }
            ],
        },
    )
    _say(step="submit", status=status, body=answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
