"""After-commit hints to stream consumers that a group's head moved.

A hint carries no event: the channel layer delivers at most once, so subscribers always read
the log by sequence. A lost hint only delays delivery until the consumer's next head poll.
"""

from __future__ import annotations

import hashlib
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def group_channel(group_id: str) -> str:
    """A channel-layer group name for a MWP group (ids may hold ``:``, which Channels refuses)."""
    return "mwp.g." + hashlib.sha256(group_id.encode("utf-8")).hexdigest()[:40]


def announce_head(group_id: str, sequence: int) -> None:
    """Tell consumers of ``group_id`` that its head is now ``sequence``; never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_channel(group_id), {"type": "group.head", "group": group_id, "head": sequence}
        )
    except Exception:  # a hint that cannot be sent is not an error of the command
        logger.warning("could not announce head of %s", group_id, exc_info=True)
