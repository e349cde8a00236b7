"""The REST surface of wire.md §4: /authority, /schema, missions, batches, authorisation of
reads, and HTTP-level refusals (404, 405, 413, 415) in the wire.md §8 shape."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import Resolver404, resolve
from rest_framework.test import APIClient

from missionweave.protocol.signing import parse_public_key
from missionweave.protocol.timefmt import parse_timestamp
from tests.factories import World, agent, mission_body

from .http import API, JSON, bearer, error_of, get, head_sequence, json_of, post, submit

pytestmark = pytest.mark.django_db


def test_authority_shape(api: APIClient, world: World) -> None:
    """wire§4: GET /authority → {authority_id, public_key, protocol "mwp/1", time, clock_skew_s}."""
    body = json_of(get(api, "/authority"), 200)
    assert set(body) == {"authority_id", "public_key", "protocol", "time", "clock_skew_s"}
    assert body["protocol"] == "mwp/1"
    assert body["clock_skew_s"] == 300
    assert isinstance(body["authority_id"], str)
    assert body["authority_id"]
    parse_public_key(body["public_key"])
    time = parse_timestamp(body["time"])
    assert abs(time - datetime.now(UTC)) < timedelta(seconds=60)


def test_authority_needs_no_token_and_ignores_a_bad_one(api: APIClient, world: World) -> None:
    """wire§4: /authority is for anyone."""
    json_of(get(api, "/authority", "mws_garbage"), 200)


# --- missions ----------------------------------------------------------------------------


def olga_creates(api: APIClient, world: World, mission: str) -> None:
    document = world.olga.command(world.group, "mission.create", mission_body(mission))
    json_of(submit(api, world.group, document, world.olga.token), 201)


def test_mission_projection_is_served(api: APIClient, world: World) -> None:
    """wire§4: GET /groups/{g}/missions/{id} → the Mission projection (state, goal,
    work_items, budgets, parent, children)."""
    parent = world.olga.command(world.group, "mission.create", mission_body("m-parent"))
    json_of(submit(api, world.group, parent, world.olga.token), 201)
    child = world.w1.command(
        world.group, "mission.create", mission_body("m-child", parent="m-parent")
    )
    json_of(submit(api, world.group, child, world.w1.token), 201)
    body = json_of(get(api, f"/groups/{world.group}/missions/m-parent", world.w2.token), 200)
    assert {"state", "goal", "work_items", "budgets", "parent", "children"} <= set(body)
    assert body["state"] == "active"
    assert body["goal"] == mission_body()["goal"]
    assert body["budgets"] == {"limits": {"money": 5, "tokens": 200000}, "used": {}}
    assert (body["parent"], body["children"], body["work_items"]) == (None, ["m-child"], [])
    child_body = json_of(get(api, f"/groups/{world.group}/missions/m-child", world.w2.token), 200)
    assert (child_body["parent"], child_body["children"]) == ("m-parent", [])


def test_unknown_mission_is_not_found(api: APIClient, world: World) -> None:
    """wire§4: 404 NOT_FOUND for a mission that does not exist in the group."""
    error_of(get(api, f"/groups/{world.group}/missions/m-none", world.w1.token), 404, "NOT_FOUND")


def test_mission_create_twice_is_illegal_transition(api: APIClient, world: World) -> None:
    """R10.2-22: a mission id is created once per group; nothing appended the second time."""
    olga_creates(api, world, "m-1")
    before = head_sequence(world.group)
    again = world.w1.command(world.group, "mission.create", mission_body("m-1"))
    error_of(submit(api, world.group, again, world.w1.token), 409, "ILLEGAL_TRANSITION")
    assert head_sequence(world.group) == before


def test_child_of_an_unknown_parent_is_not_found(api: APIClient, world: World) -> None:
    """R10.4-06: the parent must exist in the group."""
    before = head_sequence(world.group)
    document = world.w1.command(world.group, "mission.create", mission_body(parent="m-nope"))
    error = error_of(submit(api, world.group, document, world.w1.token), 404, "NOT_FOUND")
    assert error["requirement"] == "R10.4-06"
    assert head_sequence(world.group) == before


# --- authorisation of reads --------------------------------------------------------------


@pytest.mark.parametrize("path", ["events", "events?after=0", "head", "missions/m-1"])
def test_non_member_cannot_read_a_group(api: APIClient, world: World, path: str) -> None:
    """wire§4: events, head and missions are for members (403 NOT_A_MEMBER)."""
    olga_creates(api, world, "m-1")
    w3 = agent("w3", world.org)
    w3.open_session()
    error = error_of(get(api, f"/groups/{world.group}/{path}", w3.token), 403, "NOT_A_MEMBER")
    assert error["requirement"] == "wire§2"


def test_revoked_member_loses_read_access(api: APIClient, world: World) -> None:
    """wire§4: access follows the current membership."""
    json_of(get(api, f"/groups/{world.group}/head", world.w2.token), 200)
    api.delete(f"{API}/groups/{world.group}/memberships/agent:w2", **bearer(world.alice.token))
    error_of(get(api, f"/groups/{world.group}/head", world.w2.token), 403, "NOT_A_MEMBER")


@pytest.mark.parametrize("path", ["events", "head", "missions/m-1"])
def test_reads_need_a_token(api: APIClient, world: World, path: str) -> None:
    """wire§4: a missing token is 401 UNAUTHENTICATED."""
    error_of(get(api, f"/groups/{world.group}/{path}"), 401, "UNAUTHENTICATED")


def test_unknown_group_is_not_found(api: APIClient, world: World) -> None:
    """wire§4: reads of a group that does not exist are 404."""
    error_of(get(api, "/groups/g-nope/events", world.w1.token), 404, "NOT_FOUND")
    error_of(get(api, "/groups/g-nope/head", world.w1.token), 404, "NOT_FOUND")


def test_command_to_an_unknown_group_is_refused_without_5xx(api: APIClient, world: World) -> None:
    """wire§3/§8: a command for a group that does not exist never reaches an append."""
    document = world.olga.command("g-nope", "mission.create", mission_body())
    response = submit(api, "g-nope", document, world.olga.token)
    error_of(response, 404, "NOT_FOUND")


# --- batches -----------------------------------------------------------------------------


def test_batch_items_are_judged_on_their_own_in_order(api: APIClient, world: World) -> None:
    """wire§4: 200 {"results": [{"status", "body"}...]}; a refused item does not stop later ones."""
    good = world.olga.command(world.group, "mission.create", mission_body("m-a"))
    duplicate = world.olga.command(world.group, "mission.create", mission_body("m-a"))
    foreign = world.w1.command(world.group, "mission.create", mission_body("m-b"))
    later = world.olga.command(world.group, "mission.create", mission_body("m-c"))
    before = head_sequence(world.group)
    path = f"/groups/{world.group}/commands:batch"
    body = json_of(post(api, path, {"commands": [good, duplicate, foreign, [], later]},
                        world.olga.token), 200)  # fmt: skip
    statuses = [item["status"] for item in body["results"]]
    assert statuses == [201, 409, 403, 400, 201]
    assert body["results"][1]["body"]["error"]["code"] == "ILLEGAL_TRANSITION"
    assert body["results"][2]["body"]["error"]["code"] == "FORBIDDEN"
    assert body["results"][3]["body"]["error"]["code"] == "MALFORMED"
    assert [e["sequence"] for e in body["results"][4]["body"]["events"]] == [before + 2]
    assert head_sequence(world.group) == before + 2


def test_batch_without_a_token_is_refused_whole(api: APIClient, world: World) -> None:
    """wire§4: a missing or bad token refuses the whole request (401)."""
    path = f"/groups/{world.group}/commands:batch"
    commands = [world.olga.command(world.group, "mission.create", mission_body())]
    before = head_sequence(world.group)
    error_of(post(api, path, {"commands": commands}), 401, "UNAUTHENTICATED")
    error_of(post(api, path, {"commands": commands}, "mwt_nope"), 401, "UNAUTHENTICATED")
    assert head_sequence(world.group) == before


@pytest.mark.parametrize(
    "raw", [b"[]", b"{}", b'{"commands": {}}', b'{"commands": [], "x": 1}', b"{"]
)
def test_batch_of_the_wrong_shape_is_malformed(api: APIClient, world: World, raw: bytes) -> None:
    """wire§4: a batch is {"commands": [envelope, ...]}."""
    path = f"/groups/{world.group}/commands:batch"
    error_of(post(api, path, raw, world.olga.token), 400, "MALFORMED")


def test_batch_of_more_than_500_commands_is_too_large(api: APIClient, world: World) -> None:
    """wire§1: a batch holds at most 500 commands."""
    path = f"/groups/{world.group}/commands:batch"
    response = post(api, path, {"commands": [{}] * 501}, world.olga.token)
    assert error_of(response, 413, "TOO_LARGE")["details"] == {"limit": 500}


# --- HTTP-level refusals -----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope",
        "/api/v1/authority/",
        "/api/v1/sessions/",
        "/api/v1/groups/g-research/commands/",
        "/api/v1/groups/g-research/events/",
        "/api/v1/schema/",
        "/api/v1/",
        "/api/v2/authority",
    ],
)
def test_unknown_paths_and_trailing_slashes_are_404(
    api: APIClient, world: World, path: str
) -> None:
    """wire§1/§8: a trailing slash is 404, never a redirect, in the §8 shape."""
    error_of(api.get(path, **bearer(world.w1.token)), 404, "NOT_FOUND")
    error_of(api.post(path, data=b"{}", content_type=JSON, **bearer(world.w1.token)), 404,
             "NOT_FOUND")  # fmt: skip


@pytest.mark.parametrize("path", ["/authority", "/groups/g-research/head", "/sessions/current"])
def test_a_host_outside_allowed_hosts_is_a_json_error_under_the_api(
    api: APIClient, world: World, path: str
) -> None:
    """Issue 16 §3: Django refuses such a request before any view; under ``/api/`` the
    answer is still the §8 document (the command edge answers the hot paths the same way),
    and the dashboard keeps its styled page."""
    response = api.get(API + path, HTTP_HOST="evil.example", **bearer(world.w1.token))
    error = error_of(response, 400, "MALFORMED")
    assert "Host" in error["message"]
    page = api.get("/login/", HTTP_HOST="evil.example")
    assert page.status_code == 400
    assert page["Content-Type"].startswith("text/html")
    assert "<title>Bad request" in page.content.decode()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/groups/g-research/commands"),
        ("put", "/groups/g-research/commands"),
        ("get", "/groups/g-research/commands:batch"),
        ("post", "/groups/g-research/events"),
        ("delete", "/groups/g-research/head"),
        ("put", "/authority"),
        ("post", "/authority"),
        ("get", "/sessions"),
        ("delete", "/sessions/current"),
        ("get", "/organizations"),
        ("patch", "/groups"),
        ("get", "/groups/g-research/memberships"),
        ("post", "/groups/g-research/memberships/agent:w1"),
        ("post", "/schema"),
    ],
)
def test_wrong_method_is_405(api: APIClient, world: World, method: str, path: str) -> None:
    """wire§8: 405 METHOD_NOT_ALLOWED in the §8 shape."""
    token = world.alice.token
    response = api.generic(method.upper(), API + path, b"{}", content_type=JSON, **bearer(token))
    error_of(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize(
    ("path", "token_of"),
    [
        ("/groups/g-research/commands", "w1"),
        ("/groups/g-research/commands:batch", "w1"),
        ("/sessions", None),
        ("/organizations", "alice"),
        ("/groups/g-research/memberships", "alice"),
    ],
)
@pytest.mark.parametrize(
    "content_type", ["", "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
)
def test_post_without_json_content_type_is_415(
    api: APIClient, world: World, path: str, token_of: str | None, content_type: str
) -> None:
    """wire§1: a POST without Content-Type: application/json is 415."""
    token = {"w1": world.w1.token, "alice": world.alice.token, None: None}[token_of]
    before = head_sequence(world.group)
    response = api.generic("POST", API + path, b"{}", content_type=content_type, **bearer(token))
    error_of(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert head_sequence(world.group) == before


def test_json_with_a_charset_parameter_is_accepted(api: APIClient, world: World) -> None:
    """wire§1: application/json; charset=utf-8 is JSON."""
    document = world.w1.command(world.group, "mission.create", mission_body())
    response = post(api, f"/groups/{world.group}/commands", document, world.w1.token,
                    content_type="application/json; charset=utf-8")  # fmt: skip
    assert response.status_code == 201


def test_command_body_over_1_mib_is_413(api: APIClient, world: World) -> None:
    """wire§1: a command request body is at most 1 MiB (TOO_LARGE), nothing appended."""
    before = head_sequence(world.group)
    body = mission_body(goal="x" * (1024 * 1024))
    document = world.w1.command(world.group, "mission.create", body)
    response = submit(api, world.group, document, world.w1.token)
    assert error_of(response, 413, "TOO_LARGE")["details"] == {"limit": 1024 * 1024}
    assert head_sequence(world.group) == before


def test_command_body_just_under_1_mib_is_read(api: APIClient, world: World) -> None:
    """wire§1: the limit is on the body: 1 MiB of JSON is parsed (and then judged on its own)."""
    document = world.w1.command(world.group, "mission.create", mission_body(goal="x"))
    raw = b'{"pad": "' + b"y" * (1024 * 1024 - 200) + b'"}'  # parsed, then refused as an envelope
    assert len(raw) <= 1024 * 1024
    error = error_of(submit(api, world.group, raw, world.w1.token), 400, "MALFORMED")
    assert error["details"]["path"].startswith("$.")
    assert submit(api, world.group, document, world.w1.token).status_code == 201


# --- schema ------------------------------------------------------------------------------

# Transcribed from wire.md §4 (both tables): method and path of every endpoint.
WIRE_4 = [
    ("get", "/authority"),
    ("post", "/sessions"),
    ("get", "/sessions/current"),
    ("post", "/groups/{group}/commands"),
    ("post", "/groups/{group}/commands:batch"),
    ("get", "/groups/{group}/events"),
    ("get", "/groups/{group}/head"),
    ("get", "/groups/{group}/snapshots/{sequence}"),
    ("put", "/artifacts/{digest}"),
    ("get", "/artifacts/{digest}"),
    ("get", "/groups/{group}/work-items/{id}"),
    ("get", "/groups/{group}/missions/{id}"),
    ("get", "/schema"),
    ("post", "/organizations"),
    ("post", "/agents"),
    ("post", "/groups"),
    ("post", "/groups/{group}/memberships"),
    ("delete", "/groups/{group}/memberships/{principal}"),
    ("post", "/groups/{group}/snapshots"),
    ("post", "/groups/{group}/archive"),
]
_SAMPLE = {"{group}": "g", "{sequence}": "1", "{digest}": "sha256:" + "0" * 64, "{id}": "x",
           "{principal}": "agent:w1"}  # fmt: skip


def _exists(method: str, path: str) -> bool:
    """Whether the endpoint is routed and its view answers ``method``."""
    concrete = path
    for placeholder, value in _SAMPLE.items():
        concrete = concrete.replace(placeholder, value)
    try:
        match = resolve(API + concrete)
    except Resolver404:
        return False
    view = getattr(match.func, "view_class", None)
    return view is not None and hasattr(view, method)


def _shape(path: str) -> str:
    """A path with its parameter names erased ({mission} and {id} are the same slot)."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_schema_is_an_openapi_3_document_of_every_existing_wire_endpoint(
    api: APIClient, world: World
) -> None:
    """wire§4: GET /schema is the OpenAPI 3 document of every endpoint, admin ones included."""
    response = get(api, "/schema")
    document = json_of(response, 200)
    assert "json" in response["Content-Type"]
    assert document["openapi"].startswith("3.")
    served = {
        (method, _shape(path.removeprefix(API)))
        for path, operations in document["paths"].items()
        for method in operations
    }
    existing = [(m, p) for m, p in WIRE_4 if _exists(m, p)]
    assert len(existing) >= 13  # what the skeleton already routes
    missing = [(m, p) for m, p in existing if (m, _shape(p)) not in served]
    assert missing == []


def test_the_artifact_endpoints_served_beside_django_are_documented_too(
    api: APIClient, world: World
) -> None:
    """wire§4: PUT and GET /artifacts/{digest} (an ASGI handler, not Django views) are in
    the document with their wire.md §8 refusals (R13.1-05: 409 ARTIFACT_CORRUPTED)."""
    document = json_of(get(api, "/schema"), 200)
    operations = document["paths"]["/api/v1/artifacts/{digest}"]
    assert set(operations) == {"put", "get"}
    assert {"201", "200", "413", "422"} <= set(operations["put"]["responses"])
    assert {"200", "206", "304", "404", "409"} <= set(operations["get"]["responses"])


def test_every_routed_api_endpoint_is_a_wire_endpoint_or_documented(
    api: APIClient, world: World
) -> None:
    """wire§4: additions are allowed, but each is in the schema too."""
    document = json_of(get(api, "/schema"), 200)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation.get("responses"), (method, path)


def test_the_document_states_what_ids_and_counts_the_server_accepts(
    api: APIClient, world: World
) -> None:
    """Issue 16 §6: every path id carries the pattern its converter matches, and every count
    (``after``, ``limit``, a sequence, a version) is an integer from 0 to 18 digits, so what
    the document allows is what the server routes and parses; nothing is left untyped."""
    document = json_of(get(api, "/schema"), 200)
    seen: set[tuple[str, str]] = set()
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                where, name, schema = parameter["in"], parameter["name"], parameter["schema"]
                if where == "path":
                    if schema.get("type") == "integer":
                        assert (schema["minimum"], schema["maximum"]) == (0, 10**18 - 1), path
                    else:
                        assert schema["pattern"].startswith("^"), (path, name)
                        assert re.fullmatch(schema["pattern"][1:-1], _PATH_SAMPLES[name]), name
                # GET …/contexts pages by a package key, a string cursor (issue 35 §7)
                string_cursor = name == "after" and path.endswith("/contexts")
                if name in ("after", "limit") and not string_cursor:
                    assert schema == {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}
                seen.add((where, name))
    assert {("path", "group"), ("path", "digest"), ("query", "after")} <= seen
    # a sequence longer than the document allows names nothing: 404, never a 5xx
    error_of(get(api, "/groups/g-research/snapshots/" + "9" * 19, world.alice.token), 404,
             "NOT_FOUND")  # fmt: skip


_PATH_SAMPLES = {
    "group": "g-research", "mission": "m-1", "work_item": "wi-1", "package": "p.1",
    "from_group": "g:other", "principal": "agent:w1", "digest": "sha256:" + "0" * 64,
}  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/groups/g%00x/events"),
        ("GET", "/groups/g%00x/head"),
        ("GET", "/groups/g-research/missions/m%00"),
        ("GET", "/groups/g%20x/events"),
        ("GET", "/groups/%C3%A9/events"),
        ("GET", "/groups/" + "g" * 129 + "/head"),
        ("POST", "/groups/g%00x/commands"),
        ("POST", "/groups/g%00x/commands:batch"),
        ("POST", "/groups/g%00x/memberships"),
        ("DELETE", "/groups/g-research/memberships/agent:w%00"),
        ("DELETE", "/groups/g-research/memberships/robot:w1"),
    ],
)
def test_path_segments_that_cannot_be_ids_are_404_never_5xx(
    api: APIClient, world: World, method: str, path: str
) -> None:
    """wire§1/§8: a path naming no possible id (NUL, space, non-ASCII, 129 characters) is 404."""
    before = head_sequence(world.group)
    response = api.generic(
        method, API + path, b"{}", content_type=JSON, **bearer(world.alice.token)
    )
    error_of(response, 404, "NOT_FOUND")
    assert head_sequence(world.group) == before
