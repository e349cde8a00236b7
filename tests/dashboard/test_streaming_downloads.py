"""The dashboard's downloads stream under ASGI as they are read (issue 34 §7): the group's
export and an artifact's raw bytes reach an ASGI server as an asynchronous iterator, so
Django neither warns "StreamingHttpResponse must consume synchronous iterators" nor reads
the whole body into memory first; under WSGI (the test client) they stay synchronous.

``AsyncClient`` builds the ASGI request a server does; the views run in worker threads with
connections of their own, so the data is committed (``transaction=True``).
"""

from __future__ import annotations

import warnings

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from missionweave.protocol.exports import verify_export
from tests.dashboard.conftest import Dashboard, logged_in

pytestmark = pytest.mark.django_db(transaction=True)


async def _body(response: object) -> bytes:
    return b"".join([chunk async for chunk in response])  # type: ignore[attr-defined]


async def test_the_export_streams_asynchronously_under_asgi(dash: Dashboard) -> None:
    client = AsyncClient()
    alice = await get_user_model().objects.aget(username=dash.world.alice.username)
    await client.aforce_login(alice)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the sync-iterator warning would fail the test
        response = await client.get(f"/groups/{dash.world.group}/members/export/")
        assert response.status_code == 200
        assert response.is_async
        body = await _body(response)
    # the end of the response: Django closes the source and the request's connection
    await sync_to_async(response.close, thread_sensitive=True)()
    assert verify_export(body.splitlines(keepends=True)).ok


def test_the_export_stays_synchronous_under_wsgi(dash: Dashboard) -> None:
    response = logged_in(dash.world.alice).get(f"/groups/{dash.world.group}/members/export/")
    assert response.status_code == 200
    assert not response.is_async
    assert verify_export(b"".join(response.streaming_content).splitlines(keepends=True)).ok
