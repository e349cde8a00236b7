"""``/groups/<g>/hooks/…``: a group's chat and webhook hooks (``hook_views``).
``missionweave/urls.py`` includes these before the dashboard's routes."""

from __future__ import annotations

from django.urls import path

from . import hook_views

app_name = "hooks"
urlpatterns = [
    path("groups/<str:group>/hooks/", hook_views.hooks_page, name="page"),
    path("groups/<str:group>/hooks/<int:hook>/", hook_views.hook_detail, name="detail"),
    path("groups/<str:group>/hooks/<int:hook>/test/", hook_views.hook_test, name="test"),
    path("groups/<str:group>/hooks/<int:hook>/enable/", hook_views.hook_enable, name="enable"),
    path("groups/<str:group>/hooks/<int:hook>/delete/", hook_views.hook_delete, name="delete"),
]
