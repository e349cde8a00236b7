"""Dashboard personas: maria, a member with a password, and nina, who belongs to no group;
for the decision pages (R10.2-06, R13.2-03), petra, a second mission owner, and rita, a
reviewer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.factories import HumanPersona, World, grant, human

PASSWORD = "correct horse battery staple"


@dataclass
class Dashboard:
    world: World
    maria: HumanPersona  # observer of the world's group
    nina: HumanPersona  # no membership anywhere


def with_password(persona: HumanPersona) -> HumanPersona:
    user = get_user_model().objects.get(username=persona.username)
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return persona


@pytest.fixture
def dash(world: World, settings: object) -> Dashboard:
    # A deliberately weak hasher: the default one costs about half a second per password.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    maria = with_password(human("maria"))
    grant(world.alice, world.group, maria, "observer")
    return Dashboard(world, maria, with_password(human("nina")))


@dataclass
class People:
    dash: Dashboard
    petra: HumanPersona  # a second mission_owner
    rita: HumanPersona  # a reviewer

    @property
    def world(self) -> Any:
        return self.dash.world

    @property
    def group(self) -> str:
        return self.dash.world.group


@pytest.fixture
def people(dash: Dashboard) -> People:
    """Enough people for an execution approval by two owners (R10.2-06) and a review by a
    person (R13.2-03); both can also sign in with ``PASSWORD``."""
    petra = with_password(human("petra"))
    rita = with_password(human("rita"))
    grant(dash.world.alice, dash.world.group, petra, "mission_owner")
    grant(dash.world.alice, dash.world.group, rita, "reviewer")
    return People(dash, petra, rita)


def logged_in(persona: HumanPersona) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=persona.username))
    return client


def password_login(client: Client, username: str, password: str) -> bool:
    """Log ``client`` in through the login form, as a person does: the path django-axes
    counts (``Client.login`` authenticates without a request, which axes refuses)."""
    response = client.post("/login/", {"username": username, "password": password})
    return response.status_code == 302
