"""The authority's signature on documents recorded inside events (R13.1-03, R13.3-01).

An artifact manifest without its producer's signature and every context package are signed
by the authority as they are recorded, so every manifest and package in a log verifies
outside the server against ``GET /authority``'s public key. The pure core names the payload
keys to sign (``NewEvent.authority_signs``); signing happens here, under the group lock,
before the event is hashed, so the signature is part of the hash-chained log.
"""

from __future__ import annotations

from dataclasses import replace

from missionweave.protocol.facts import Decision, NewEvent

from .authority import signed


def signed_events(decision: Decision) -> Decision:
    """``decision`` with each named document that has no ``signature`` signed."""
    if not any(event.authority_signs for event in decision.events):
        return decision
    return replace(decision, events=[_signed(event) for event in decision.events])


def _signed(event: NewEvent) -> NewEvent:
    if not event.authority_signs:
        return event
    payload = dict(event.payload)
    for key in event.authority_signs:
        document = payload[key]
        if "signature" not in document:
            payload[key] = signed(document)
    return replace(event, payload=payload, authority_signs=())
