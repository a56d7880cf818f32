"""Which command ID of docs/benchmarks.md bench/run-all reruns, how, and
which summary-table rows each one's JSON feeds.

A run is argv with {build} (the build directory) and {out} (the output
directory) filled in; quick replaces the values of the flags it names
(--quick). The commands are the docs' list, each given a --json path under
{out} where the docs' command has none or a path under /tmp."""

import os

from . import cells as c
from .cells import KIB, MIB
from .plots import drive_plot, file_mode_plot

QUICK = {"--seconds": "0.2", "--repeat": "1"}
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the scripts beside run-all
RDMA = os.path.join(os.path.dirname(BENCH), "tests", "rdma")  # the Soft-RoCE test-bed's scripts


class Run:
    """venv: an engine venv (scripts/engine-venv.sh NAME, which builds it
    when this machine has none) whose python {python} in argv names;
    json_lines: the program prints its JSON, one object per line, on stdout
    (its log), rather than writing a file: the run's data is that list."""

    def __init__(self, name, argv, quick=None, plot=None, env=None, venv=None, json_lines=False):
        self.name = name
        self.argv = argv
        self.quick = QUICK if quick is None else quick
        self.plot = plot  # a path under {out} the program itself draws (--plot)
        self.env = env or {}  # variables added to the environment, {build} and {out} filled in
        self.venv = venv
        self.json_lines = json_lines

    @property
    def json(self):
        return self.name + ".json"

    def environment(self, build, out):
        return {k: v.format(build=build, out=out) for k, v in self.env.items()}

    def needs_baseline(self):
        return any("{baseline}" in a for a in self.argv)

    def command(self, build, out, quick, python=None, baseline=None):
        """argv filled in; {python} becomes `python` (the venv's, once it is
        known) or, for --dry-run, the shell words that find it; {baseline}
        the older server of run-all's --baseline."""
        if python is None and self.venv:
            python = "$(bash scripts/engine-venv.sh %s)/bin/python" % self.venv
        args = [a.format(build=build, out=out, python=python, baseline=baseline or "BASELINE")
                for a in self.argv]
        if quick:
            for i in range(len(args) - 1):
                if args[i] in self.quick:
                    args[i + 1] = self.quick[args[i]]
        return args


class Entry:
    def __init__(self, what, runs, rows, plots=None):
        self.what = what
        self.runs = runs
        self.rows = rows  # {(area, cell): row function (cells.py)}
        self.plots = plots or []  # functions (data, out) -> [(path, note)]


def _bench(*flags):
    return ["{build}/memkv-bench"] + list(flags)


SIZES_T1 = "4KiB,64KiB,256KiB,1MiB,2MiB,4MiB"
TCP = "TCP"
RAW = "raw stream"


def _s1_runs():
    runs = []
    # always-loop: `sync: always` with the workers flushing their turns
    # (storage.flush_on_loop_us), the puts up to 256 KiB it applies to.
    for name, sync, fsync, extra, sizes, conns in (
            ("interval", "interval", "everysec", (), "4KiB,64KiB,2MiB", "1,4,16"),
            ("always", "always", "always", (), "4KiB,64KiB,2MiB", "1,4,16"),
            ("always-loop", "always", "always", ("--flush-on-loop-us", "2000"), "4KiB,64KiB", "16")):
        common = ["--storage", "file", "--sync", sync, *extra, "--pool", "1GiB", "--drive-size", "4GiB",
                  "--peer", "redis", "--redis-appendfsync", fsync, "--repeat", "3", "--seconds", "1",
                  "--no-auth-cost"]
        runs.append(Run(name, _bench(*common, "--sizes", sizes, "--conns", conns, "--json", "{out}/%s.json" % name)))
        runs.append(Run(name + "-batch", _bench(*common, "--sizes", "4KiB,64KiB", "--conns", "4,16", "--batch", "16",
                                                "--json", "{out}/%s-batch.json" % name)))
    return runs


REGISTRY = {
    "T1": Entry(
        "the TCP sweep against the raw stream and Redis, with its plot",
        [Run("t1", _bench("--peer", "redis", "--sizes", SIZES_T1, "--conns", "1,4,16", "--seconds", "0.5",
                          "--repeat", "3", "--no-auth-cost", "--plot", "{out}/t1-tcp-sweep.svg",
                          "--json", "{out}/t1.json"), plot="t1-tcp-sweep.svg")],
        {
            (TCP, "2 MiB put, 1 connection"): c.one_cell("t1", "put", 2 * MIB, 1, "raw", RAW),
            (TCP, "2 MiB get, 1 connection"): c.one_cell("t1", "get", 2 * MIB, 1, "raw", RAW),
            (TCP, "2 MiB put, 4 connections"): c.one_cell("t1", "put", 2 * MIB, 4, "raw", RAW),
            (TCP, "2 MiB get, 4 connections"): c.one_cell("t1", "get", 2 * MIB, 4, "raw", RAW),
            (TCP, "2 MiB, 1 / 4 connections, against Redis"): c.against_redis_2mib("t1"),
            (TCP, "full sweep: 64 KiB to 4 MiB, 4 and 16 connections (20 cells)"):
                c.cell_by_cell("t1", (64 * KIB, 256 * KIB, MIB, 2 * MIB, 4 * MIB), (4, 16), "raw",
                               "raw stream, cell by cell"),
            (TCP, "single operations, 256 KiB to 4 MiB, 1/4/16 connections (24 cells)"):
                c.cell_by_cell("t1", (256 * KIB, MIB, 2 * MIB, 4 * MIB), (1, 4, 16), "redis", "Redis, cell by cell"),
            (TCP, "single operations, 64 KiB (6 cells)"):
                c.cell_by_cell("t1", (64 * KIB,), (1, 4, 16), "redis", "Redis, cell by cell"),
            (TCP, "single operations, 4 KiB (6 cells)"):
                c.cell_by_cell("t1", (4 * KIB,), (1, 4, 16), "redis", "Redis, cell by cell"),
            (TCP, "CPU per GiB, client + server, 2 MiB, 1 / 4 connections"): c.cpu_2mib("t1"),
        }),
    "T2": Entry(
        "batches of 16 against Redis pipelining 16",
        [Run("t2", _bench("--peer", "redis", "--batch", "16", "--sizes", "4KiB,64KiB", "--conns", "16",
                          "--seconds", "0.5", "--repeat", "3", "--no-auth-cost", "--json", "{out}/t2.json"))],
        {
            (TCP, "batches of 16, %s %s, 16 connections" % (size, op)):
                c.batch_cell("t2", op, n, 16)
            for op in ("put", "get") for size, n in (("4 KiB", 4 * KIB), ("64 KiB", 64 * KIB))
        }),
    "T3": Entry(
        "queue depth 1, 3 s per cell",
        [Run("t3", _bench("--sizes", "4KiB,2MiB", "--conns", "1", "--seconds", "3", "--repeat", "3",
                          "--no-auth-cost", "--json", "{out}/t3.json"), quick={"--seconds": "0.5", "--repeat": "1"})],
        {
            (TCP, "2 MiB put, queue depth 1, 3 s per cell"): c.one_cell("t3", "put", 2 * MIB, 1, "raw", RAW),
            (TCP, "2 MiB get, queue depth 1, 3 s per cell"): c.one_cell("t3", "get", 2 * MIB, 1, "raw", RAW),
            (TCP, "tail at queue depth 1: p99.99 / p50"): c.tail("t3"),
        }),
    "T4": Entry(
        "2 MiB with the authentication-cost cells: the CPU of a request's tags and checksums",
        [Run("t4", _bench("--sizes", "2MiB", "--conns", "1,4", "--seconds", "2", "--repeat", "5",
                          "--json", "{out}/t4.json"), quick={"--seconds": "0.5", "--repeat": "1"})],
        {
            (TCP, "authentication: 4 HMAC-SHA256 tags per 2 MiB request and response"):
                c.auth_cost_row("t4", "tags", "cpu_tags_us_per_request", "%.2f", target_pct=10),
            (TCP, "payload checksums: 2 XXH3 passes per 2 MiB request (AVX2)"):
                c.auth_cost_row("t4", "checksums", "cpu_checksums_us_per_request", "%.1f"),
        }),
    "T5": Entry(
        "16 MiB values against the raw stream",
        [Run("t5", _bench("--sizes", "16MiB", "--conns", "1,4,16", "--seconds", "0.5", "--repeat", "3",
                          "--no-auth-cost", "--json", "{out}/t5.json"))],
        {
            (TCP, "16 MiB, 1 / 4 / 16 connections"): c.sweep_16mib("t5", (4, 16)),
        }),
    "D1": Entry(
        "the drive tier against fio",
        [Run("d1", ["{build}/memkv-drive-bench", "--dir", "{out}/db", "--file-size", "2GiB", "--seconds", "1",
                    "--repeat", "3", "--each-sync", "--json", "{out}/d1.json"])],
        {
            ("drive tier", "put, 64 KiB to 16 MiB x queue depth 1/4/16 (15 cells)"):
                c.drive_row("d1", "put", "ratio_fdatasync",
                            "fio write `--fdatasync=1` (durable), same block size and depth", "every"),
            ("drive tier", "put, the same 15 cells"):
                c.drive_row("d1", "put", "ratio", "fio write without fdatasync (not durable)", None,
                            count_at=(">=", 0.9)),
            ("drive tier", "put, the same 15 cells, against puts durable when counted"):
                c.drive_row("d1", "put", "ratio_each_sync",
                            "each value written, then its own fdatasync (`--each-sync`: io_uring, the same depth, "
                            "no journal)", None, count_at=(">=", 0.9)),
            ("drive tier", "put, the same 15 cells, against a journal with a lane per put"):
                c.drive_row("d1", "put", "ratio_each_sync_record",
                            "as above, with a 4 KiB record block of its own written beside each value",
                            None, count_at=(">=", 0.9)),
            ("drive tier", "get, median over the 15 cells"):
                c.drive_row("d1", "get", "ratio", "fio read of the store's own file", "median"),
            ("drive tier", "get, every cell"):
                c.drive_row("d1", "get", "ratio", "fio read of the store's own file", "every"),
        },
        [drive_plot]),
    "S1": Entry(
        "file mode against Redis's append-only file, one run per policy",
        _s1_runs(),
        {
            ("file mode", "put, `sync: interval`, 4 KiB: 1/4/16 connections, batches of 16 at 4/16 (5 cells)"):
                c.file_put("interval", 4 * KIB, (1, 4, 16), (4, 16), "Redis AOF, `appendfsync everysec`"),
            ("file mode", "put, `sync: interval`, 64 KiB (5 cells)"):
                c.file_put("interval", 64 * KIB, (1, 4, 16), (4, 16), "Redis `everysec`"),
            ("file mode", "put, `sync: interval`, 2 MiB, 1/4/16 connections"):
                c.file_put("interval", 2 * MIB, (1, 4, 16), (), "Redis `everysec`"),
            ("file mode", "put, `sync: always`, 4 KiB, 16 connections and batches (3 cells)"):
                c.file_put("always", 4 * KIB, (16,), (4, 16), "Redis `appendfsync always`"),
            ("file mode", "put, `sync: always`, 64 KiB, 16 connections and batches (3 cells)"):
                c.file_put("always", 64 * KIB, (16,), (4, 16), "Redis `always`"),
            ("file mode", "put, `sync: always` and `storage.flush_on_loop_us: 2000`, 4 KiB, 16 connections and "
                          "batches (3 cells)"):
                c.file_put("always-loop", 4 * KIB, (16,), (4, 16), "Redis `appendfsync always`"),
            ("file mode", "put, `sync: always` and `storage.flush_on_loop_us: 2000`, 64 KiB, 16 connections and "
                          "batches (3 cells)"):
                c.file_put("always-loop", 64 * KIB, (16,), (4, 16), "Redis `always`"),
            ("file mode", "put, `sync: always`, 2 MiB, 16 connections"):
                c.file_put("always", 2 * MIB, (16,), (), "Redis `always`"),
            ("file mode", "get (values in the pool), 4 KiB to 2 MiB, 1/4/16 connections and batches"):
                c.file_get("interval"),
        },
        [file_mode_plot]),
    "S2": Entry(
        "the LD_PRELOAD shim against the C client (its 16 MiB rows), then the MLPerf KV-cache calls",
        [Run("s2", [os.path.join(BENCH, "preload_bench.sh"), "{build}", "9", "8", "{out}/s2.json"], quick={})],
        {
            ("LD_PRELOAD shim", "write of 16 MiB files"): c.preload_row("s2", "write", "memkv_put"),
            ("LD_PRELOAD shim", "read of 16 MiB files"): c.preload_row("s2", "read", "memkv_get"),
            ("LD_PRELOAD shim", "MLPerf Storage KV-cache calls, 48 `.npy` of 8 to 64 MiB, 4 threads"):
                c.mlperf_row("s2"),
        }),
    "K1": Entry(
        "the kv_store plugin against the C++ client",
        [Run("k1-8mib", ["{build}/memkv-kv-store-bench", "--hash-bytes", "32", "--repeat", "7",
                         "--json", "{out}/k1-8mib.json"], quick={"--repeat": "2"}),
         Run("k1-64kib", ["{build}/memkv-kv-store-bench", "--chunk-bytes", "65536", "--repeat", "21",
                          "--json", "{out}/k1-64kib.json"], quick={"--repeat": "3"})],
        {
            ("kv_store plugin", "96 chunks of 8 MiB: `save_cold`, `restore_again` (median ms)"):
                c.kv_store_row("k1-8mib"),
            ("kv_store plugin", "96 chunks of 64 KiB: `save_cold`, `restore_again` (median ms)"):
                c.kv_store_row("k1-64kib"),
        }),
    "F1": Entry(
        "pool bytes per value byte, beside Redis",
        [Run("f1", _bench("--fill", "--json", "{out}/f1.json"), quick={})],
        {
            ("DRAM pool", "pool bytes per value byte, %s" % name): c.fill_row("f1", size)
            for name, size in (("4 KiB", 4 * KIB), ("64 KiB", 64 * KIB), ("2 MiB + 1", 2 * MIB + 1))
        }),
    "F2": Entry(
        "a fresh server against a warmed one, with and without the prefault",
        [Run("f2", _bench("--fresh", "--json", "{out}/f2.json"), quick={"--repeat": "1"}),
         Run("f2-no-prefault", _bench("--fresh", "--no-prefault", "--json", "{out}/f2-no-prefault.json"),
             quick={"--repeat": "1"})],
        {
            ("fresh server", "put on a never-written pool, 4 KiB and 2 MiB x 1 and 16 connections, prefault on "
                             "(the default)"): c.fresh_row("f2", "the same pass on a warmed server"),
            ("fresh server", "the same with `--no-prefault` (not the default)"):
                c.fresh_row("f2-no-prefault", "a warmed server"),
        }),
    "Q1": Entry(
        "loads before stores: 64 KiB get latency under saturating puts, network.loads_first on against off",
        [Run("q1", ["{build}/memkv-loads-first-bench", "--memkv", "{build}/memkv", "--seconds", "3", "--rounds", "3",
                    "--json", "{out}/q1.json"], quick={"--seconds": "1", "--rounds": "1"}),
         Run("q1-w4", ["{build}/memkv-loads-first-bench", "--memkv", "{build}/memkv", "--seconds", "3", "--rounds",
                       "3", "--workers", "4", "--store-conns", "16", "--json", "{out}/q1-w4.json"],
             quick={"--seconds": "1", "--rounds": "1"})],
        {
            ("loads before stores", "p99 of 64 KiB gets while 8 connections put 2 x 4 MiB batches (2 workers; "
                                    "16 connections, 4 workers)"): c.loads_first_row(("q1", "q1-w4")),
        }),
    "N2": Entry(
        "the NIXL backend's engine against the C++ client, without NIXL",
        [Run("n2", ["{build}/memkv-nixl-engine-bench", "--rounds", "5", "--json", "{out}/n2.json"],
             quick={"--rounds": "1"})],
        {
            ("NIXL engine (no NIXL)", "64 x 256 KiB, write / read (Post, then Poll until done)"):
                c.nixl_engine_row("n2", 64, 256 * KIB, True),
            ("NIXL engine (no NIXL)", "8 x 256 KiB, write / read"): c.nixl_engine_row("n2", 8, 256 * KIB, False),
            ("NIXL engine (no NIXL)", "16 x 4 MiB, write / read"): c.nixl_engine_row("n2", 16, 4 * MIB, False),
        }),
    "P1": Entry(
        "the Python client against the C++ client",
        [Run("p1", ["/usr/bin/python3", os.path.join(BENCH, "python_batch_get.py"), "--build-dir", "{build}",
                    "--rounds", "7", "--json", "{out}/p1.json"],
             quick={"--rounds": "2"}, env={"PYTHONPATH": "{build}/python"})],
        {
            ("Python client", "`batch_get_into`, 64 x 64 KiB"): c.python_row("p1", 64, 64 * KIB),
            ("Python client", "`batch_get_into`, 8 x 2 MiB"): c.python_row("p1", 8, 2 * MIB),
        }),
    "D2": Entry(
        "drive bytes per value byte",
        [Run("d2-" + name, ["{build}/memkv-drive-restart-bench", "--blocks", blocks, "--value-bytes", size,
                            "--block-size", "4MiB"] + extra + ["--repeat", "1", "--json", "{out}/d2-%s.json" % name],
             quick={})
         for name, blocks, size, extra in (("4k", "20000", "4KiB", []), ("64k", "5000", "64KiB", []),
                                           ("2m", "200", "2097153", ["--threads", "8"]))],
        {
            ("drive tier", "drive bytes per value byte, 20,000 values of 4 KiB"): c.drive_bytes_row("d2-4k"),
            ("drive tier", "drive bytes per value byte, 5,000 values of 64 KiB"): c.drive_bytes_row("d2-64k"),
            ("drive tier", "drive bytes per value byte, 200 values of 2 MiB + 1"): c.drive_bytes_row("d2-2m"),
        }),
    "D3": Entry(
        "encryption at rest against plain drives, three runs",
        [Run("d3-%d" % n, ["{build}/memkv-drive-crypt-bench", "--rounds", "6", "--values", "256", "--threads", "4",
                           "--json", "{out}/d3-%d.json" % n], quick={"--rounds": "2", "--values": "32"})
         for n in (1, 2, 3)],
        {
            ("drive tier", "encrypted (`storage.encryption: aes-256-gcm`) against plain drive files, 2 MiB, 4 threads, "
                           "3 runs"): c.crypt_row(("d3-1", "d3-2", "d3-3")),
        }),
    "L1": Entry(
        "one 4 GiB value against 2,048 values of 2 MiB, memory and file mode",
        [Run("l1", ["bash", os.path.join(BENCH, "large_value_bench.sh"), "{build}", "both", "--rounds", "4",
                    "--json", "{out}/l1.json"], quick={"--rounds": "1"})],
        {
            ("large values", "memory mode, put: one 4 GiB value"): c.large_value_row("l1", "memory", "put", True),
            ("large values", "memory mode, get"): c.large_value_row("l1", "memory", "get"),
            ("large values", "file mode, put"): c.large_value_row("l1", "file", "put"),
            ("large values", "file mode, get"): c.large_value_row("l1", "file", "get"),
        }),
    "M1": Entry(
        "MatchPrefix against BatchExists over four servers, without and with a hole at 16",
        [Run("m1" + name, ["bash", os.path.join(BENCH, "match_prefix_bench.sh"), "{build}", "--calls", "3000"] + hole +
             ["--json", "{out}/m1%s.json" % name], quick={"--calls": "300"})
         for name, hole in (("", []), ("-hole", ["--hole", "16"]))],
        {
            ("client", "`MatchPrefix`, 128 keys over 4 servers, median latency (p99 noisy)"):
                c.match_prefix_row("m1", "m1-hole"),
        }),
    "U1": Entry(
        "8 tenants putting at once, this build against the --baseline server (single puts, then batches of 16)",
        [Run("u1" + name, ["{build}/memkv-tenant-bench", "--memkv", "{build}/memkv", "--baseline", "{baseline}",
                           "--rounds", "5", "--seconds", "3"] + batch + ["--json", "{out}/u1%s.json" % name],
             quick={"--rounds": "1", "--seconds": "0.5"})
         for name, batch in (("", []), ("-batch", ["--batch", "16"]))],
        {
            ("Tenants", "8 tenants putting 4 KiB at once, single puts / batches of 16 (request pipeline and quota "
                        "ledger)"): c.tenant_row(("u1", "u1-batch")),
        }),
    "R1": Entry(
        "RDMA against perftest on the two Soft-RoCE guests, 1, 16 and batches of 64 in flight",
        [Run("r1", ["bash", "-c", "bash %s/setup.sh && {{ bash %s/bench-scenarios.sh --build {build} --rdma-timeout 18 "
                                  "--results {out}/r1; cp {out}/r1/table.json {out}/r1.json; }}" % (RDMA, RDMA)], quick={})],
        {
            ("RDMA", "2 MiB put / get, one op at a time, Soft-RoCE between the two QEMU guests"):
                c.rdma_row("r1", 2 * MIB, "d1", "1 in flight"),
            ("RDMA", "64 KiB put / get, batches of 64 (every key its own pipelined RDMA op)"):
                c.rdma_row("r1", 64 * KIB, "b64", "`-t 64`"),
            ("RDMA", "64 KiB put / get, 16 threads with one op each"): c.rdma_row("r1", 64 * KIB, "d16", "`-t 16`"),
            ("RDMA", "64 KiB put / get, one op at a time"): c.rdma_row("r1", 64 * KIB, "d1", "`-t 1`"),
            ("RDMA", "2 MiB, 16 threads with one op each"): c.rdma_row("r1", 2 * MIB, "d16", "`-t 16`"),
        }),
    "A1": Entry(
        "the engine adapters, made by the engines' own released packages, against the plain Python client",
        [Run("a1-" + name, ["{python}", os.path.join(BENCH, "adapter_%s.py" % name)] + flags +
             ["--rounds", "7", "--json", "{out}/a1-%s.json" % name], quick={"--rounds": "2"},
             env={"PYTHONPATH": "{build}/python", "PYTHONHASHSEED": "0", "MEMKV_BINARY": "{build}/memkv"}, venv=name)
         for name, flags in (("sglang", ["--aa", "--shapes", "mha:64x256KiB,mla:64x256KiB,mha:32x2MiB,mha:8x256KiB"]),
                             ("vllm", ["--aa", "--shapes", "64x256KiB,32x2MiB,8x256KiB"]),
                             ("lmcache", ["--shapes", "64x262144,32x2097152,8x262144"]))],
        {
            ("engine adapters", "sglang, made by SGLang 0.5.23's StorageBackendFactory over its own host KV pools: mha "
                                "and mla 64 x 256 KiB, mha 32 x 2 MiB and 8 x 256 KiB; store and load (8 cells)"):
                c.adapter_row("a1-sglang"),
            ("engine adapters", "vllm, made by vLLM 0.32's SecondaryTierFactory, jobs of vLLM's TransferJob (client "
                                "submissions): 64 x 256 KiB, 32 x 2 MiB, 8 x 256 KiB; store and load (6 cells)"):
                c.adapter_row("a1-vllm"),
            ("engine adapters", "lmcache L2 connector inside LMCache 0.5.6's NativeConnectorL2Adapter, MemoryObjs of "
                                "its HostMemoryAllocator: 64 x 256 KiB, 32 x 2 MiB, 8 x 256 KiB; store and load "
                                "(6 cells)"): c.adapter_row("a1-lmcache"),
        }),
    "E1": Entry(
        "prefix-aware eviction against plain LRU (DRAM pool, in process)",
        [Run("e1" + name, ["{build}/memkv-prefix-eviction-bench"] + flags + ["--json={out}/e1%s.json" % name],
             quick={})
         for name, flags in (("", []), ("-b64", ["--batch=64"]), ("-e4-b64", ["--engines=4", "--batch=64"]),
                             ("-walk", ["--lookup=walk"]), ("-walk-b64", ["--lookup=walk", "--batch=64"]))],
        {
            ("prefix-aware eviction", "engine lookups (own prefix cache of 800 blocks, prefix match, Get of the rest): "
                                      "200 chains x 64 blocks, pool of 3,200 blocks, Zipf s=1, one request at a time"):
                c.eviction_row(("e1",), first_row=True),
            ("prefix-aware eviction", "engine lookups, 64 requests per batch"): c.eviction_row(("e1-b64",)),
            ("prefix-aware eviction", "engine lookups, 4 engines, 64 requests per batch"):
                c.eviction_row(("e1-e4-b64",)),
            ("prefix-aware eviction", "walk lookups (Get from the head, no engine cache), one request at a time / 64 "
                                      "per batch"): c.eviction_row(("e1-walk", "e1-walk-b64")),
        }),
    "E2": Entry(
        "time to first token on a real model (llama.cpp) against recompute and llama-cpp-python's own caches",
        [Run("e2", ["{python}", os.path.join(BENCH, "engine_ttft.py"), "--binary", "{build}/memkv", "--n-batch", "64",
                    "--runs", "5", "--tokens", "512,1024,2048,4096,8000", "--json", "--plot", "{out}/engine-ttft.svg"],
             quick={"--runs": "1", "--tokens": "512,4096"}, plot="engine-ttft.svg",
             env={"PYTHONPATH": "{build}/python"}, venv="llama_cpp", json_lines=True)],
        {
            ("engine (llama.cpp)", "TTFT with the prompt restored, SmolLM2-135M, 4,096 tokens, memory / file mode"):
                c.ttft_restored("e2", 4096),
            ("engine (llama.cpp)", "the same against llama-cpp-python's `LlamaRAMCache`"):
                c.ttft_against("e2", 4096, "llama-ram", "LlamaRAMCache"),
            ("engine (llama.cpp)", "the same against `LlamaDiskCache`"):
                c.ttft_against("e2", 4096, "llama-disk", "LlamaDiskCache"),
            ("engine (llama.cpp)", "completions token for token equal to recompute in every run of a cell, "
                                   "512 to 8,000 tokens"): c.ttft_tokens("e2"),
        }),
}

# The IDs of the docs' list that run-all does not rerun, and why; their rows
# stay as they are.
NOT_RERUN = {
    "N1": "the NIXL check needs NIXL under /opt/nixl",
}
