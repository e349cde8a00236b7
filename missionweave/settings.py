"""Settings, all from the environment.

With nothing set the project runs on an embedded default: SQLite under ``var/``, the
in-memory channel layer and a Celery broker that needs no server. Production and CI set
``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from missionweave import mail_settings

BASE_DIR = Path(__file__).resolve().parent.parent
# Nothing here touches the disk: the folders below are made when the project starts
# (``missionweave/local_dirs.py``), so importing the settings has no side effect.
VAR_DIR = Path(os.environ.get("MWP_VAR_DIR", BASE_DIR / "var"))


def _flag(name: str, default: bool) -> bool:
    return os.environ.get(name, "1" if default else "0").strip().lower() in {
        "1",
        "true",
        "yes",
        "on",
    }


def _list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = _flag("DEBUG", False)
#: the key of a development run: public, so anyone could forge its sessions and CSRF tokens
INSECURE_SECRET_KEY = "django-insecure-missionweave-embedded-default-not-for-production"  # noqa: S105
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    # Issue 16 §5: a server without DEBUG is a deployment unless someone says otherwise, and
    # a deployment must not sign sessions with a key printed in this file. `make demo` and
    # `make test` say otherwise (MWP_INSECURE_SECRET_KEY=1); `check --deploy` still flags it.
    if not DEBUG and not _flag("MWP_INSECURE_SECRET_KEY", False):
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off: set SECRET_KEY to a long random value "
            "(python -c 'import secrets; print(secrets.token_urlsafe(64))'), or, for a local "
            "demo or test run only, MWP_INSECURE_SECRET_KEY=1 to use a public development key"
        )
    SECRET_KEY = INSECURE_SECRET_KEY
#: earlier SECRET_KEYs, comma-separated, still accepted after a rotation: sessions and
#: password-reset links signed with them, and hook secrets sealed with them
#: (apps.notifications.sealed; docs/deploy.md)
SECRET_KEY_FALLBACKS = _list("SECRET_KEY_FALLBACKS", "")
ALLOWED_HOSTS = _list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = _list("CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:8000,http://localhost:8000")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's assets for /api/v1/docs, served by the app itself (issue 16 §6)
    "drf_spectacular_sidecar",
    "channels",
    "missionweave",
    "apps.registry",
    "apps.artifacts",
    "apps.ledger",
    "apps.work",
    "apps.api",
    "apps.stream",
    "apps.dashboard",
    "apps.notifications",
    "apps.demo",
    # login throttling (issue 16 §5): failed logins counted per user and per address
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # SECURE_CSP on every response that does not set its own (the raw artifact routes do)
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # Serves the dashboard's CSS and JS from every ASGI server, without a separate web server
    # (WhiteNoise, with an asynchronous body under ASGI: missionweave/static_files.py).
    "missionweave.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # one book of display names per request: a page names each person once, not per row
    "apps.dashboard.names.NameBookMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.api.middleware.ApiErrorMiddleware",
    # the dashboard's bare 400 and 405 answers as styled pages (never under /api/)
    "apps.dashboard.middleware.StyledErrorsMiddleware",
    # last, as django-axes asks: it turns a locked-out login into its styled 429 page
    "axes.middleware.AxesMiddleware",
]

# Issue 16 §5: after MWP_LOGIN_FAILURE_LIMIT failed logins for one username, or from one
# address, that username (or address) is refused for MWP_LOGIN_COOLOFF_S, however right the
# password — the dashboard and the admin alike. A success resets the count. The address is
# the ASGI client's: behind a TLS proxy, uvicorn's --proxy-headers makes it the real client's
# (docs/deploy.md), or every visitor would share the proxy's.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("MWP_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(seconds=int(os.environ.get("MWP_LOGIN_COOLOFF_S", "900")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "dashboard/locked_out.html"
AXES_VERBOSE = False

ROOT_URLCONF = "missionweave.urls"
# wire.md §1: a trailing slash is 404, never a redirect.
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # {{ csp_nonce }}: the nonce SECURE_CSP allows an inline script to carry
                "django.template.context_processors.csp",
            ],
        },
    },
]

WSGI_APPLICATION = "missionweave.wsgi.application"
ASGI_APPLICATION = "missionweave.asgi.application"


def _database() -> dict:
    url = os.environ.get("DATABASE_URL")
    if not url:
        # Embedded default: SQLite in WAL mode with IMMEDIATE transactions, so the web
        # server, a Celery worker and beat can share the file (TOOLCHAIN.md gotcha 6).
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "missionweave.sqlite3",
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            "TEST": {"NAME": VAR_DIR / "test-missionweave.sqlite3"},
        }
    config = dj_database_url.parse(url, conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")))
    if config["ENGINE"].endswith("postgresql") and _flag("MWP_DB_POOL", True):
        # Under ASGI every request runs in a thread of its own, so a per-thread connection is
        # a new PostgreSQL connection per request; a pool makes it a borrow (docs/benchmarks.md).
        # When PostgreSQL is away (issue 16 §8), a request waits at most `timeout` for a
        # connection and is answered 503 with Retry-After. The pool retries a failed connect
        # with a doubling delay; giving up after `reconnect_timeout` lets the next request
        # start afresh, so service returns within about that long of PostgreSQL rather than
        # one doubled delay late (docs/reliability.md).
        config["CONN_MAX_AGE"] = 0
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": int(os.environ.get("MWP_DB_POOL_MAX", "32")),
            "timeout": float(os.environ.get("MWP_DB_POOL_TIMEOUT_S", "5")),
            "reconnect_timeout": float(os.environ.get("MWP_DB_RECONNECT_S", "2")),
        }
    if os.environ.get("MWP_TEST_DB_NAME"):
        # A server process started by the tests points at the test database (TOOLCHAIN.md 5).
        config["NAME"] = os.environ["MWP_TEST_DB_NAME"]
    return config


DATABASES = {"default": _database()}
#: the role the servers and workers connect as, granted its privileges after each migrate
#: (apps.ledger.db_roles; docs/deploy.md "Database roles"); empty: none is granted
MWP_APP_DB_ROLE = os.environ.get("MWP_APP_DB_ROLE", "")
#: PostgreSQL: a command's writes as one data-modifying WITH, bound and prepared on the server
#: (apps/ledger/folded.py, issue 38 §1); 0 sends them as several statements quoted into one query
MWP_FOLDED_WRITES = _flag("MWP_FOLDED_WRITES", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
# Which Redis layer carries the stream's hints: "pubsub" (the default) or "core", the
# list-based RedisChannelLayer whose per-channel capacity (MWP_CHANNEL_CAPACITY) and expiry
# drop messages when exceeded. Either way broadcasts are only hints (apps/stream/consumers.py).
MWP_CHANNEL_LAYER = os.environ.get("MWP_CHANNEL_LAYER", "pubsub")
if REDIS_URL and MWP_CHANNEL_LAYER == "core":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [REDIS_URL],
                "prefix": os.environ.get("MWP_CHANNEL_PREFIX", "mwp"),
                "capacity": int(os.environ.get("MWP_CHANNEL_CAPACITY", "100")),
                "expiry": int(os.environ.get("MWP_CHANNEL_EXPIRY_S", "60")),
            },
        }
    }
elif REDIS_URL:
    # The pub/sub layer: the default RedisChannelLayer silently drops messages under load
    # (TOOLCHAIN.md). Broadcasts are hints anyway: the stream reads the log by sequence.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [REDIS_URL],
                "prefix": os.environ.get("MWP_CHANNEL_PREFIX", "mwp"),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"  # collectstatic's target, for deployments that want it
# Find files in static/ directly: no collectstatic step is needed to run the product.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:inbox"
LOGOUT_REDIRECT_URL = "dashboard:login"

# Django's own bounds (its defaults): the most of a form body it parses in memory, and of an
# upload it keeps in memory before spooling to disk. Every body is bounded before Django reads
# it (apps/api/body_guard.py: MWP_MAX_FORM_BYTES outside /api/, each API view's own limit;
# the artifact and command edges read their bodies themselves); the JSON parser reads the
# API's bodies from the stream, which these do not bound.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_PARSER_CLASSES": ["apps.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "apps.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "MissionWeave Group Authority API",
    "DESCRIPTION": "The MWP wire contract (wire.md) as built. Errors follow wire.md §8.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # the artifact endpoints are an ASGI handler, not views: a hook documents them
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.api.schema_hooks.add_artifact_paths",
        "apps.api.schema_hooks.state_parameter_limits",
        "apps.api.schema_hooks.closed_request_bodies",
    ],
}

# --- MissionWeave ------------------------------------------------------------------------
MWP_AUTHORITY_ID = os.environ.get("MWP_AUTHORITY_ID", "mwp-authority")
# base64url seed of the authority's Ed25519 key; unset: a key file under var/ (created once).
MWP_AUTHORITY_KEY = os.environ.get("MWP_AUTHORITY_KEY", "")
MWP_AUTHORITY_KEY_FILE = VAR_DIR / "authority.key"
MWP_CLOCK_SKEW_S = 300
MWP_SESSION_TTL_S = int(os.environ.get("MWP_SESSION_TTL_S", str(24 * 3600)))
MWP_MAX_COMMAND_BYTES = 1024 * 1024
#: issue 33: the largest body of any request outside /api/ (dashboard forms, the admin, a
#: missing page), refused from its headers before Django reads it (apps/api/body_guard.py)
MWP_MAX_FORM_BYTES = 1024 * 1024
#: wire.md §1: at most this many header fields, and bytes of them, per request (issue 16 §3)
MWP_MAX_HEADER_FIELDS = 100
MWP_MAX_HEADER_BYTES = 32 * 1024
MWP_MAX_BATCH_BYTES = 8 * 1024 * 1024
MWP_MAX_BATCH_COMMANDS = 500
# How often a stream consumer reads the head when no broadcast arrives (broadcasts are hints).
MWP_STREAM_POLL_S = float(os.environ.get("MWP_STREAM_POLL_S", "0.5"))
# Browser websockets must come from these origins (wire.md §7).
MWP_STREAM_ALLOWED_ORIGINS = _list("MWP_STREAM_ALLOWED_ORIGINS", ",".join(CSRF_TRUSTED_ORIGINS))

# --- artifacts (R13.1) ---------------------------------------------------------------
# Content-addressed bytes live outside every log (R13.1-02): on the local filesystem (the
# default, under MWP_ARTIFACT_DIR) or in an S3-compatible bucket. Either way uploads are
# spooled under MWP_ARTIFACT_DIR/tmp while they are hashed. S3 credentials come from the
# usual AWS_* environment variables (boto3's chain). apps/artifacts/ reads these at use time.
MWP_ARTIFACT_STORAGE = os.environ.get("MWP_ARTIFACT_STORAGE", "filesystem")  # or "s3"
MWP_ARTIFACT_DIR = Path(os.environ.get("MWP_ARTIFACT_DIR") or VAR_DIR / "artifacts")
MWP_ARTIFACT_S3_BUCKET = os.environ.get("MWP_ARTIFACT_S3_BUCKET", "")
MWP_ARTIFACT_S3_ENDPOINT_URL = os.environ.get("MWP_ARTIFACT_S3_ENDPOINT_URL", "")
MWP_ARTIFACT_S3_REGION = os.environ.get("MWP_ARTIFACT_S3_REGION", "")
# wire.md §1: an artifact is at most 100 MiB unless configured otherwise (TOO_LARGE).
MWP_ARTIFACT_MAX_BYTES = int(os.environ.get("MWP_ARTIFACT_MAX_BYTES") or 100 * 1024 * 1024)
# A read is verified before a byte is sent (R13.1-05): objects up to this size are read into
# memory once; larger ones are hashed in a first pass and streamed in a second.
MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES = int(
    os.environ.get("MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES") or 8 * 1024 * 1024
)
# Garbage collection (apps/artifacts/collection.py): a blob no group's log references and
# nobody uploaded for MWP_ARTIFACT_GC_AGE_S seconds. Beat runs it every
# MWP_ARTIFACT_GC_INTERVAL_S seconds as a dry run, deleting only when MWP_ARTIFACT_GC_APPLY.
MWP_ARTIFACT_GC_AGE_S = float(os.environ.get("MWP_ARTIFACT_GC_AGE_S") or 7 * 24 * 3600)
MWP_ARTIFACT_GC_INTERVAL_S = float(os.environ.get("MWP_ARTIFACT_GC_INTERVAL_S") or 3600)
MWP_ARTIFACT_GC_APPLY = _flag("MWP_ARTIFACT_GC_APPLY", False)
# --- end artifacts -----------------------------------------------------------------------

# --- Notifications and email (issue 36; docs/deploy.md "Notifications and email") ----------
# The mail server from EMAIL_URL; without it, each email is a file under var/mail
# (missionweave/mail_settings.py).
MAILERS = {"default": mail_settings.mailer(os.environ, VAR_DIR)}
DEFAULT_FROM_EMAIL = mail_settings.from_address(os.environ)
#: the address the links in emails start with
MWP_PUBLIC_URL = os.environ.get("MWP_PUBLIC_URL", "http://127.0.0.1:8000")
#: a start-by deadline this close (seconds) reminds the people who can still save it
MWP_NOTIFY_DEADLINE_LEAD_S = float(os.environ.get("MWP_NOTIFY_DEADLINE_LEAD_S") or 600)
#: a block an agent coordinator has not answered after this long (seconds) tells the mission
#: owners (apps/notifications/blocks.py); with no agent coordinating, they are told at once
MWP_NOTIFY_BLOCK_GRACE_S = float(os.environ.get("MWP_NOTIFY_BLOCK_GRACE_S") or 120)
#: the hour (UTC) the daily digest is sent
MWP_NOTIFY_DIGEST_HOUR = int(os.environ.get("MWP_NOTIFY_DIGEST_HOUR") or 8)
#: how often the beat catches up on the log and looks for near deadlines
MWP_NOTIFY_INTERVAL_S = float(os.environ.get("MWP_NOTIFY_INTERVAL_S") or 15.0)
MWP_NOTIFY_EMAIL_RETRIES = int(os.environ.get("MWP_NOTIFY_EMAIL_RETRIES") or 8)
MWP_NOTIFY_EMAIL_BACKOFF_S = int(os.environ.get("MWP_NOTIFY_EMAIL_BACKOFF_S") or 2)
# group hooks: chat and webhooks (apps/notifications/hook_delivery.py; docs/deploy.md)
MWP_HOOK_RETRIES = int(os.environ.get("MWP_HOOK_RETRIES") or 6)
MWP_HOOK_BACKOFF_S = float(os.environ.get("MWP_HOOK_BACKOFF_S") or 5)
MWP_HOOK_TIMEOUT_S = float(os.environ.get("MWP_HOOK_TIMEOUT_S") or 10)
MWP_HOOK_DISABLE_AFTER = int(os.environ.get("MWP_HOOK_DISABLE_AFTER") or 5)
# hooks reach public addresses only unless this is set (apps/notifications/hook_targets.py)
MWP_HOOK_ALLOW_PRIVATE = os.environ.get("MWP_HOOK_ALLOW_PRIVATE", "") == "1"
# --- end notifications ---------------------------------------------------------------

# --- Celery ------------------------------------------------------------------------------
# Time-driven sweeps (offer and lease expiry, deadlines) run in Celery workers, put on the
# queue by ONE beat on a fixed interval. A sweep is periodic and conditional: it applies what
# is due by the database clock when it runs, so nothing is ever scheduled with eta/countdown,
# a lost or duplicated sweep is repaired by the next one, and a second beat is harmless.
# ``missionweave/celery.py`` reads every ``CELERY_*`` name below (namespace "CELERY").
MWP_SWEEP_INTERVAL_S = float(os.environ.get("MWP_SWEEP_INTERVAL_S", "5.0"))
#: when set, ``/metrics`` requires ``Authorization: Bearer <token>`` (apps/api/views/health.py)
MWP_METRICS_TOKEN = os.environ.get("MWP_METRICS_TOKEN", "")
# Signed snapshots (wire.md §7, R16-10): beat looks every MWP_SNAPSHOT_INTERVAL_S seconds and
# snapshots only groups with MWP_SNAPSHOT_EVERY_EVENTS new events since their last one.
MWP_SNAPSHOT_INTERVAL_S = float(os.environ.get("MWP_SNAPSHOT_INTERVAL_S", "3600"))
MWP_SNAPSHOT_EVERY_EVENTS = int(os.environ.get("MWP_SNAPSHOT_EVERY_EVENTS", "1000"))
# Archiving by retention (apps/ledger/retention.py; R16-08, R16-10): every
# MWP_ARCHIVE_INTERVAL_S seconds beat moves the events recorded more than
# MWP_ARCHIVE_RETENTION_S seconds ago (database clock) from the online log into the archive,
# keeping at least the newest MWP_ARCHIVE_KEEP_EVENTS online. Nothing is deleted: archived
# events stay exportable and verifiable. A retention of 0 (or empty) turns it off.
MWP_ARCHIVE_RETENTION_S = float(
    os.environ.get("MWP_ARCHIVE_RETENTION_S", str(30 * 24 * 3600)) or "0"
)
MWP_ARCHIVE_KEEP_EVENTS = int(os.environ.get("MWP_ARCHIVE_KEEP_EVENTS") or "0")
MWP_ARCHIVE_INTERVAL_S = float(os.environ.get("MWP_ARCHIVE_INTERVAL_S") or "3600")


def _celery_broker() -> tuple[str, dict]:
    """The broker URL and its transport options.

    ``CELERY_BROKER_URL`` wins; otherwise Redis when ``REDIS_URL`` is set (a separate database
    through ``MWP_CELERY_REDIS_URL`` if wanted); otherwise the embedded default, kombu's
    ``filesystem://`` transport under ``var/celery`` (with messages written whole:
    ``missionweave.filesystem_broker``): no server, one host, ~0.1 s polling, and a message in
    flight is lost on ``kill -9`` (TOOLCHAIN.md gotcha 6).
    """
    url = (
        os.environ.get("CELERY_BROKER_URL")
        or os.environ.get("MWP_CELERY_REDIS_URL")
        or REDIS_URL
        or "filesystem://"
    )
    if not url.startswith("filesystem://"):
        return url, {}
    root = VAR_DIR / "celery"
    folders = {name: root / name for name in ("queue", "processed", "control")}
    # Producers (beat, the web server) and the worker share one folder: what one writes in,
    # the other reads out. Read messages are deleted (store_processed off), so the folder
    # does not grow with every sweep; ``processed`` is there for whoever turns it on.
    return url, {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "store_processed": False,
        "control_folder": str(folders["control"]),
        "polling_interval": 0.1,
    }


CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = _celery_broker()
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT = "missionweave.filesystem_broker:Transport"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Nothing reads a sweep's result: results are off unless a backend is configured (the tests
# configure Redis to wait for ``apps.work.tasks.ping``, which opts in with ignore_result=False).
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_EXPIRES = 3600
# Acknowledge after the task ran, one message at a time: a worker that dies mid-sweep leaves
# the message to the broker (Redis redelivers it after the visibility timeout), and no
# worker hoards sweeps that another idle worker could run.
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
# Its own queue, so parallel test runs (and deployments sharing a Redis) never take each
# other's tasks.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("MWP_CELERY_QUEUE", "missionweave")
CELERY_BEAT_SCHEDULE_FILENAME = os.environ.get(
    "MWP_CELERY_BEAT_SCHEDULE", str(VAR_DIR / "celerybeat-schedule")
)
# A static schedule: django-celery-beat would downgrade Django (TOOLCHAIN.md gotcha 1).
CELERY_BEAT_SCHEDULE = {
    "sweep-due-work": {
        "task": "apps.work.tasks.sweep_due_work",
        "schedule": MWP_SWEEP_INTERVAL_S,
        # A sweep nobody ran in time is superseded by the next one: a worker that was down
        # does not wake up to a backlog of identical sweeps.
        "options": {"expires": max(60.0, 10 * MWP_SWEEP_INTERVAL_S)},
    },
    # Submissions whose review still owes the authority's evidence (apps/work/reviews.py,
    # R13.2-03): the hint after commit usually got there first; this finds what it missed.
    "review-submissions": {
        "task": "apps.work.tasks.review_submissions",
        "schedule": MWP_SWEEP_INTERVAL_S,
        "options": {"expires": max(60.0, 10 * MWP_SWEEP_INTERVAL_S)},
    },
    # Cross-group follow-ups a crash left in the outbox (apps/ledger/follow_ups.py).
    "resend-follow-ups": {
        "task": "apps.ledger.tasks.resend_follow_ups",
        "schedule": max(MWP_SWEEP_INTERVAL_S, 15.0),
        "options": {"expires": 60.0},
    },
    # Signed snapshots of busy groups (apps/ledger/snapshots.py); a late run is superseded.
    "snapshot-groups": {
        "task": "apps.ledger.tasks.snapshot_groups",
        "schedule": MWP_SNAPSHOT_INTERVAL_S,
        "options": {"expires": max(60.0, MWP_SNAPSHOT_INTERVAL_S)},
    },
    # Events older than the retention into the archive (apps/ledger/retention.py); a late
    # run is superseded by the next, a doubled one finds nothing left to move.
    "archive-groups": {
        "task": "apps.ledger.tasks.archive_groups",
        "schedule": MWP_ARCHIVE_INTERVAL_S,
        "options": {"expires": max(60.0, MWP_ARCHIVE_INTERVAL_S)},
    },
    # Unreferenced artifacts (apps/artifacts/collection.py): a dry run that only reports
    # unless MWP_ARTIFACT_GC_APPLY; a late run is superseded, a doubled one finds less to do.
    "collect-artifacts": {
        "task": "apps.artifacts.tasks.collect_artifacts",
        "schedule": MWP_ARTIFACT_GC_INTERVAL_S,
        "options": {"expires": max(60.0, MWP_ARTIFACT_GC_INTERVAL_S)},
    },
}
# Notifications (issue 36; apps/notifications): catching up on the log, start-by reminders,
# blocks nobody answered, email resends, and the daily digest at MWP_NOTIFY_DIGEST_HOUR (UTC).
CELERY_BEAT_SCHEDULE |= {
    "notifications-catch-up": {
        "task": "apps.notifications.tasks.catch_up",
        "schedule": MWP_NOTIFY_INTERVAL_S,
        "options": {"expires": max(60.0, 10 * MWP_NOTIFY_INTERVAL_S)},
    },
    "notifications-deadlines": {
        "task": "apps.notifications.tasks.remind_deadlines",
        "schedule": MWP_NOTIFY_INTERVAL_S,
        "options": {"expires": max(60.0, 10 * MWP_NOTIFY_INTERVAL_S)},
    },
    "notifications-blocks": {
        "task": "apps.notifications.tasks.remind_blocked",
        "schedule": MWP_NOTIFY_INTERVAL_S,
        "options": {"expires": max(60.0, 10 * MWP_NOTIFY_INTERVAL_S)},
    },
    "notifications-resend": {
        "task": "apps.notifications.tasks.resend_pending",
        "schedule": max(MWP_NOTIFY_INTERVAL_S, 30.0),
        "options": {"expires": 120.0},
    },
    "notifications-hooks-resend": {
        "task": "apps.notifications.hook_tasks.resend_pending",
        "schedule": max(MWP_NOTIFY_INTERVAL_S, 30.0),
        "options": {"expires": 120.0},
    },
    "notifications-digest": {
        "task": "apps.notifications.tasks.send_digests",
        "schedule": crontab(minute=0, hour=MWP_NOTIFY_DIGEST_HOUR),
        "options": {"expires": 3600.0},
    },
}
# --- end Celery --------------------------------------------------------------------------

if not DEBUG:
    # A server without DEBUG is a deployment behind TLS unless someone says otherwise: its
    # session and CSRF cookies never travel over plain HTTP. A plain-HTTP local run says
    # otherwise (`manage.py demo` and the tests' servers set MWP_INSECURE_COOKIES=1).
    SESSION_COOKIE_SECURE = not _flag("MWP_INSECURE_COOKIES", False)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_SSL_REDIRECT = _flag("MWP_SSL_REDIRECT", False)
    # probes and scrapers speak plain HTTP inside the deployment (issue 15 §7)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    SECURE_HSTS_SECONDS = int(os.environ.get("MWP_HSTS_SECONDS", "0"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
    SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# The dashboard's pages load scripts, styles and images from this origin only, speak only to
# it (fetch, and the stream's websocket: CSP3 'self' covers ws:/wss: of the same host), are
# never framed and post forms only to it. No page has an inline script, event handler or
# style attribute; an inline script that must exist carries {{ csp_nonce }}. A view with
# other needs overrides this (apps.api.views.public.SchemaDocs); the raw artifact routes
# send their own, closed one (apps.artifacts.raw_headers). docs/deploy.md, "Headers".
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
