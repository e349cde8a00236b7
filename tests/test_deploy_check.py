"""``manage.py check --deploy`` with production settings from the environment.

Each check runs in a subprocess because settings are read from the environment at import.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG_VARS = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "MWP_SECURE_COOKIES",
    "MWP_SSL_REDIRECT",
    "MWP_HSTS_SECONDS",
    "MWP_REQUIRE_SECRET_KEY",
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
        "MWP_SECURE_COOKIES": "1",
        "MWP_SSL_REDIRECT": "1",
        "MWP_HSTS_SECONDS": "31536000",
        "MWP_REQUIRE_SECRET_KEY": "1",
    }


def test_production_settings_pass_the_deploy_check(tmp_path):
    """Production configured from the environment passes ``check --deploy`` without a warning."""
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_embedded_default_is_flagged_by_the_deploy_check(tmp_path):
    """The check is not vacuous: the embedded default's insecure key and cookies are flagged."""
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    for warning in ("security.W009", "security.W012", "security.W016"):
        assert warning in result.stderr


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    """With ``MWP_REQUIRE_SECRET_KEY`` a missing ``SECRET_KEY`` stops start-up, not a fallback."""
    env = {k: v for k, v in production_env().items() if k != "SECRET_KEY"}
    result = manage(tmp_path, "check", **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
