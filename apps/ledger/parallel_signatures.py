"""A batch's Ed25519 signatures checked on several threads (wire.md §3 step 3, issue 15 §2).

Checking one signature took ~90 µs with OpenSSL on this project's 2-core machine kind, a
quarter of a batched command's whole cost, and takes ~55 µs with libsodium, which checks
them now (``protocol.signing``; docs/benchmarks.md, section 3). PyNaCl's calls into
libsodium release the GIL, so the checks of one batch split over the cores run side by
side: the calling thread takes the first share and a small process-wide pool the others,
each share one task (a future per signature would cost more than it saves).

Only the pure check runs on the pool: the keys are read and parsed by the caller (a key
read touches the database, whose connections are per thread), and the caller decides what
a refusal means (``write_path.verify_each`` retries it against the keys read afresh).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from missionweave.protocol.envelope import Envelope, check_signature
from missionweave.protocol.errors import ProtocolError

#: threads a batch's checks run on, the caller's included: one per core
THREADS = os.cpu_count() or 1
#: fewer signatures than this are checked on the calling thread alone
PARALLEL_FROM = 16

#: an envelope and the parsed keys to check it against; ``None``: nothing to check (a
#: person's command, or one refused before its signature)
Check = tuple[Envelope, Sequence[Ed25519PublicKey]] | None

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def refusals(checks: Sequence[Check]) -> list[ProtocolError | None]:
    """For each check, in order, the ``INVALID_SIGNATURE`` refusal or ``None``."""
    if len(checks) < PARALLEL_FROM or THREADS < 2:
        return _refusals(checks)
    share = -(-len(checks) // THREADS)
    shares = [checks[start : start + share] for start in range(0, len(checks), share)]
    others = [_executor().submit(_refusals, part) for part in shares[1:]]
    found = _refusals(shares[0])
    for other in others:
        found.extend(other.result())
    return found


def _refusals(checks: Sequence[Check]) -> list[ProtocolError | None]:
    found: list[ProtocolError | None] = []
    for check in checks:
        if check is None:
            found.append(None)
            continue
        try:
            check_signature(*check)
        except ProtocolError as refusal:
            found.append(refusal)
        else:
            found.append(None)
    return found


def _executor() -> ThreadPoolExecutor:
    global _pool  # noqa: PLW0603 - one pool per process, made on first use
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=max(1, THREADS - 1), thread_name_prefix="mwp-signatures"
            )
        return _pool


def _forget_pool() -> None:
    """In a forked child (a server's or Celery's worker processes): the parent's threads
    did not come along, so its pool cannot run anything here; the child makes its own."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)
