"""Block events of a real `memkv start` process, read by a subscriber written
against docs/events.md alone (pyzmq and msgpack; no MemKV code decodes them).

The server is started by memkv.testing.LocalServer: the binary from
MEMKV_BINARY (set by ctest); the client package from PYTHONPATH (ctest sets
build/python).
"""

import ast
import pathlib
import re
import secrets
import time

import msgpack
import pytest
import zmq

from memkv import Client
from memkv.testing import LocalServer

DEADLINE_S = 20.0
TOPIC = b"memkv-test"


# ---- the subscriber: docs/events.md, "Format" ------------------------------

def decode_event(e):
    """One event, map or array encoded, as a dict with a "type"."""
    if isinstance(e, dict):
        return e
    fields = {"BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
                              "medium", "lora_name"],
              "BlockRemoved": ["block_hashes", "medium"],
              "AllBlocksCleared": []}[e[0]]
    return dict(zip(["type"] + fields, e))


def decode_batch(payload):
    ts, events, rank = msgpack.unpackb(payload, raw=False)
    assert isinstance(ts, float) and rank == 0
    return [decode_event(e) for e in events]


def seq_of(frame):
    return int.from_bytes(frame, "big", signed=True)


class Subscriber:
    def __init__(self, ctx, publish, replay):
        self.ctx, self.publish, self.replay = ctx, publish, replay
        self.sub = None
        self.last_seq = -1
        self.events = []

    def connect(self):
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, TOPIC)
        self.sub.connect(self.publish)

    def close(self):
        self.sub.close(linger=0)
        self.sub = None

    def replay_from(self, start):
        """Every kept batch from `start` on, up to the end marker."""
        dealer = self.ctx.socket(zmq.DEALER)
        dealer.connect(self.replay)
        dealer.send_multipart([b"", start.to_bytes(8, "big")])
        out = []
        try:
            while True:
                assert dealer.poll(int(DEADLINE_S * 1000)), "no end marker from the replay socket"
                empty, seq, payload = dealer.recv_multipart()
                assert empty == b""
                if seq_of(seq) == -1:
                    assert payload == b""
                    return out
                out.append((seq_of(seq), payload))
        finally:
            dealer.close(linger=0)

    def take(self, seq, payload):
        assert seq == self.last_seq + 1, f"sequence {seq} after {self.last_seq}"
        self.last_seq = seq
        self.events += decode_batch(payload)

    def poll_once(self, timeout_ms):
        """Takes one message, healing a gap through replay first. False: none came."""
        if not self.sub.poll(timeout_ms):
            return False
        topic, seq, payload = self.sub.recv_multipart()
        assert topic == TOPIC
        seq = seq_of(seq)
        if seq <= self.last_seq:
            return True
        if seq > self.last_seq + 1:
            for s, p in self.replay_from(self.last_seq + 1):
                if self.last_seq < s < seq:
                    self.take(s, p)
        self.take(seq, payload)
        return True

    def wait_for(self, predicate, poke=None):
        """Reads until predicate(events) holds; poke() between empty polls."""
        deadline = time.monotonic() + DEADLINE_S
        while not predicate(self.events):
            assert time.monotonic() < deadline, f"events so far: {self.events}"
            if not self.poll_once(100) and poke is not None:
                poke()


# ---- a server with events on ------------------------------------------------

class EventsServer(LocalServer):
    def __init__(self, encoding="map"):
        super().__init__(memory="256 MiB", workers=2,
                         extra_config="events:\n  publish: tcp://127.0.0.1:0\n  replay: tcp://127.0.0.1:0\n"
                                      f"  topic: {TOPIC.decode()}\n  encoding: {encoding}\n")

    def start(self):
        super().start()
        # The bound ports (0 in the config) are in the start log.
        m = re.search(r"publishing on (tcp://\S+), replay on (tcp://\S+)", self.stderr())
        assert m, self.stderr()
        self.publish, self.replay = m.group(1), m.group(2)
        return self


@pytest.fixture
def server():
    s = EventsServer().start()
    yield s
    assert s.stop() == 0, s.stderr()


@pytest.fixture
def subscriber(server):
    ctx = zmq.Context()
    sub = Subscriber(ctx, server.publish, server.replay)
    sub.connect()
    yield sub
    if sub.sub is not None:
        sub.close()
    ctx.term()


def of_type(events, kind):
    return [e for e in events if e["type"] == kind]


# ---- tests ------------------------------------------------------------------

def test_a_fresh_server_announces_all_blocks_cleared_first(subscriber):
    # Published at start, before anyone subscribed: replay has it as sequence 0
    # (once the publisher's thread has sent it).
    deadline = time.monotonic() + DEADLINE_S
    batches = subscriber.replay_from(0)
    while not batches and time.monotonic() < deadline:
        batches = subscriber.replay_from(0)
    assert batches, "nothing to replay"
    seq, payload = batches[0]
    assert seq == 0
    assert decode_batch(payload) == [{"type": "AllBlocksCleared"}]


def test_replay_from_a_future_sequence_is_just_the_end_marker(subscriber):
    assert subscriber.replay_from(1 << 40) == []


def test_put_publishes_block_stored_and_delete_block_removed(server, subscriber):
    with server.client() as c:
        value = b"x" * 1000
        # The SUB socket's subscription reaches the server asynchronously: put
        # until the first BlockStored arrives, gaps healed through replay.
        subscriber.last_seq = -1
        subscriber.wait_for(lambda ev: of_type(ev, "BlockStored"), poke=lambda: c.put("events/a", value))
        stored = of_type(subscriber.events, "BlockStored")[0]
        assert stored["medium"] == "MEMKV_DRAM"
        assert stored["block_size"] == len(value)
        assert stored["token_ids"] == []
        assert stored["parent_block_hash"] is None
        (block_hash,) = stored["block_hashes"]
        assert isinstance(block_hash, int)  # a put without a block hash: XXH3-64 of the key
        assert c.delete("events/a")
        subscriber.wait_for(lambda ev: of_type(ev, "BlockRemoved"))
        removed = of_type(subscriber.events, "BlockRemoved")[0]
        assert removed["block_hashes"] == [block_hash]
        assert removed["medium"] == "MEMKV_DRAM"


def test_a_gap_heals_through_replay(server, subscriber):
    with server.client() as c:
        subscriber.last_seq = -1
        subscriber.wait_for(lambda ev: of_type(ev, "BlockStored"), poke=lambda: c.put("gap/first", b"1"))
        seen = len(of_type(subscriber.events, "BlockStored"))
        subscriber.close()
        for i in range(3):
            c.put(f"gap/missed{i}", b"2" * (10 + i))
        subscriber.connect()
        # The puts above were published while nobody listened; the next
        # message shows the gap and the subscriber replays it.
        subscriber.wait_for(lambda ev: len(of_type(ev, "BlockStored")) >= seen + 4,
                            poke=lambda: c.put("gap/after", b"3"))
        sizes = [e["block_size"] for e in of_type(subscriber.events, "BlockStored")[seen:seen + 3]]
        assert sizes == [10, 11, 12]


def test_a_tenants_own_stream_carries_its_keys_alone():
    # docs/tenants.md, "Events": team-a's publisher sends events of its keys
    # only, named as its client names them; team-b's and the administrator's
    # puts never appear there.
    a_key, b_key = secrets.token_hex(32), secrets.token_hex(32)
    tenants = ("tenants:\n"
               f"  - name: team-a\n    prefix: \"team-a/\"\n    key: \"{a_key}\"\n"
               "    events_publish: tcp://127.0.0.1:0\n    events_replay: tcp://127.0.0.1:0\n"
               f"  - name: team-b\n    prefix: \"team-b/\"\n    key: \"{b_key}\"\n")
    server = LocalServer(memory="256 MiB", workers=2,
                         extra_config=f"events:\n  topic: {TOPIC.decode()}\n" + tenants).start()
    ctx = zmq.Context()
    try:
        m = re.search(r"block events of tenant team-a: publishing on (tcp://\S+), replay on (tcp://\S+)",
                      server.stderr())
        assert m, server.stderr()
        sub = Subscriber(ctx, m.group(1), m.group(2))
        sub.connect()
        with Client(servers=[server.address], auth_key=a_key, transport="tcp") as a, \
                Client(servers=[server.address], auth_key=b_key, transport="tcp") as b, server.client() as admin:
            def poke():
                b.put("k", b"b" * 10)
                admin.put("elsewhere", b"x" * 11)
                a.put("k", b"a" * 12)
            sub.last_seq = -1
            sub.wait_for(lambda ev: of_type(ev, "BlockStored"), poke=poke)
            stored = of_type(sub.events, "BlockStored")
            assert {e["block_size"] for e in stored} == {12}, stored
            assert all(e["block_hashes"] == stored[0]["block_hashes"] for e in stored)
            assert b.delete("k")
            assert a.delete("k")
            sub.wait_for(lambda ev: of_type(ev, "BlockRemoved") and
                         of_type(ev, "BlockRemoved")[-1]["block_hashes"] == stored[0]["block_hashes"] and
                         len(of_type(ev, "BlockRemoved")) >= len(stored))
            removed = of_type(sub.events, "BlockRemoved")
            assert all(e["block_hashes"] == stored[0]["block_hashes"] for e in removed), removed
        sub.close()
    finally:
        ctx.term()
        assert server.stop() == 0, server.stderr()


# ---- the docs' example is what a server sends ----------------------------------

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "events.md"


def docs_example(encoding):
    """The example batch docs/events.md shows for `encoding`, as Python values."""
    m = re.search(r"in %s\s+encoding:\s*```\n(.*?)```" % encoding, DOCS.read_text(), re.S)
    assert m, f"docs/events.md has no example in {encoding} encoding"
    return ast.literal_eval(re.sub(r"\bnil\b", "None", m.group(1)))


@pytest.mark.parametrize("encoding", ["map", "array"])
def test_the_docs_example_is_what_the_server_publishes_for_its_put(encoding):
    # docs/events.md: "a put of 4096 bytes with the byte hash 01 02 and the
    # byte parent hash 03 04". The batch the server publishes for that put
    # must equal the example, but for the time stamp.
    ts, events, rank = docs_example(encoding)
    s = EventsServer(encoding).start()
    ctx = zmq.Context()
    try:
        with s.client() as c:
            c.put("docs/example", b"x" * 4096, block_hash=b"\x01\x02", parent_hash=b"\x03\x04")
        replay = Subscriber(ctx, s.publish, s.replay)
        deadline = time.monotonic() + DEADLINE_S
        stored = []
        while not stored:
            assert time.monotonic() < deadline, "no BlockStored in the replay"
            for _, payload in replay.replay_from(0):
                got_ts, got_events, got_rank = msgpack.unpackb(payload, raw=False)
                stored += [e for e in got_events if decode_event(e)["type"] == "BlockStored"]
        assert isinstance(ts, float) and isinstance(got_ts, float)
        assert (stored, got_rank) == (events, rank)
    finally:
        ctx.term()
        assert s.stop() == 0, s.stderr()
