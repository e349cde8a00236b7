"""Top-level routes: the API under ``/api/v1``, the dashboard, Django admin, and the
operational endpoints at the root (``/healthz``, ``/readyz``, ``/metrics``), which are for
probes and Prometheus rather than part of the wire contract."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from apps.api.views import health

#: a request refused before any view (a Host outside ALLOWED_HOSTS): JSON under /api/
handler400 = "apps.api.errors.bad_request"
#: an exception nothing answered; the database away is 503 with Retry-After (issue 16 §8)
handler500 = "apps.api.errors.server_error"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.prometheus_metrics, name="metrics"),
    path("api/v1/", include("apps.api.urls")),
    path("admin/", admin.site.urls),
    path("notifications/", include("apps.notifications.urls")),
    path("", include("apps.notifications.hook_urls")),
    path("", include("apps.dashboard.urls")),
]
