"""Django admin for the registry (issue 13 §6): one "Groups" entry, meaning MWP groups, and
no Delete where deleting could only fail or break the history."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.factories import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(world: World) -> Client:
    """An admin with every permission, as the demo's: what admin offers is then only what
    the ModelAdmins allow."""
    user = get_user_model().objects.get(username=world.alice.username)
    user.is_superuser = True
    user.save(update_fields=["is_superuser"])
    client = Client()
    client.force_login(user)
    return client


def test_admin_lists_one_groups_entry_and_it_is_the_mwp_groups(staff: Client) -> None:
    html = staff.get("/admin/").content.decode()
    assert html.count(">Groups</a>") == 1
    assert 'href="/admin/registry/group/"' in html
    assert "/admin/auth/group/" not in html


@pytest.mark.parametrize("model", ["group", "organization", "agent"])
def test_admin_offers_no_delete_for_rows_the_history_stands_on(
    staff: Client, world: World, model: str
) -> None:
    key = {"group": world.group, "organization": world.org, "agent": world.w1.id}[model]
    change = staff.get(f"/admin/registry/{model}/{key}/change/")
    assert change.status_code == 200
    assert f"/admin/registry/{model}/{key}/delete/" not in change.content.decode()
    assert staff.get(f"/admin/registry/{model}/{key}/delete/").status_code == 403
