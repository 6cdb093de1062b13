"""The embedded broker: kombu's filesystem transport with atomic message files.

kombu's own ``_put`` creates the message file and then writes into it, while a consumer polling
the same folder may already list, move and read that file: it then reads an empty or partial
message and the worker's consumer dies on the JSON error (seen in the browser tests, where the web
server and a worker share the folder). Here a message is written to a hidden temporary file in the
same folder and renamed into place with ``os.replace`` (atomic on POSIX), so a consumer only ever
sees complete messages; consumers skip the hidden name because it does not end in
``.<queue>.msg``. The exchange table has the same race on creation; reading it is retried.
Importing this module makes ``filesystem://`` URLs use this transport.
"""

from __future__ import annotations

import os
import time
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    """Filesystem channel whose messages appear in the queue folder complete or not at all."""

    # kombu's own classes name the second parameter differently (AbstractChannel: message,
    # filesystem.Channel: payload), so no signature satisfies both.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".partial-{uuid.uuid4()}")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


    def get_table(self, exchange: str) -> list:
        """The exchange's bindings; retried while another process is creating the table file
        (kombu truncates it on creation before taking its lock, so a reader can see it empty)."""
        for _ in range(100):
            try:
                return super().get_table(exchange)
            except ValueError:  # json.JSONDecodeError: empty or half-written table
                time.sleep(0.01)
        return super().get_table(exchange)


class Transport(filesystem.Transport):
    """kombu's filesystem transport with :class:`Channel`."""

    Channel = Channel


TRANSPORT_ALIASES["filesystem"] = "annotator.broker:Transport"
