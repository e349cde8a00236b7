"""``parallel_signatures.refusals``: a batch's signature checks split over threads answer
exactly what checking them one by one answers, in the batch's order (wire.md §3 step 3).
Pure: envelopes signed here, no database."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.ledger import parallel_signatures
from missionweave.protocol.envelope import Envelope, signed_envelope
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.signing import generate_private_key

KEY = generate_private_key()
OTHER_KEY = generate_private_key()


def _envelope(index: int, *, forged: bool) -> Envelope:
    document = {"id": f"cmd-{index}", "type": "mission.create", "group": "g", "body": {}}
    signed = signed_envelope(OTHER_KEY if forged else KEY, document)
    return Envelope(
        id=f"cmd-{index}",
        type="mission.create",
        group="g",
        actor="agent:a",
        actor_kind="agent",
        actor_name="a",
        session_epoch=1,
        membership_epoch=1,
        issued_at=datetime.now(UTC),
        body={},
        extensions={},
        signature=signed["signature"],
        document=document,
    )


#: per item: a good signature, a forged one, or nothing to check
KINDS = st.sampled_from(["good", "forged", "none"])


@settings(max_examples=40, deadline=None)
@given(st.lists(KINDS, max_size=4 * parallel_signatures.PARALLEL_FROM))
def test_refusals_are_those_of_the_forged_items_in_order(kinds: list[str]) -> None:
    checks: list[parallel_signatures.Check] = [
        None if kind == "none" else (_envelope(i, forged=kind == "forged"), [KEY.public_key()])
        for i, kind in enumerate(kinds)
    ]

    found = parallel_signatures.refusals(checks)

    assert [r.code if r is not None else None for r in found] == [
        ErrorCode.INVALID_SIGNATURE if kind == "forged" else None for kind in kinds
    ]


def test_a_large_batch_is_checked_on_more_than_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shares after the first run on the pool's threads (on two cores or more)."""
    checks: list[parallel_signatures.Check] = [
        (_envelope(i, forged=False), [KEY.public_key()])
        for i in range(parallel_signatures.PARALLEL_FROM * 2)
    ]
    threads: set[str] = set()
    check_share = parallel_signatures._refusals

    def recorded(share: Sequence[parallel_signatures.Check]) -> list[ProtocolError | None]:
        threads.add(threading.current_thread().name)
        return check_share(share)

    monkeypatch.setattr(parallel_signatures, "_refusals", recorded)

    assert parallel_signatures.refusals(checks) == [None] * len(checks)
    assert len(threads) == min(parallel_signatures.THREADS, 2)


# what this test is about: a pool's threads do not survive a fork (the child here runs
# only the checks, which take no lock another thread may hold)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork")
def test_a_forked_child_checks_on_its_own_pool() -> None:
    """A process forked after the pool was made (a server's or Celery's workers) does not
    inherit its threads: the child makes its own pool and its checks still complete."""
    checks: list[parallel_signatures.Check] = [
        (_envelope(i, forged=i == 5), [KEY.public_key()])
        for i in range(parallel_signatures.PARALLEL_FROM * 2)
    ]
    parallel_signatures.refusals(checks)  # the parent's pool exists now
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        found = parallel_signatures.refusals(checks)
        os.write(write, ",".join(str(r is not None) for r in found).encode())
        os._exit(0)
    os.close(write)
    status = _waited(child, seconds=30)
    with os.fdopen(read) as answer:
        flags = answer.read().split(",")
    assert status == 0, "the child's checks did not complete"
    assert flags == [str(i == 5) for i in range(len(checks))]


def _waited(child: int, *, seconds: float) -> int | None:
    """The child's exit code, or ``None`` (and the child killed) if it hangs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return None
