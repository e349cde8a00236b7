"""What a hook's URL may be, and what of it a page may show (issue 36 §2).

A chat hook's URL is an Apprise URL (``slack://…``, ``workflows://…`` (Teams), ``matrix://…``,
``json://…``): it is accepted only when Apprise recognises it. A webhook's URL is plain
``http://`` or ``https://`` with a host. Both carry secrets (chat tokens sit in the URL), so a
page never shows one back after saving: only :func:`summary`, the service and its host when
the host is a real name (a token in the host's place is replaced by ``…``).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import apprise
from django.conf import settings

from .hook_models import HookKind

WEBHOOK_SCHEMES = ("http", "https")


class BadTarget(ValueError):
    """The URL cannot be used for this kind of hook; the message says why in words."""


def _private(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return not ip.is_global or ip.is_multicast


def refuse_private(url: str) -> None:
    """A hook must not reach the server's own network (loopback, private, link-local and
    other non-public addresses): a group admin would otherwise use the server to probe
    services nobody outside can reach (server-side request forgery). Every address the host
    resolves to is checked, when the hook is saved and again before each send (a name may
    resolve elsewhere later). ``MWP_HOOK_ALLOW_PRIVATE=1`` lifts it, for a receiver on the
    same network by design (and the tests' local receivers)."""
    if settings.MWP_HOOK_ALLOW_PRIVATE:
        return
    _scheme, host, port = _split(url)
    if not host:
        return  # a service URL (slack://…) whose endpoint Apprise fixes
    try:
        found = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        raise BadTarget(f"The host {host} cannot be found.") from None
    if any(_private(str(entry[4][0])) for entry in found):
        raise BadTarget(
            f"{host} is an address of a private network (or this server itself): hooks go "
            "to public addresses only. An operator can allow private ones with "
            "MWP_HOOK_ALLOW_PRIVATE=1."
        )


def _host_shown(host: str) -> str:
    """The host when it names a machine (a dotted name, an address, ``localhost``), else
    ``…`` (Slack's and Teams' URLs put a token where a host would be)."""
    if not host:
        return "…"
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host if ("." in host or host == "localhost") else "…"
    return host


def _split(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or ""), port


def check(kind: str, url: str) -> str:
    """``url`` stripped when it fits ``kind``; :class:`BadTarget` when it does not."""
    url = url.strip()
    if not url:
        raise BadTarget("Enter the URL the messages go to.")
    if kind == HookKind.WEBHOOK:
        scheme, host, _ = _split(url)
        if scheme not in WEBHOOK_SCHEMES or not host:
            raise BadTarget(
                "A webhook's URL starts with https:// (or http://) and names a host, "
                "e.g. https://hooks.example.org/missionweave."
            )
        refuse_private(url)
        return url
    if kind == HookKind.CHAT:
        if apprise.Apprise.instantiate(url) is None:
            raise BadTarget(
                "Apprise does not recognise this URL. Chat URLs look like slack://…, "
                "workflows://… (Teams), matrix://… or json://host/path: see docs/deploy.md, "
                "“Chat and webhooks”."
            )
        if _split(url)[0] in ("json", "jsons", "xml", "xmls", "form", "forms"):
            refuse_private(url)  # Apprise's generic posts go to the host the URL names
        return url
    raise BadTarget("Choose chat or webhook.")


def service_name(kind: str, url: str) -> str:
    """The service a URL goes to, in words: "Slack", "Microsoft Teams", "Webhook"."""
    if kind == HookKind.WEBHOOK:
        return "Webhook"
    plugin = apprise.Apprise.instantiate(url)
    return str(getattr(plugin, "service_name", "") or "Chat") if plugin is not None else "Chat"


def summary(kind: str, url: str) -> str:
    """What a page shows of a hook's URL: the service, scheme and host, nothing secret."""
    scheme, host, port = _split(url)
    shown = _host_shown(host)
    if port is not None and shown != "…":
        shown = f"{shown}:{port}"
    where = f"{scheme}://{shown}/…"
    name = service_name(kind, url)
    return f"{name} ({where})"[:200]
