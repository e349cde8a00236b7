"""How large the long proofs run: a bounded sample in ``make test``, everything in
``make proofs``.

A long proof — thousands of contended commands, a stream under load, a long property run —
asserts the same things at any size; size buys confidence, not different behaviour. CI runs
the whole suite on a 2-core machine within a time limit, so ``make test`` runs each long proof
on a sample, and ``make proofs`` (``MWP_PROOFS=full``) runs the same tests at full size.
Modules holding one are marked ``proof``: ``tests/conftest.py`` schedules them first, so the
two xdist workers start on the longest files and the short ones fill in around them.
"""

from __future__ import annotations

import os

FULL = os.environ.get("MWP_PROOFS", "sample") == "full"


def size(*, sample: int, full: int) -> int:
    """``full`` under ``make proofs``, ``sample`` otherwise."""
    return full if FULL else sample
