"""``/healthz``, ``/readyz`` and ``/metrics``: the server observable (issue 15 §7).

They sit at the site root, not under ``/api/v1``: they answer load balancers, orchestrators
and Prometheus, not agents, so they are not part of the wire contract and are plain Django
views, which the OpenAPI document does not list. None of them writes anything.

- ``/healthz`` is liveness: 200 while the process answers, with no database or Redis access,
  so a dependency that is down never gets a healthy server restarted.
- ``/readyz`` is readiness: the database answers, Redis answers (when configured), and a sweep
  finished recently, i.e. beat and a worker are alive. Each check is judged on its own and a
  check that raises is a failing check: the answer is 200 or 503, never 500.
- ``/metrics`` is Prometheus's text format: the counters of ``apps.ledger.metrics`` plus the
  gauges read from the database at scrape time (``ScrapeTimeCollector``).
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Callable, Iterator

import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, F, Max, Min, Q
from django.db.models.functions import Now
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from apps.ledger import metrics
from apps.stream.models import Cursor
from apps.work.models import DUE_WORK_SWEEP, SweepRun
from apps.work.sweeps import due_now
from missionweave.protocol.errors import ErrorCode, ProtocolError

from ..errors import error_response

logger = logging.getLogger(__name__)
OK, FAILING, NOT_USED = "ok", "failing", "not used"
#: a sweep is fresh when it finished within this many beat intervals (MWP_SWEEP_INTERVAL_S):
#: one late or lost run is normal (a worker busy with a long sweep), three in a row are not
FRESH_SWEEPS = 3
#: how long ``/readyz`` waits for Redis to connect and to answer PING
REDIS_TIMEOUT_S = 1.0

Probe = Callable[[], tuple[str, str]]


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while this process serves requests; reads nothing."""
    return JsonResponse({"status": "ok"})


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when every check passes, else 503 naming each failing check (``failing``)."""
    checks = {
        "database": _run("database", _database),
        "redis": _run("redis", _redis),
        "beat": _run("beat", _beat),
    }
    failing = [name for name, check in checks.items() if check["status"] == FAILING]
    body = {"status": "not ready" if failing else "ready", "checks": checks, "failing": failing}
    return JsonResponse(body, status=503 if failing else 200)


def _run(name: str, probe: Probe) -> dict[str, str]:
    try:
        status, detail = probe()
    except Exception as error:  # a check that raises is a failing check, never a 500
        # Only the exception's class in the answer: its message may name hosts or users.
        logger.warning("readiness check %s raised", name, exc_info=True)
        status, detail = FAILING, f"raised {type(error).__name__} (see the server log)"
    return {"status": status, "detail": detail}


def _database() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return OK, f"{connection.vendor} answered SELECT 1"


def _redis() -> tuple[str, str]:
    if not settings.REDIS_URL:
        return NOT_USED, "REDIS_URL is not set (the embedded default uses no Redis)"
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=REDIS_TIMEOUT_S, socket_timeout=REDIS_TIMEOUT_S
    )
    try:
        client.ping()
    finally:
        client.close()
    return OK, "answered PING"


def _beat() -> tuple[str, str]:
    """Fresh when the due-work sweep finished within ``FRESH_SWEEPS`` beat intervals. A
    server started without beat (``manage.py runserver``, the tests) is not ready here: no
    sweep means expired leases and missed deadlines are never reassigned (R11.5-01)."""
    age = SweepRun.age(DUE_WORK_SWEEP)
    limit_s = FRESH_SWEEPS * settings.MWP_SWEEP_INTERVAL_S
    if age is None:
        return FAILING, "no sweep has finished yet: are a Celery beat and a worker running?"
    age_s = age.total_seconds()
    if age_s > limit_s:
        return FAILING, f"the last sweep finished {age_s:.0f} s ago (fresh: within {limit_s:g} s)"
    return OK, f"the last sweep finished {age_s:.1f} s ago"


# --- /metrics ----------------------------------------------------------------------------


@require_safe
def prometheus_metrics(request: HttpRequest) -> HttpResponse:
    """The metrics in the format the scraper asks for (Prometheus text, or OpenMetrics).

    Open unless ``MWP_METRICS_TOKEN`` is set; then ``Authorization: Bearer <token>`` is
    required, and anything else is 401 ``UNAUTHENTICATED`` in the wire.md §8 shape.
    """
    token = settings.MWP_METRICS_TOKEN
    if token and not _bearer_matches(request, token):
        response = error_response(
            ProtocolError(ErrorCode.UNAUTHENTICATED, "/metrics requires the metrics bearer token")
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(_SCRAPE), content_type=content_type)


def _bearer_matches(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # constant time: the comparison must not tell how much of a guess was right
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def _sweep_lag_s() -> float:
    """One query on the partial index ``work_item_due``, with the sweep's own predicate
    (``apps.work.sweeps.due_work_items``: due by the database clock)."""
    lag = due_now().aggregate(lag=Now() - Min("due_at"))["lag"]
    return max(lag.total_seconds(), 0.0) if lag is not None else 0.0


def _last_sweep_age_s() -> float | None:
    age = SweepRun.age(DUE_WORK_SWEEP)
    return age.total_seconds() if age is not None else None


def _cursor_lags() -> metrics.CursorLags:
    """One pass over the stored cursors (one per principal and group it ACKs), each against
    its group's committed head."""
    totals = Cursor.objects.annotate(lag=F("group__log__head_sequence") - F("sequence")).aggregate(
        cursors=Count("pk"),
        max_lag=Max("lag"),
        over_100=Count("pk", filter=Q(lag__gt=100)),
        over_1000=Count("pk", filter=Q(lag__gt=1000)),
    )
    return metrics.CursorLags(
        cursors=totals["cursors"],
        max_lag=max(totals["max_lag"] or 0, 0),
        over_100=totals["over_100"],
        over_1000=totals["over_1000"],
    )


def _scrape_failed(name: str) -> None:
    logger.warning("the %s gauges could not be read for /metrics", name, exc_info=True)


class _Scrape:
    """What one scrape reports: this process's metrics, or with ``PROMETHEUS_MULTIPROC_DIR``
    those of every process writing to that folder (checked per scrape, as prometheus-client
    does), then the database gauges, which are the same whichever process answers."""

    database = metrics.ScrapeTimeCollector(
        metrics.ScrapeQueries(
            sweep_lag_s=_sweep_lag_s,
            last_sweep_age_s=_last_sweep_age_s,
            cursor_lags=_cursor_lags,
        ),
        on_error=_scrape_failed,
    )

    def collect(self) -> Iterator[Metric]:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            yield from MultiProcessCollector(None).collect()
        else:
            yield from REGISTRY.collect()
        yield from self.database.collect()


_SCRAPE = _Scrape()
