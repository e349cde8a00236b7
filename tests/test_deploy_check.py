"""``manage.py check --deploy`` with production settings from the environment.

Each check runs in a subprocess because settings are read from the environment at import.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG_VARS = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "MWP_INSECURE_COOKIES",
    "MWP_SSL_REDIRECT",
    "MWP_HSTS_SECONDS",
    "MWP_INSECURE_SECRET_KEY",
)


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in CONFIG_VARS}
    base.update(DJANGO_SETTINGS_MODULE="missionweave.settings", MWP_VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def production_env() -> dict[str, str]:
    return {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "mwp.example.org",
        "MWP_SSL_REDIRECT": "1",
        "MWP_HSTS_SECONDS": "31536000",
        # where mail goes (issue 36): the embedded default's mail files are mail.E001
        "EMAIL_URL": "smtp://mailer:secret@mail.example.org:587/?tls=True",
    }


def test_production_settings_pass_the_deploy_check(tmp_path):
    """Production configured from the environment passes ``check --deploy`` without a warning
    (its cookies are Secure without being asked: DEBUG is off)."""
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_embedded_default_is_flagged_by_the_deploy_check(tmp_path):
    """The check is not vacuous: the embedded default, started with the public development
    key and plain-HTTP cookies as `make demo`'s server is, has its insecure key and cookies
    flagged."""
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **LOCAL_RUN)
    assert result.returncode != 0
    for warning in ("security.W009", "security.W012", "security.W016"):
        assert warning in result.stderr


#: what `make demo` and `make test` add to a run without DEBUG or SECRET_KEY, and what their
#: plain-HTTP servers add (the demo command, tests/live_server.py)
LOCAL_RUN = {"MWP_INSECURE_SECRET_KEY": "1", "MWP_INSECURE_COOKIES": "1"}


@pytest.mark.parametrize(
    "env",
    [
        pytest.param({k: v for k, v in production_env().items() if k != "SECRET_KEY"}, id="prod"),
        pytest.param({}, id="nothing-set"),
        pytest.param({"DEBUG": "0", "MWP_INSECURE_SECRET_KEY": "0"}, id="override-off"),
    ],
)
def test_without_debug_a_missing_secret_key_stops_start_up(tmp_path, env):
    """Issue 16 §5: with ``DEBUG`` off and no ``SECRET_KEY``, the settings refuse to load
    (no fallback to the public key) and say what to set, unless told otherwise."""
    result = manage(tmp_path, "check", **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr
    assert "MWP_INSECURE_SECRET_KEY=1" in result.stderr


@pytest.mark.parametrize("env", [{"DEBUG": "1"}, LOCAL_RUN], ids=["debug", "explicit-override"])
def test_debug_or_the_explicit_override_starts_with_the_development_key(tmp_path, env):
    """The two ways to run without a key: a development server (``DEBUG``) or a local run
    that says so; both get the public key, which ``check --deploy`` flags (above)."""
    result = manage(
        tmp_path,
        "shell",
        "-c",
        "from django.conf import settings; print(settings.SECRET_KEY)",
        **env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("django-insecure-")


@pytest.mark.parametrize(
    ("env", "secure"),
    [
        pytest.param({"DEBUG": "0", "MWP_INSECURE_SECRET_KEY": "1"}, True, id="debug-off"),
        pytest.param(LOCAL_RUN, False, id="plain-http-opt-out"),
        pytest.param({"DEBUG": "1"}, False, id="debug"),
    ],
)
def test_cookies_are_secure_without_debug_unless_a_plain_http_run_says_otherwise(
    tmp_path, env, secure
):
    """Without DEBUG the session and CSRF cookies are marked Secure unless
    ``MWP_INSECURE_COOKIES=1`` says the run is plain HTTP (docs/deploy.md, "Headers");
    tests/dashboard/test_secure_cookies.py sees the flags a real server sends."""
    result = manage(
        tmp_path,
        "shell",
        "-c",
        "from django.conf import settings; "
        "print(settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)",
        **env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == f"{secure} {secure}"
