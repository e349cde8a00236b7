"""The notifications page (issue 36 §2): a person's own notifications, newest first, unread
ones marked, each opening the screen that acts on it; "Mark all as read"; paged.

``/notifications/<id>/open/`` marks the notification read and redirects to its stored link.
It answers a GET so that it is an ordinary link (opened in a new tab, copied, followed with
scripts off); what it changes is only the reader's own "read" mark, and another person's
notification is a 404. The redirect goes only to a path of this site: a stored link that is
not one (it never should be) lands on the notifications page instead.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.ledger.write_path import Caller

from . import bell, live, standing
from .models import Notification

PER_PAGE = 20


def own(request: HttpRequest) -> QuerySet[Notification]:
    """The signed-in person's in-app notifications, newest first."""
    return (
        Notification.objects.filter(user_id=request.user.pk, in_app=True)
        .select_related("group")
        .order_by("-created_at", "-pk")
    )


def site_path(link: str, request: HttpRequest) -> bool:
    """Whether ``link`` is a path of this site (``/…``, not ``//host`` nor a URL)."""
    return (
        link.startswith("/")
        and not link.startswith("//")
        and "\\" not in link
        and url_has_allowed_host_and_scheme(link, allowed_hosts={request.get_host()})
    )


@login_required
@never_cache
@require_http_methods(["GET", "HEAD"])
def notification_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(own(request), PER_PAGE).get_page(request.GET.get("page"))
    unread = bell.unread_count(request.user.pk)
    page.object_list = list(page.object_list)
    since = standing.standing(page.object_list, Caller.for_user(request.user).principal)
    for notification in page.object_list:
        notification.since = since.get(notification.pk, "")
    context = {"page": page, "unread": unread, "unread_label": bell.label(unread)}
    return render(request, "notifications/list.html", context)


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def open_notification(request: HttpRequest, pk: int) -> HttpResponse:
    notification = get_object_or_404(own(request), pk=pk)
    if notification.read_at is None:
        marked = Notification.objects.filter(pk=pk, read_at__isnull=True).update(
            read_at=timezone.now()
        )
        if marked:
            live.hint_after_commit(request.user.pk)  # the person's other tabs
    link = notification.link
    return HttpResponseRedirect(link if site_path(link, request) else reverse("notifications:list"))


@login_required
@require_POST
def mark_all_read(request: HttpRequest) -> HttpResponse:
    marked = Notification.objects.filter(
        user_id=request.user.pk, in_app=True, read_at__isnull=True
    ).update(read_at=timezone.now())
    if marked:
        live.hint_after_commit(request.user.pk)
        messages.success(
            request, f"Marked {marked} notification{'' if marked == 1 else 's'} as read."
        )
    else:
        messages.info(request, "Nothing was unread.")
    return HttpResponseRedirect(reverse("notifications:list"))


urlpatterns: list[URLPattern] = [
    path("", notification_list, name="list"),
    path("<int:pk>/open/", open_notification, name="open"),
    path("read-all/", mark_all_read, name="read-all"),
]
