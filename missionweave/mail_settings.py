"""Email settings from the environment (issue 36 §2; docs/deploy.md, "Notifications and
email"), as Django 6.1's ``MAILERS`` (the ``EMAIL_*`` settings are deprecated there).

``EMAIL_URL`` (parsed by dj-email-url) names the mail server, e.g.
``smtp://user:password@mail.example.com:587/?tls=True`` or ``smtps://…:465``. Without it the
embedded default writes each email as a file under ``<MWP_VAR_DIR>/mail`` (Django's
file-based backend): nothing is sent, and ``make demo`` points to the folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dj_email_url

#: seconds an SMTP connection may block a worker, when the URL sets no ``timeout``
DEFAULT_SMTP_TIMEOUT_S = 10
DEFAULT_FROM = "MissionWeave <missionweave@localhost>"
FILE_BACKEND = "django.core.mail.backends.filebased.EmailBackend"

#: dj-email-url's setting → the backend option it configures
_OPTIONS = {
    "EMAIL_HOST": "host",
    "EMAIL_PORT": "port",
    "EMAIL_HOST_USER": "username",
    "EMAIL_HOST_PASSWORD": "password",
    "EMAIL_USE_TLS": "use_tls",
    "EMAIL_USE_SSL": "use_ssl",
    "EMAIL_TIMEOUT": "timeout",
    "EMAIL_FILE_PATH": "file_path",
}


def mailer(environ: Mapping[str, str], var_dir: Path) -> dict[str, Any]:
    """The ``default`` mailer of ``MAILERS`` for this environment."""
    url = environ.get("EMAIL_URL", "").strip()
    if not url:
        return {"BACKEND": FILE_BACKEND, "OPTIONS": {"file_path": str(var_dir / "mail")}}
    parsed = dj_email_url.parse(url)
    options = {
        option: parsed[name]
        for name, option in _OPTIONS.items()
        if parsed.get(name) not in (None, "")
    }
    if parsed["EMAIL_BACKEND"].endswith("smtp.EmailBackend"):
        options.setdefault("timeout", DEFAULT_SMTP_TIMEOUT_S)
    return {"BACKEND": parsed["EMAIL_BACKEND"], "OPTIONS": options}


def from_address(environ: Mapping[str, str]) -> str:
    return environ.get("DEFAULT_FROM_EMAIL") or DEFAULT_FROM
