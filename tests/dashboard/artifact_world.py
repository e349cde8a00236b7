"""Artifacts the way agents make them: bytes uploaded to the store, then a manifest published
through the one write path (``artifact.publish``), so the group's log cites them and its
``GroupArtifact`` rows are the projection's, never written by a test.

w2 (the worker of ``tests.factories.build_world``) starts one WorkItem and publishes into it;
its manifests name the example contract's input, or artifacts published before, as sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from apps.artifacts.storage import FilesystemStorage, configured_storage
from missionweave.protocol.artifacts.manifests import artifact_uri
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST
from missionweave.protocol.signing import sign_document
from tests.factories import World, agent_card, now_text, store_bytes

from .workflows import mission, queued, start, submit

#: a 1x1 transparent PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@dataclass
class Workshop:
    """w2's started WorkItem, where it publishes artifacts."""

    world: World
    mission: str
    item: str
    lease: str
    published: list[str] = field(default_factory=list)

    @property
    def group(self) -> str:
        return self.world.group

    def publish(
        self,
        data: bytes,
        media_type: str = "text/plain",
        *,
        sources: tuple[str, ...] = (INCIDENT_REPORTS_DIGEST,),
        signed: bool = False,
        tool_versions: dict[str, str] | None = None,
    ) -> str:
        """Upload ``data`` as w2 and publish its manifest in the item; the digest."""
        digest = store_bytes(self.world.w2.principal, data)
        manifest: dict[str, Any] = {
            "digest": digest,
            "media_type": media_type,
            "schema": None,
            "producer": {
                "agent": self.world.w2.principal,
                "version": "summariser 1.4.2",
                "agent_card_version": agent_card()["version"],
            },
            "mission": self.mission,
            "work_item": self.item,
            "sources": list(sources),
            "tool_versions": tool_versions if tool_versions is not None else {"search": "2.1.0"},
            "created_at": now_text(),
            "classification": "internal",
            "size": len(data),
            "uri": artifact_uri(digest),
        }
        if signed:
            manifest = sign_document(self.world.w2.key, manifest)
        body = {"work_item": self.item, "lease_id": self.lease, "manifest": manifest}
        submit(self.world.w2, self.group, "artifact.publish", body)
        self.published.append(digest)
        return digest


def workshop(world: World) -> Workshop:
    mission_id = mission(world)
    item = queued(world, mission_id)
    lease = start(world, item, lease_ttl_s=3600)
    return Workshop(world, mission_id, item, lease)


def object_path(digest: str) -> Path:
    storage = configured_storage()
    assert isinstance(storage, FilesystemStorage)
    return storage.path(digest)


def damage(digest: str, data: bytes = b"not what was uploaded") -> None:
    """Replace the stored object behind the server's back (objects are stored read-only)."""
    path = object_path(digest)
    path.chmod(0o600)
    path.write_bytes(data)


# --- hostile content ------------------------------------------------------------------------


class _Markup(HTMLParser):
    """Every tag and attribute in a piece of HTML, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def assert_inert(html: str) -> None:
    """No script, no event handler, no frame or embed, no link or source outside http(s),
    mailto and relative, and no image fetched from elsewhere."""
    assert "<script" not in html.lower()
    markup = _Markup()
    markup.feed(html)
    for tag, attrs in markup.tags:
        assert tag not in {"script", "iframe", "object", "embed", "style", "svg", "base", "form"}
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in {"href", "src", "action", "formaction", "xlink:href"}:
                scheme = re.match(r"\s*([a-zA-Z][a-zA-Z0-9+.\-]*):", value or "")
                assert scheme is None or scheme.group(1).lower() in {"http", "https", "mailto"}, (
                    tag,
                    name,
                    value,
                )
        if tag == "img":
            assert attrs.get("src", "").startswith("/groups/"), attrs  # only our raw route


XSS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<div onmouseover="alert(1)">raw HTML block</div>\n\nafter',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click]( javascript:alert(1) )",
    "[click](jav&#x09;ascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<javascript:alert(1)>",
    "![x](javascript:alert(1))",
    "![x](https://tracker.example/pixel.png)",
    "![x](data:image/png;base64,iVBORw0KGgo=)",
    '[a](https://ok.example "title\\" onmouseover=\\"alert(1)")',
    '```html"><script>alert(1)</script>\ncode\n```',
    "<svg><script>alert(1)</script></svg>",
    "<iframe src=https://evil.example></iframe>",
    "[ref]\n\n[ref]: javascript:alert(1)",
]
