"""What Django's middleware checks and adds, for the requests the edge answers below it.

``apps/api/edge.py`` answers its endpoints without Django's request handling, so it does
here what ``CommonMiddleware`` (the ``Host`` check), ``SecurityMiddleware`` (``is_secure``,
the security headers, HSTS) and ``XFrameOptionsMiddleware`` did, from the same settings.
"""

from __future__ import annotations

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from apps.artifacts.http import Request, Scope
from missionweave.protocol.errors import ErrorCode, ProtocolError


def is_secure(scope: Scope) -> bool:
    """Django's ``request.is_secure()``: the scheme, or the proxy's header when trusted."""
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        name, expected = proxy
        wanted = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
        for header, value in scope.get("headers", []):
            if header.lower() == wanted:
                return value.decode("latin-1").split(",")[0].strip() == expected
        return False
    return scope.get("scheme") == "https"


def bearer_token(authorization: str | None) -> str:
    """wire.md §3 step 1: the token of ``Authorization: Bearer <token>``, judged from the
    header alone (whether it is valid is a database question)."""
    if not authorization:
        raise ProtocolError(ErrorCode.UNAUTHENTICATED, "a bearer token is required")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ProtocolError(ErrorCode.UNAUTHENTICATED, "expected Authorization: Bearer <token>")
    return token.strip()


def check_host(request: Request) -> None:
    """Django's ``request.get_host()`` check, answered as a §8 document."""
    host = request.header("host")
    if settings.USE_X_FORWARDED_HOST and request.header("x-forwarded-host"):
        host = request.header("x-forwarded-host")
    if host is None:
        server = request.scope.get("server") or ("", None)
        host = f"{server[0]}:{server[1]}" if server[1] else str(server[0])
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    if not domain or not validate_host(domain, allowed):
        raise ProtocolError(
            ErrorCode.MALFORMED,
            "the Host header is not one this server answers for",
            requirement="wire§8",
        )


def security_headers(*, secure: bool) -> list[tuple[str, str]]:
    """The headers ``SecurityMiddleware`` and ``XFrameOptionsMiddleware`` add to every
    response; ``Strict-Transport-Security`` only to a secure request, as Django does."""
    headers = []
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append(("x-content-type-options", "nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        value = policy if isinstance(policy, str) else ",".join(policy)
        headers.append(("referrer-policy", value))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(("cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    headers.append(("x-frame-options", settings.X_FRAME_OPTIONS.upper()))
    if secure and settings.SECURE_HSTS_SECONDS:
        headers.append(("strict-transport-security", _hsts()))
    return headers


def _hsts() -> str:
    value = f"max-age={settings.SECURE_HSTS_SECONDS}"
    if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
        value += "; includeSubDomains"
    if settings.SECURE_HSTS_PRELOAD:
        value += "; preload"
    return value
