"""The embedded broker keeps every message whole while producers and a consumer race.

kombu's stock filesystem transport fails this test (the consumer reads half-written files:
JSONDecodeError); annotator/broker.py writes each message atomically."""

from __future__ import annotations

import threading

from kombu import Connection

import annotator.broker  # noqa: F401  (registers the transport for filesystem://)


def test_concurrent_producers_and_a_polling_consumer_lose_nothing(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder),
               "processed_folder": str(tmp_path), "control_folder": str(tmp_path), "store_processed": False}
    sent = {f"{t}-{i}" for t in range(4) for i in range(250)}
    got: list[str] = []

    def produce(t: int) -> None:
        with Connection("filesystem://", transport_options=options) as conn:
            q = conn.SimpleQueue("race")
            for i in range(250):
                q.put({"id": f"{t}-{i}", "padding": "x" * 4000})
            q.close()

    with Connection("filesystem://", transport_options=options) as conn:
        assert type(conn.transport).__module__ == "annotator.broker"
        q = conn.SimpleQueue("race")  # declared (bound) before the producers start, as the worker does
        producers = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
        for p in producers:
            p.start()
        while len(got) < len(sent):
            msg = q.get(timeout=20)
            got.append(msg.payload["id"])
            msg.ack()
        q.close()
    for p in producers:
        p.join()
    assert sorted(got) == sorted(sent)
    assert not [f for f in folder.iterdir() if f.name.startswith(".partial")]
