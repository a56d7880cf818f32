"""memkv.adapters.sglang driven by SGLang's released package, no look-alike
in between: SGLang's StorageBackendFactory makes the backend ("dynamic",
from a HiCacheStorageConfig) over SGLang's own host KV pools
(MHATokenToKVPoolHost in the layer_first, page_first, page_first_direct and
page_head layouts, MLATokenToKVPoolHost in layer_first, page_first and
page_first_direct), built over SGLang's device pools on the CPU. Pages are
filled and compared with the pools' own page accessors (get_data_page,
set_from_flat_data_page, get_dummy_flat_data_page), page hashes come from
SGLang's hashing (get_storage_hash_str over a RadixKey), and the backups,
storage hit queries and prefetch transfers are SGLang's cache controller's
own methods (HiCacheController._page_backup, _storage_hit_query,
_page_transfer and the page functions they call; see attach() in
sglang_partner.py). Every byte goes through a real MemKV server on loopback.
Here: pages and layouts, keys, tenants, metrics and threads; the settings in
test_sglang_settings.py, faults and back-pressure in test_sglang_faults.py.
"""

import threading
import tracemalloc
from typing import Any, List

import pytest
import torch

import memkv
import memkv.testing
from memkv.adapters._common import namespaced

from sglang.srt.mem_cache.hicache_storage import STORAGE_BATCH_SIZE, HiCacheStorage, HiCacheStorageExtraInfo
from sglang.srt.mem_cache.radix_cache import RadixKey
from sglang.srt.mem_cache.utils import get_hash_str
from sglang.srt.observability.metrics_collector import StorageMetrics

import memkv.adapters.sglang as sg  # noqa: E402 - after SGLang, whose HiCacheStorage it subclasses

from sglang_partner import (PAGE, PARTS, POOLS, CountingClient, Request, attach, backup, blank,
                            detach, fill, host_indices, host_pool, is_blank, load, page, query,
                            request, same, settings)


# --------------------------------------------------------------------------- tests

def test_the_versions_under_test():
    """The releases under test, printed."""
    from importlib.metadata import version
    print(f"sglang {version('sglang')}, torch {torch.__version__}, memkv {memkv.__version__}")
    assert sg.SGLANG_AVAILABLE, sg._SGLANG_IMPORT_ERROR
    assert issubclass(sg.MemKVHiCacheStorage, HiCacheStorage)


@pytest.mark.parametrize("kind, layout", POOLS, ids=[f"{k}-{lay}" for k, lay in POOLS])
def test_store_then_load_into_fresh_pool(server, kind, layout):
    """SGLang's host pool (MHA or MLA, in each layout it has on the CPU):
    three requests backed up by the controller's _page_backup, their whole
    prefixes found by its _storage_hit_query and loaded by its _page_transfer
    into other slots of a fresh pool, byte for byte, nothing else in the
    fresh pool touched.

    The backend names a page's parts as the pool's get_page_buffer_meta lists
    them: k and v (MHA page-first layouts), k<l> and v<l> (MHA layer_first),
    kv (MLA page-first layouts), l<l> (MLA layer_first)."""
    src, dst = host_pool(kind, layout, pages=72), host_pool(kind, layout, pages=72)
    writer = attach(src, settings(server))
    requests = [(request(n), list(range(first, first + n))) for first, n in ((0, 5), (8, 3), (20, 9))]
    for r, (req, pages) in enumerate(requests):
        fill(src, pages, seed=r)
        assert backup(writer, req.hashes, host_indices(pages)) == len(pages)

    reader = attach(dst, settings(server))
    for r, (req, pages) in enumerate(requests):
        assert query(reader, req) == len(pages)
        target = [p + 40 + 10 * r for p in range(len(pages))]
        assert load(reader, req.hashes, host_indices(target)) == len(pages)
        for s, t in zip(pages, target):
            assert same(dst, t, src, s), (kind, layout, r, s)
    touched = {p + 40 + 10 * r for r, (_, pages) in enumerate(requests) for p in range(len(pages))}
    for p in range(dst.page_num):
        if p not in touched:
            assert is_blank(dst, p), f"page {p} written though never loaded"
    stats = reader.storage_backend.memkv_stats()
    assert stats["layout"] == layout and stats["zero_copy"] and stats["errors"] == 0
    assert stats["parts"] == PARTS.get((kind, layout), ["k", "v"] if kind == "mha" else ["kv"])
    ptrs, sizes = dst.get_page_buffer_meta(host_indices([0]))
    assert stats["page_bytes"] == sum(sizes) == page(dst, 0).numel()
    detach(writer, reader)


@pytest.mark.parametrize("layout", ["page_first", "page_first_direct"])
def test_k_and_v_of_different_widths(server, layout):
    """An MHA model whose V heads are narrower than its K heads (SGLang picks
    its AsymmetricMHATokenToKVPoolHost, as for MiMo-V2): a page's K and V
    parts differ in size; stored by the controller's backup, found by its
    hit query and loaded into a fresh pool, K and V byte for byte. (That pool
    has no flat pages: it is compared through its k_buffer and v_buffer.)"""
    src, dst = (host_pool("mha", layout, pages=12, head_dim=8, v_head_dim=4) for _ in range(2))
    assert type(src).__name__ == "AsymmetricMHATokenToKVPoolHost"
    gen = torch.Generator().manual_seed(22)

    def tokens(pool, pages):
        """The pool's K and V rows of the pages' tokens, page by page."""
        if layout == "page_first_direct":  # [page, layer, token, head, dim]
            return [(pool.k_buffer[p], pool.v_buffer[p]) for p in pages]
        return [(pool.k_buffer[p * PAGE:(p + 1) * PAGE], pool.v_buffer[p * PAGE:(p + 1) * PAGE]) for p in pages]
    for k, v in tokens(src, range(4)):
        k.copy_(torch.randn(k.shape, generator=gen).to(k.dtype))
        v.copy_(torch.randn(v.shape, generator=gen).to(v.dtype))
    writer = attach(src, settings(server))
    req = request(4)
    assert backup(writer, req.hashes, host_indices(range(4))) == 4
    reader = attach(dst, settings(server))
    assert query(reader, req) == 4
    assert load(reader, req.hashes, host_indices(range(6, 10))) == 4
    for (k0, v0), (k1, v1) in zip(tokens(src, range(4)), tokens(dst, range(6, 10))):
        assert torch.equal(k0.view(torch.int16), k1.view(torch.int16))
        assert torch.equal(v0.view(torch.int16), v1.view(torch.int16))
    _, sizes = src.get_page_buffer_meta(host_indices([0]))
    assert sizes[0] == 2 * sizes[1]
    stats = reader.storage_backend.memkv_stats()
    assert stats["parts"] == ["k", "v"] and stats["page_bytes"] == sum(sizes)
    detach(writer, reader)


def test_pages_land_in_the_host_pool_without_copies(server):
    """batch_get_v1 writes straight into SGLang's host pool: the traced Python
    allocations of a 384 KiB load stay far below its size."""
    src = host_pool("mha", "page_first", pages=64, head_dim=32)   # 3 KiB per K or V part
    dst = host_pool("mha", "page_first", pages=64, head_dim=32)
    fill(src, range(32), seed=2)
    storage = attach(src, settings(server)).storage_backend
    hashes = request(32).hashes
    assert storage.batch_set_v1(hashes, host_indices(range(32)), HiCacheStorageExtraInfo()) == [True] * 32
    reader = attach(dst, settings(server)).storage_backend
    indices = host_indices(range(32, 64))
    reader.batch_get_v1(hashes[:1], indices[:PAGE])  # connect outside the traced call
    loaded = 32 * page(src, 0).numel()
    assert loaded == 384 * 1024
    tracemalloc.start()
    try:
        assert reader.batch_get_v1(hashes, indices, HiCacheStorageExtraInfo()) == [True] * 32
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < loaded // 3, f"{peak} bytes allocated in Python to load {loaded}"
    assert all(same(dst, 32 + p, src, p) for p in range(32))
    storage.close()
    reader.close()


def test_a_missing_middle_page_stops_the_prefix(server):
    """Pages 0..5 stored, then page 2's V part (and later page 1's K part)
    removed: the prefix is 2 (then 1), for batch_exists, for the
    controller's hit query and its prefetch transfer, which stop at the
    first miss."""
    pool = host_pool()
    fill(pool, range(6), seed=3)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    req = request(6)
    hashes = req.hashes
    assert backup(ctl, hashes, host_indices(range(6))) == 6
    assert storage.batch_exists(hashes) == 6

    keys = storage.memkv_keys(hashes[2])
    assert [k.rsplit(b"/", 1)[1] for k in keys] == [b"k", b"v"]
    with server.client(identity=storage.identity) as plain:  # the backend's identity: its keys
        assert plain.delete(keys[1])
        assert storage.batch_exists(hashes) == 2
        assert not storage.exists(hashes[2]) and storage.exists(hashes[3])
        fresh = host_pool()
        reader = attach(fresh, settings(server))
        got = reader.storage_backend.batch_get_v1(hashes, host_indices(range(6)), HiCacheStorageExtraInfo())
        assert got == [True, True, False, True, True, True]
        assert same(fresh, 3, pool, 3)
        blank(fresh)
        assert query(reader, req) == 2
        assert load(reader, hashes, host_indices(range(6))) == 2
        assert same(fresh, 0, pool, 0) and same(fresh, 1, pool, 1)
        detach(reader)
        assert plain.delete(storage.memkv_keys(hashes[1])[0])
        assert storage.batch_exists(hashes) == 1
    assert storage.batch_exists(hashes[3:]) == 3
    assert storage.batch_exists([]) == 0 and storage.batch_get_v1([], host_indices([])) == []
    detach(ctl)


def test_one_round_trip_per_call(server):
    """The controller's backup, hit query and prefetch of a 100-page request
    (one batch of STORAGE_BATCH_SIZE): one MemKV batch_put_ptr, one
    match_prefix (200 keys) and one batch_get_into_ptr (and the prefetch's
    report_restores, which the client sends with others later)."""
    assert STORAGE_BATCH_SIZE >= 100
    pool = host_pool(pages=128)
    fill(pool, range(100), seed=4)
    ctl = attach(pool, settings(server))
    spy = CountingClient(ctl.storage_backend._io.client)
    ctl.storage_backend._io.client = spy
    req = request(100)
    assert backup(ctl, req.hashes, host_indices(range(100))) == 100
    assert query(ctl, req) == 100
    assert load(ctl, req.hashes, host_indices(range(100))) == 100
    # The prefetch's pages are reported to the client (counted there, sent
    # to the server at most once a second): no round trip of its own.
    reported = {"report_restores": 1} if hasattr(memkv.Client, "report_restores") else {}
    assert spy.calls == {"batch_put_ptr": 1, "match_prefix": 1, "batch_get_into_ptr": 1, **reported}
    detach(ctl)


def test_stores_name_the_previous_page_and_carry_the_page_hashes(server):
    """Each part of a page names the same part of the page before it as its
    parent (a batch's first page: the last of the prefix keys SGLang's
    controller passes in HiCacheStorageExtraInfo, which it extends batch by
    batch), and every part carries the page hash and its parent's."""
    pool = host_pool(pages=STORAGE_BATCH_SIZE + 8)
    fill(pool, range(STORAGE_BATCH_SIZE + 2), seed=5)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    spy = CountingClient(storage._io.client)
    storage._io.client = spy
    prior, *hashes = request(4).hashes
    assert backup(ctl, hashes, host_indices(range(3)), prefix_keys=[prior]) == 3
    (keys, _, _), kwargs = spy.last["batch_put_ptr"]
    options = kwargs["options"]
    assert len(options) == len(keys) == 6
    chain = [prior] + hashes
    for i, key in enumerate(keys):
        p, part = divmod(i, 2)
        assert key == storage.memkv_keys(hashes[p])[part]
        assert options[i].parent_key == storage.memkv_keys(chain[p])[part]
        assert options[i].block_hash == bytes.fromhex(hashes[p])
        assert options[i].parent_hash == bytes.fromhex(chain[p])
    # Without prefix keys the batch's first page heads its chain.
    more = request(2).hashes
    assert backup(ctl, more, host_indices(range(2))) == 2
    first, second = spy.last["batch_put_ptr"][1]["options"][0], spy.last["batch_put_ptr"][1]["options"][2]
    assert first.parent_key is None and first.parent_hash is None
    assert second.parent_key == storage.memkv_keys(more[0])[0]
    assert storage.batch_exists(hashes) == 3
    # Two batches: the controller passes the first batch's pages as the
    # second's prefix keys, so the chain goes on across the batch boundary.
    long = request(STORAGE_BATCH_SIZE + 2).hashes
    assert backup(ctl, long, host_indices(range(len(long))), prefix_keys=[]) == len(long)
    assert spy.calls["batch_put_ptr"] == 4
    head = spy.last["batch_put_ptr"][1]["options"][0]
    assert head.parent_key == storage.memkv_keys(long[STORAGE_BATCH_SIZE - 1])[0]
    assert head.parent_hash == bytes.fromhex(long[STORAGE_BATCH_SIZE - 1])
    detach(ctl)


def test_wrongly_sized_values_are_misses(server):
    """A part replaced by a shorter or a longer value: that page misses (and
    stops the controller's prefetch); the pages before it load."""
    pool = host_pool()
    fill(pool, range(4), seed=6)
    ctl = attach(pool, settings(server))
    hashes = request(4).hashes
    assert backup(ctl, hashes, host_indices(range(4))) == 4
    storage = ctl.storage_backend
    size = storage.memkv_stats()["page_bytes"] // 2
    with server.client(identity=storage.identity) as plain:
        plain.put(storage.memkv_keys(hashes[1])[0], b"s" * (size - 8))
        plain.put(storage.memkv_keys(hashes[3])[1], b"l" * (size + 8))
    fresh = host_pool()
    reader = attach(fresh, settings(server))
    got = reader.storage_backend.batch_get_v1(hashes, host_indices(range(4)), HiCacheStorageExtraInfo())
    assert got == [True, False, True, False]
    assert same(fresh, 2, pool, 2)
    blank(fresh)
    assert load(reader, hashes, host_indices(range(4))) == 1
    assert same(fresh, 0, pool, 0)
    detach(ctl, reader)


def test_two_models_or_tp_layouts_never_share_pages(server):
    """What one configuration stored is invisible to another model, another
    TP rank or size, another PP size, another layout, another KV dtype and
    another namespace; the same configuration in a new instance sees it all.
    Keys name the model, tp/pp ranks, layout and page bytes (and the cp rank
    with attention context parallelism)."""
    pool = host_pool()
    fill(pool, range(4), seed=7)
    hashes = request(4).hashes
    a = attach(pool, settings(server), model="org/model-a", tp_rank=0, tp_size=2)
    assert backup(a, hashes, host_indices(range(4))) == 4

    others = [
        attach(host_pool(), settings(server), model="org/model-b", tp_rank=0, tp_size=2),
        attach(host_pool(), settings(server), model="org/model-a", tp_rank=0, tp_size=4),
        attach(host_pool(), settings(server), model="org/model-a", tp_rank=1, tp_size=2),
        attach(host_pool(), settings(server), model="org/model-a", tp_rank=0, tp_size=2, pp_rank=0, pp_size=2),
        attach(host_pool(layout="layer_first"), settings(server), model="org/model-a", tp_rank=0, tp_size=2),
        attach(host_pool(dtype=torch.float32), settings(server), model="org/model-a", tp_rank=0, tp_size=2),
        attach(host_pool(), settings(server, namespace="team-b"), model="org/model-a", tp_rank=0, tp_size=2),
    ]
    for other in others:
        storage = other.storage_backend
        assert storage.batch_exists(hashes) == 0, storage.memkv_keys(hashes[0])
        assert load(other, hashes, host_indices(range(4))) == 0
        assert not any(page(other.mem_pool_host, p).any() for p in range(4))
        detach(other)
    again = attach(host_pool(), settings(server), model="org/model-a", tp_rank=0, tp_size=2)
    assert again.storage_backend.batch_exists(hashes) == 4

    storage = a.storage_backend
    page_bytes = storage.memkv_stats()["page_bytes"]
    assert storage.namespace == "sglang/org-model-a"
    assert storage.memkv_keys(hashes[0]) == [
        namespaced("sglang/org-model-a", hashes[0], "org-model-a", "tp0of2", "pp0of1", "page_first",
                   f"{page_bytes}B", part) for part in ("k", "v")]
    cp = attach(host_pool(), settings(server, namespace="shared"), cp_rank=1, cp_size=2)
    key = cp.storage_backend.memkv_keys(hashes[0])[0]
    assert key.split(b"/")[:5] == [b"shared", hashes[0].encode(), b"org-model-a", b"tp0of1", b"pp0of1"]
    assert b"/cp1of2/" in key
    detach(a, again, cp)


def test_mla_only_tp_rank_0_writes(server):
    """MLA (SGLang's MLATokenToKVPoolHost): the storage config makes TP rank 0
    the only writer (is_storage_writer), so the controller skips backups on
    rank 1 (backup_skip); the backend's own rank-1 stores return True and
    write nothing. Rank 0's pages are read by every rank (same keys, no tp
    part)."""
    pool0, pool1 = host_pool("mla"), host_pool("mla")
    hashes = request(5).hashes
    fill(pool1, range(5), seed=8)
    rank1 = attach(pool1, settings(server), tp_rank=1, tp_size=2)
    rank0 = attach(pool0, settings(server), tp_rank=0, tp_size=2)
    assert rank1.backup_skip and not rank0.backup_skip
    assert rank1.storage_backend.memkv_stats()["writer"] is False
    assert rank0.storage_backend.memkv_stats()["writer"] is True
    assert rank0.storage_backend.memkv_keys(hashes[0]) == rank1.storage_backend.memkv_keys(hashes[0])
    assert b"/tp" not in rank0.storage_backend.memkv_keys(hashes[0])[0]

    assert rank1.storage_backend.batch_set_v1(hashes, host_indices(range(5)), HiCacheStorageExtraInfo()) == [True] * 5
    assert rank1.storage_backend.batch_set(hashes[:1], [pool1.get_data_page(0)]) is True
    with server.client(identity=rank0.storage_backend.identity) as plain:
        keys = [k for h in hashes for k in rank0.storage_backend.memkv_keys(h)]
        assert plain.batch_exists(keys).statuses == [1] * 5
    assert rank0.storage_backend.batch_exists(hashes) == 0
    assert rank1.storage_backend.batch_exists(hashes) == 0

    fill(pool0, range(5), seed=9)
    assert backup(rank0, hashes, host_indices(range(5))) == 5
    assert rank1.storage_backend.batch_exists(hashes) == 5
    assert load(rank1, hashes, host_indices(range(10, 15))) == 5
    for i in range(5):
        assert same(pool1, 10 + i, pool0, i)
    detach(rank0, rank1)


def test_flat_pages_without_interface_v1(server):
    """Without "interface_v1" SGLang's controller moves flat pages: its
    _generic_page_set hands batch_set the pool's get_data_page tensors, its
    _generic_page_get hands batch_get get_dummy_flat_data_page tensors and
    copies them in with set_from_flat_data_page. Stored under their own key
    (…/page), read into the given tensors; get/set/exists work one page at a
    time; batch_set is True only when every page was stored."""
    pool, fresh = host_pool(pages=8), host_pool(pages=8)
    fill(pool, range(4), seed=14)
    ctl = attach(pool, settings(server, interface_v1=None))
    storage = ctl.storage_backend
    assert not storage.zero_copy and ctl.page_set_func == ctl._generic_page_set
    req = request(4)
    hashes = req.hashes
    assert backup(ctl, hashes[:3], host_indices(range(3))) == 3
    assert storage.set(hashes[3], pool.get_data_page(3 * PAGE)) is True
    assert storage.batch_exists(hashes) == 4 and storage.exists(hashes[2])
    assert storage.memkv_flat_key(hashes[0]).endswith(b"/page")

    reader = attach(fresh, settings(server, interface_v1=None))
    assert query(reader, req) == 4
    assert load(reader, hashes, host_indices(range(4, 8))) == 4
    assert all(same(fresh, 4 + p, pool, p) for p in range(4))

    targets = [pool.get_dummy_flat_data_page() for _ in hashes]
    got = storage.batch_get(hashes, targets)
    assert all(g is t for g, t in zip(got, targets))
    assert all(torch.equal(t, pool.get_data_page(p * PAGE)) for p, t in enumerate(targets))
    assert bytes(storage.get(hashes[1])) == bytes(page(pool, 1).numpy())
    raw = pool.get_dummy_flat_data_page()
    assert storage.get(hashes[2], raw.data_ptr(), raw.numel() * raw.element_size()) == raw.data_ptr()
    assert torch.equal(raw, pool.get_data_page(2 * PAGE))
    assert storage.get(request(1).hashes[0], pool.get_dummy_flat_data_page()) is None

    with server.client(identity=storage.identity) as plain:
        plain.delete(storage.memkv_flat_key(hashes[1]))
    assert storage.batch_exists(hashes) == 1
    assert storage.batch_get(hashes[:2], [pool.get_dummy_flat_data_page() for _ in range(2)])[1] is None
    not_contiguous = pool.get_data_page(0, flat=False)
    assert not not_contiguous.is_contiguous()
    assert storage.batch_set(hashes[:1], [not_contiguous]) is False  # refused, not raised
    assert storage.batch_set(request(2).hashes, [pool.get_data_page(0), pool.get_data_page(PAGE)]) is True
    detach(ctl, reader)


def test_metrics_clear_and_close(server):
    """get_stats() gives SGLang's own StorageMetrics (pages per backup and
    prefetch batch, their GiB/s), emptied by each call; clear() deletes the
    namespace's keys and no other namespace's; after close() every call
    misses or fails to store."""
    pool = host_pool(pages=8)
    fill(pool, range(4), seed=15)
    ctl = attach(pool, settings(server), metrics=True)
    storage = ctl.storage_backend
    hashes = request(4).hashes
    assert backup(ctl, hashes, host_indices(range(4))) == 4
    assert load(ctl, hashes, host_indices(range(4, 8))) == 4
    stats = storage.get_stats()
    assert type(stats) is StorageMetrics
    assert stats.backup_pgs == [4] and stats.prefetch_pgs == [4]
    assert len(stats.backup_bandwidth) == 1 and stats.backup_bandwidth[0] > 0
    assert storage.get_stats() == StorageMetrics()
    counters = storage.memkv_stats()
    assert counters["put_ok"] == 8 and counters["get_hits"] == 8 and counters["client"]["transport"] == "tcp"

    other = attach(pool, settings(server, namespace=storage.namespace + "-other"))
    assert backup(other, hashes, host_indices(range(4))) == 4
    storage.clear()
    assert storage.batch_exists(hashes) == 0, "clear() deletes every key under the namespace"
    assert other.storage_backend.batch_exists(hashes) == 4, "a namespace that merely starts the same way is left alone"
    assert backup(ctl, hashes, host_indices(range(4))) == 4
    detach(other, ctl)
    storage.close()
    info = HiCacheStorageExtraInfo()
    assert storage.batch_exists(hashes, info) == 0
    assert storage.batch_get_v1(hashes, host_indices(range(4)), info) == [False] * 4
    assert storage.batch_set_v1(hashes, host_indices(range(4)), info) == [False] * 4
    assert storage.get(hashes[0], pool.get_dummy_flat_data_page()) is None and storage.set(hashes[0], b"x") is False


def test_threads_share_one_backend(server):
    """SGLang's prefetch and backup threads call one backend at once: four
    threads back up, query and load their own requests through the same
    backends, three times over."""
    pool, target = host_pool(pages=64), host_pool(pages=64)
    fill(pool, range(64), seed=16)
    writer = attach(pool, settings(server))
    reader = attach(target, settings(server))
    requests = [request(16) for _ in range(4)]
    failures: List[Any] = []

    def work(t):
        try:
            pages = range(t * 16, (t + 1) * 16)
            for _ in range(3):
                assert backup(writer, requests[t].hashes, host_indices(pages)) == 16
                assert query(reader, requests[t]) == 16
                blank(target, pages)
                assert load(reader, requests[t].hashes, host_indices(pages)) == 16
                assert all(same(target, p, pool, p) for p in pages)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    detach(writer, reader)


# --------------------------------------------------------------------------- tenants: extra key and cache salt

def test_salted_page_hashes_keep_tenants_apart(server):
    """SGLang seeds a request's storage hash chain with its namespace
    (get_storage_hash_str: storage_namespace_seed over the RadixKey's
    extra_key and cache_salt) and leaves a request without one on the
    token-only chain (get_hash_str). Two tenants' identical prompts get
    different page hashes; the backend keeps each hash whole in its keys,
    so what one tenant stored is a miss for the controller's hit query and
    for loads of another tenant, of an unsalted request and of the same
    string as an extra key (LoRA), while a request with the same salt, in
    another SGLang instance, finds and loads it all."""
    pool = host_pool()
    fill(pool, range(6), seed=17)
    tokens = [7000 + t for t in range(6 * PAGE)]
    a = request(6, cache_salt="tenant-a", token_ids=tokens)
    b = request(6, cache_salt="tenant-b", token_ids=tokens)
    plain = request(6, token_ids=tokens)
    lora = request(6, extra_key="tenant-a", token_ids=tokens)
    assert plain.hashes == list(get_hash_str(tokens, None, page_size=PAGE))
    assert len({a.hashes[0], b.hashes[0], plain.hashes[0], lora.hashes[0]}) == 4 and not set(a.hashes) & set(b.hashes)
    writer = attach(pool, settings(server))
    assert backup(writer, a.hashes, host_indices(range(6))) == 6
    assert all(a.hashes[0].encode() in k for k in writer.storage_backend.memkv_keys(a.hashes[0]))

    fresh = host_pool()
    reader = attach(fresh, settings(server))
    for other in (b, plain, lora):
        assert query(reader, other) == 0
        assert reader.storage_backend.batch_get_v1(other.hashes, host_indices(range(6)),
                                                   HiCacheStorageExtraInfo()) == [False] * 6
    assert not any(page(fresh, p).any() for p in range(fresh.page_num)), "a miss wrote into the host pool"
    again = Request(RadixKey(list(tokens), cache_salt="tenant-a"), a.hashes)
    assert query(reader, again) == 6
    assert load(reader, again.hashes, host_indices(range(6))) == 6
    assert all(same(fresh, p, pool, p) for p in range(6))
    detach(writer, reader)


def test_request_namespace_in_extra_info_is_part_of_every_key(server):
    """The request namespace in a call's HiCacheStorageExtraInfo: an extra
    key or cache salt in its extra_info dict (or set as an attribute of it)
    puts a digest of them in every key, so tenants with the same page hashes
    never share a page, a tenant shares with itself, and a call without a
    namespace keeps the plain layout.

    SGLang's controller itself passes HiCacheStorageExtraInfo(prefix_keys=...)
    and nothing more (its namespace is in the hash chain: the test above), so
    its calls keep the plain layout; this covers a caller that hands the
    namespace over in the extra info, with SGLang's own class."""
    pool = host_pool()
    fill(pool, range(4), seed=18)
    hashes = request(4).hashes
    tenant_a = HiCacheStorageExtraInfo(extra_info={"cache_salt": "tenant-a"})
    tenant_b = HiCacheStorageExtraInfo(extra_info={"cache_salt": "tenant-b"})
    writer = attach(pool, settings(server))
    storage = writer.storage_backend
    assert storage.batch_set_v1(hashes, host_indices(range(4)), tenant_a) == [True] * 4

    fresh = host_pool()
    reader = attach(fresh, settings(server)).storage_backend
    unsalted = HiCacheStorageExtraInfo()
    as_extra_key = HiCacheStorageExtraInfo(extra_info={"extra_key": "tenant-a"})
    for other in (tenant_b, unsalted, None, as_extra_key):
        assert reader.batch_exists(hashes, other) == 0, other
        assert reader.batch_get_v1(hashes, host_indices(range(4)), other) == [False] * 4
    assert not any(page(fresh, p).any() for p in range(4))
    same_salt = HiCacheStorageExtraInfo(prefix_keys=None, extra_info={"cache_salt": "tenant-a", "other": 1})
    assert reader.batch_exists(hashes, same_salt) == 4
    assert reader.batch_get_v1(hashes, host_indices(range(4)), same_salt) == [True] * 4
    assert all(same(fresh, p, pool, p) for p in range(4))

    # A namespace set as an attribute of the extra info is the same namespace.
    with_attribute = HiCacheStorageExtraInfo()
    with_attribute.cache_salt = "tenant-a"
    assert storage.memkv_keys(hashes[0], with_attribute) == storage.memkv_keys(hashes[0], tenant_a)
    # The controller's extra info (prefix keys only) carries no namespace.
    controllers = HiCacheStorageExtraInfo(prefix_keys=hashes[:1])
    assert storage.memkv_keys(hashes[1], controllers) == storage.memkv_keys(hashes[1])

    # The layout: one part after the namespace for a call that has one; none
    # (the layout of every earlier release) for one that has not.
    salted, plain = storage.memkv_keys(hashes[0], tenant_a)[0], storage.memkv_keys(hashes[0])[0]
    assert storage.memkv_keys(hashes[0], unsalted) == storage.memkv_keys(hashes[0])
    assert plain.split(b"/")[:3] == [b"sglang", b"org-model-a", hashes[0].encode()]
    part = salted.split(b"/")[2]
    assert part.startswith(b"ns-") and len(part) == 3 + 32
    assert salted == plain.replace(hashes[0].encode(), part + b"/" + hashes[0].encode(), 1)

    # A store names its parent in the same namespace, and carries SGLang's page hashes.
    spy = CountingClient(storage._io.client)
    storage._io.client = spy
    more = request(3).hashes
    info = HiCacheStorageExtraInfo(prefix_keys=[more[0]], extra_info={"cache_salt": "tenant-a"})
    assert all(storage.batch_set_v1(more[1:], host_indices(range(2)), info))
    (keys, _, _), kwargs = spy.last["batch_put_ptr"]
    options = kwargs["options"]
    assert keys[0] == storage.memkv_keys(more[1], info)[0]
    assert options[0].parent_key == storage.memkv_keys(more[0], info)[0]
    assert options[2].parent_key == storage.memkv_keys(more[1], info)[0]
    assert options[0].block_hash == bytes.fromhex(more[1]) and options[0].parent_hash == bytes.fromhex(more[0])
    storage.close()
    reader.close()


# --------------------------------------------------------------------------- cache identity, restores

needs_identity = pytest.mark.skipif(not hasattr(memkv, "CacheIdentity"), reason="this memkv has no CacheIdentity")


@needs_identity
def test_identity_from_sglangs_config_keeps_dtype_and_tp_rank_apart(server):
    """The backend's cache identity comes from SGLang's storage config
    (model, TP rank and size) and host pool (KV dtype, page size, layout),
    with SGLang's version; two ranks or two dtypes sharing one server and
    one namespace never see each other's pages, and the server keeps them
    apart by identity: a client of another identity does not find the very
    key a backend stored. An MLA model's ranks share TP rank 0's identity
    (every rank reads what rank 0 writes)."""
    import sglang
    pool = host_pool()
    fill(pool, range(4), seed=11)
    hashes = request(4).hashes
    a = attach(pool, settings(server, namespace="ident"), model="org/model-id", tp_rank=0, tp_size=2)
    ident = a.storage_backend.identity
    assert (ident.kv_dtype, ident.block_tokens, ident.tp_rank, ident.tp_size) == ("bfloat16", PAGE, 0, 2)
    assert ident.model.startswith("org/model-id") and ident.layout.startswith("page_first/mha/pp0of1/")
    assert ident.engine == "sglang" and ident.engine_version == sglang.__version__
    assert backup(a, hashes, host_indices(range(4))) == 4
    rank1 = attach(host_pool(), settings(server, namespace="ident"), model="org/model-id", tp_rank=1, tp_size=2)
    fp32 = attach(host_pool(dtype=torch.float32), settings(server, namespace="ident"), model="org/model-id",
                  tp_rank=0, tp_size=2)
    assert fp32.storage_backend.identity.kv_dtype == "float32" and rank1.storage_backend.identity.tp_rank == 1
    assert len({ident.tag, rank1.storage_backend.identity.tag, fp32.storage_backend.identity.tag}) == 3
    for other in (rank1, fp32):
        assert other.storage_backend.batch_exists(hashes) == 0
        assert load(other, hashes, host_indices(range(4))) == 0

    key = a.storage_backend.memkv_keys(hashes[0])[0]
    common = {"servers": [server.address], "auth_key": server.auth_key, "transport": "tcp"}
    with memkv.Client(**common, identity=ident) as mine, \
            memkv.Client(**common, identity=rank1.storage_backend.identity) as other:
        assert mine.exists(key) and not other.exists(key)

    mla = [attach(host_pool("mla"), settings(server), model="org/model-id", tp_rank=r, tp_size=2) for r in (0, 1)]
    assert mla[0].storage_backend.identity == mla[1].storage_backend.identity
    detach(a, rank1, fp32, *mla)


@needs_identity
def test_identity_settings_replace_and_extend_what_sglang_says(server):
    """identity_* settings in the extra config replace a field each and
    identity_extras adds to the extras."""
    ctl = attach(host_pool(), settings(server, identity_revision="r1", identity_extras="team=x,zone=b"))
    ident = ctl.storage_backend.identity
    assert ident.revision == "r1" and ident.extras == {"team": "x", "zone": "b"} and ident.block_tokens == PAGE
    detach(ctl)


def test_prefetches_report_restores_in_time_and_late(server):
    """A prefetch's leading run of pages is reported in time; a page loaded
    after a missing one is late (SGLang recomputes from the first miss)."""
    pool = host_pool()
    fill(pool, range(4), seed=12)
    hashes = request(4).hashes
    writer = attach(pool, settings(server, namespace="restores"))
    assert backup(writer, hashes, host_indices(range(4))) == 4
    reader = attach(host_pool(), settings(server, namespace="restores"))
    assert load(reader, hashes, host_indices(range(4))) == 4
    stats = reader.storage_backend.memkv_stats()
    assert (stats["restored_in_time"], stats["restored_late"]) == (4, 0)
    gap = [hashes[0], request(1).hashes[0], hashes[2], hashes[3]]
    assert reader.storage_backend.batch_get_v1(gap, host_indices(range(4, 8))) == [True, False, True, True]
    stats = reader.storage_backend.memkv_stats()
    assert (stats["restored_in_time"], stats["restored_late"]) == (5, 2)
    if "fetched_in_time" in stats["client"]:  # what the client sends the server
        assert (stats["client"]["fetched_in_time"], stats["client"]["fetched_late"]) == (5, 2)
    detach(writer, reader)
