"""Dashboard routes. Unlike ``/api/``, pages keep Django's trailing slashes."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from . import (
    account_views,
    agents_views,
    approval_views,
    artifact_views,
    ask_views,
    inbox_views,
    item_views,
    list_views,
    membership_views,
    mission_create,
    mission_pages,
    mission_send_back,
    mission_views,
    overview_views,
    people_views,
    review_views,
    timeline_views,
    views,
    work_item_add,
    work_item_cancel,
    work_views,
)

app_name = "dashboard"
urlpatterns = [
    path("groups/", views.group_list, name="groups"),
    path("groups/<str:group>/", views.group_detail, name="group"),
    path(
        "groups/<str:group>/approval-queue/",
        work_views.group_approval_queue,
        name="approval-queue",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/",
        work_views.work_item_detail,
        name="work-item",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/section/",
        work_views.work_item_section,
        name="work-item-section",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/approve/",
        work_views.work_item_approve,
        name="work-item-approve",
    ),
    path(
        "groups/<str:group>/missions/<str:mission>/approve/",
        mission_views.mission_approve,
        name="mission-approve",
    ),
    path(
        "groups/<str:group>/missions/<str:mission>/cancel/",
        mission_views.mission_cancel,
        name="mission-cancel",
    ),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="dashboard/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]

# Each screen's module keeps its own routes (one module per screen, one owner per module).
urlpatterns += [
    *inbox_views.urlpatterns,
    *approval_views.urlpatterns,
    *ask_views.urlpatterns,
    *review_views.urlpatterns,
    *mission_pages.urlpatterns,
    *artifact_views.urlpatterns,
    *account_views.urlpatterns,
    *membership_views.urlpatterns,
    *list_views.urlpatterns,
    *item_views.urlpatterns,
    *mission_create.urlpatterns,
    *work_item_add.urlpatterns,
    *work_item_cancel.urlpatterns,
    *mission_send_back.urlpatterns,
    *timeline_views.urlpatterns,
    *overview_views.urlpatterns,
    *agents_views.urlpatterns,
    *people_views.urlpatterns,
]
