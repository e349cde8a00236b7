"""``/notifications/…`` (``missionweave/urls.py`` includes these): the notifications page
(``pages``), the preferences and the one-click unsubscribe (``views``)."""

from __future__ import annotations

from . import pages, views

app_name = views.app_name
urlpatterns = [*pages.urlpatterns, *views.urlpatterns]
