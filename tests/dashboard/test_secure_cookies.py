"""The session and CSRF cookies a real server sets at login (docs/deploy.md, "Headers"):
marked ``Secure`` when DEBUG is off, as deployed behind TLS; not marked when the run says it
is plain HTTP (``MWP_INSECURE_COOKIES=1``, which the demo's server and the tests' servers
set), or the browser would never send them back over ``http://``.
"""

from __future__ import annotations

import re
from http.cookies import SimpleCookie

import httpx
import pytest
from django.conf import settings

from tests.factories import human
from tests.live_server import session_server

from .conftest import PASSWORD, with_password

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

_CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _cookies(response: httpx.Response) -> SimpleCookie:
    jar = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        jar.load(header)
    return jar


@pytest.mark.parametrize(
    ("insecure", "secure"),
    [pytest.param("0", True, id="default"), pytest.param("1", False, id="plain-http-opt-out")],
)
def test_login_sets_secure_cookies_unless_the_run_is_plain_http(
    worker_id: str, insecure: str, secure: bool
) -> None:
    maria = with_password(human("maria"))
    env = {"DEBUG": "0", "MWP_INSECURE_COOKIES": insecure}
    with (
        session_server(worker_id, extra_env=env) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        form = http.get("/login/")
        csrf = _cookies(form)[settings.CSRF_COOKIE_NAME]
        assert bool(csrf["secure"]) is secure
        token = _CSRF_FIELD.search(form.text)
        assert token is not None
        # sent by hand: a client keeps a Secure cookie from an http:// origin to itself
        logged_in = http.post(
            "/login/",
            data={
                "username": maria.username,
                "password": PASSWORD,
                "csrfmiddlewaretoken": token.group(1),
            },
            headers={"Cookie": f"{settings.CSRF_COOKIE_NAME}={csrf.value}"},
        )
        assert logged_in.status_code == 302, logged_in.text[:500]
        cookies = _cookies(logged_in)
        assert bool(cookies[settings.SESSION_COOKIE_NAME]["secure"]) is secure
        assert cookies[settings.SESSION_COOKIE_NAME]["httponly"]
        assert bool(cookies[settings.CSRF_COOKIE_NAME]["secure"]) is secure
