"""Email configured from the environment (issue 36 §2): ``EMAIL_URL`` through dj-email-url
into Django 6.1's ``MAILERS``; without it, files under ``var/mail``."""

from __future__ import annotations

from pathlib import Path

from missionweave import mail_settings


def test_without_email_url_mail_is_written_to_files_under_var() -> None:
    found = mail_settings.mailer({}, Path("/srv/var"))
    assert found == {
        "BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "OPTIONS": {"file_path": "/srv/var/mail"},
    }
    assert mail_settings.from_address({}) == mail_settings.DEFAULT_FROM


def test_an_smtp_url_with_tls_names_host_port_user_and_password() -> None:
    url = "smtp://mailer:s3cret@mail.example.com:587/?tls=True"
    found = mail_settings.mailer({"EMAIL_URL": url}, Path("/srv/var"))
    assert found["BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert found["OPTIONS"] == {
        "host": "mail.example.com",
        "port": 587,
        "username": "mailer",
        "password": "s3cret",
        "use_tls": True,
        "use_ssl": False,
        "timeout": mail_settings.DEFAULT_SMTP_TIMEOUT_S,
    }
    assert (
        mail_settings.from_address({"DEFAULT_FROM_EMAIL": "ops@example.com"}) == "ops@example.com"
    )
