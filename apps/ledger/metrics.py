"""The server's Prometheus metrics (issue 15 §7): one module, so every name is in one place.

The write path (so every sweep too) and the stream count into the objects below; ``/metrics``
(``apps.api.views.health``) exposes them, plus :class:`ScrapeTimeCollector`, whose gauges are
read from the database when Prometheus scrapes rather than kept up to date on every write.

Cost: the instrumented paths do a ``Counter.inc`` or ``Histogram.observe`` under the
metric's own lock and never a query: about 10 µs per command in all, measured on this
machine kind, against ~2.4 ms for the command itself (docs/benchmarks.md). Cardinality is
bounded by construction: a command type is one of the command table's (anything else is
``unknown``), a code one of ``ErrorCode``'s, and nothing is labelled by group, principal or
agent.

Processes: without ``PROMETHEUS_MULTIPROC_DIR`` each process counts into its own memory and
reports only its own counts. With it (set before the process starts: prometheus-client chooses
its storage when first imported), every process on the host writes its values to files in
that folder and any one of them reports the sum (README, "Operations: health and metrics").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.context_managers import Timer
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ProtocolError

#: the label of a command whose type is not in the command table (or that has no type at all)
UNKNOWN = "unknown"
#: where a write-path latency was measured: one command, or a batch under one lock
SINGLE, BATCH = "command", "batch"

COMMANDS_ACCEPTED = Counter(
    "mwp_commands_accepted",
    "Commands the write path accepted, by type; replayed: answered from the idempotency record.",
    ["type", "replayed"],
)
COMMANDS_REFUSED = Counter(
    "mwp_commands_refused",
    "Commands the write path refused, by type and wire.md §8 error code.",
    ["type", "code"],
)
WRITE_PATH_SECONDS = Histogram(
    "mwp_write_path_seconds",
    "Time in the write path, commit and after-commit hints included: per command, or per "
    "batch (commands:batch, a sweep's batch of one group).",
    ["entry"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
BATCH_SIZE = Histogram(
    "mwp_command_batch_size",
    "Commands per commands:batch request (at most MWP_MAX_BATCH_COMMANDS, 500).",
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 500),
)
STREAM_SUBSCRIBERS = Gauge(
    "mwp_stream_subscribers",
    "Open websocket connections of /ws/v1/stream (summed over live processes).",
    multiprocess_mode="livesum",
)
STREAM_DELIVERY_SECONDS = Histogram(
    "mwp_stream_delivery_seconds",
    "From an event's recorded_at (database clock) to its live frame being sent; replays of "
    "older events from the log are not counted.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
EVENT_PAGES_READ_AHEAD = Counter(
    "mwp_event_pages_read_ahead",
    "GET …/events pages read ahead for a reader catching up, by what became of each when its "
    "request came: served, or read afresh (the page was not full or its read failed).",
    ["outcome"],
)

# Bound once: ``labels()`` looks the child up under a lock on every call.
_SINGLE_SECONDS = WRITE_PATH_SECONDS.labels(entry=SINGLE)
_BATCH_SECONDS = WRITE_PATH_SECONDS.labels(entry=BATCH)
_PAGES_SERVED_AHEAD = EVENT_PAGES_READ_AHEAD.labels(outcome="served")
_PAGES_READ_AFRESH = EVENT_PAGES_READ_AHEAD.labels(outcome="read_afresh")


class _Answer(Protocol):
    """An accepted command's outcome (``write_path.Outcome``, which imports this module)."""

    replayed: bool


def command_type(document: object) -> str:
    """The type label of a submitted document: its type if the command table has it."""
    kind = document.get("type") if isinstance(document, dict) else None
    return kind if isinstance(kind, str) and kind in COMMANDS else UNKNOWN


def count(type_: str, result: _Answer | ProtocolError) -> None:
    """Count one command's answer: accepted (or replayed), or refused with its code."""
    # positional labels (type, code) / (type, replayed): a third cheaper than keywords
    if isinstance(result, ProtocolError):
        COMMANDS_REFUSED.labels(type_, result.code.value).inc()
    else:
        COMMANDS_ACCEPTED.labels(type_, "true" if result.replayed else "false").inc()


def count_read_ahead(*, served: bool) -> None:
    """Count what became of a page read ahead when its request came (``apps/api/next_pages.py``)."""
    (_PAGES_SERVED_AHEAD if served else _PAGES_READ_AFRESH).inc()


def count_each(types: Sequence[str], results: Sequence[_Answer | ProtocolError]) -> None:
    """Count a batch's answers, item by item (``types[i]`` is the type of ``results[i]``)."""
    for type_, result in zip(types, results, strict=True):
        count(type_, result)


def timed(entry: str) -> Timer:
    """A context manager timing one pass through the write path (``SINGLE`` or ``BATCH``),
    refusals and errors included."""
    return (_SINGLE_SECONDS if entry == SINGLE else _BATCH_SECONDS).time()


#: an event document is canonical JSON (RFC 8785): keys sorted, no whitespace. The top-level
#: ``recorded_at`` is followed only by ``sequence`` (a number) and ``type`` (a command table
#: name), so the *last* occurrence is the event's own, never a key inside its payload.
_RECORDED_AT = '"recorded_at":"'


def observe_delivery(documents: Sequence[str], *, sent_at: float) -> None:
    """Observe each event's delivery latency from its stored document, without parsing it
    (a consumer sends the tail's documents as they are; a full ``json.loads`` per socket and
    event would cost more than the send). ``sent_at`` is ``time.time()`` after the sends.

    ``recorded_at`` is the database's clock and ``sent_at`` this host's: their skew adds to
    (or, clamped at 0, hides) the latency.
    """
    for document in documents:
        start = document.rfind(_RECORDED_AT)
        if start < 0:
            continue
        start += len(_RECORDED_AT)
        try:
            recorded = datetime.fromisoformat(document[start : document.index('"', start)])
        except ValueError:
            continue
        STREAM_DELIVERY_SECONDS.observe(max(sent_at - recorded.timestamp(), 0.0))


@dataclass(frozen=True, slots=True)
class CursorLags:
    """The ACK cursors furthest behind, summarised with a fixed number of series."""

    cursors: int  # stored cursors, all groups
    max_lag: int  # the largest head − cursor, in events
    over_100: int  # cursors more than 100 events behind their group's head
    over_1000: int  # ... more than 1000


@dataclass(frozen=True, slots=True)
class ScrapeQueries:
    """What the scrape-time gauges read; the layers above the ledger (work, stream) answer.

    Each returns ``None`` when there is nothing to report (no sweep recorded yet).
    """

    sweep_lag_s: Callable[[], float]
    last_sweep_age_s: Callable[[], float | None]
    cursor_lags: Callable[[], CursorLags]


class ScrapeTimeCollector(Collector):
    """Gauges computed from the database at each scrape: the same for every process that
    answers, so in single-process mode they must not be summed across processes.

    A query that fails leaves its gauge out of that scrape (the scrape itself still answers:
    an absent series is what Prometheus alerts on with ``absent()``); ``/readyz`` says why.
    """

    def __init__(self, queries: ScrapeQueries, *, on_error: Callable[[str], None]) -> None:
        self.queries = queries
        self.on_error = on_error

    def collect(self) -> Iterator[Metric]:
        yield from self._guarded("sweep lag", self._sweep)
        yield from self._guarded("ACK cursors", self._cursors)

    def _guarded(self, name: str, read: Callable[[], list[Metric]]) -> list[Metric]:
        try:
            return read()
        except Exception:  # a scrape never fails because one query did
            self.on_error(name)
            return []

    def _sweep(self) -> list[Metric]:
        families = [
            GaugeMetricFamily(
                "mwp_sweep_lag_seconds",
                "Age of the oldest WorkItem due by the database clock that no sweep has "
                "handled yet (0 when nothing is due).",
                value=self.queries.sweep_lag_s(),
            )
        ]
        age = self.queries.last_sweep_age_s()
        if age is not None:
            families.append(
                GaugeMetricFamily(
                    "mwp_sweep_last_run_age_seconds",
                    "Seconds since a sweep last finished (beat and a worker are alive).",
                    value=age,
                )
            )
        return families

    def _cursors(self) -> list[Metric]:
        lags = self.queries.cursor_lags()
        behind = GaugeMetricFamily(
            "mwp_ack_cursors_behind",
            "Stored ACK cursors more than `over` events behind their group's head.",
            labels=["over"],
        )
        behind.add_metric(["100"], lags.over_100)
        behind.add_metric(["1000"], lags.over_1000)
        return [
            GaugeMetricFamily(
                "mwp_ack_cursor_max_lag_events",
                "The largest lag of any stored ACK cursor behind its group's head, in events.",
                value=lags.max_lag,
            ),
            GaugeMetricFamily(
                "mwp_ack_cursors", "Stored ACK cursors (principal × group).", value=lags.cursors
            ),
            behind,
        ]
