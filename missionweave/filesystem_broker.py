"""kombu's ``filesystem://`` transport with messages that appear whole, for the embedded
default (no broker server; ``settings._celery_broker``).

kombu's producer creates a message's file in the shared folder and then writes it, while a
consumer takes any file with the queue's name: under load a worker took a file before its
bytes were in, failed to decode it and exited, and the sweeps stopped (TOOLCHAIN.md gotcha 6
names the transport's other limits). Here a message is written under a name no consumer
takes (``….msg.part``) and renamed into place, which is atomic on one file system, so a
consumer sees every message whole or not at all. Only ``_put`` differs; reading, the
exchange table and fanout are kombu's.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        """Put ``payload`` onto ``queue``: written aside, then renamed into the folder."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".part"  # the consumer takes only names ending ".<queue>.msg"
        try:
            with open(partial, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
