"""Top-level routes: the API under ``/api/v1``, the dashboard, Django admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("api/v1/", include("apps.api.urls")),
    path("admin/", admin.site.urls),
    path("", include("apps.dashboard.urls")),
]
