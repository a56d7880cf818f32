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


class Run:
    def __init__(self, name, argv, quick=None, plot=None):
        self.name = name
        self.argv = argv
        self.quick = QUICK if quick is None else quick
        self.plot = plot  # a path under {out} the program itself draws (--plot)

    @property
    def json(self):
        return self.name + ".json"

    def command(self, build, out, quick):
        args = [a.format(build=build, out=out) for a in self.argv]
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
    for sync, fsync in (("interval", "everysec"), ("always", "always")):
        common = ["--storage", "file", "--sync", sync, "--pool", "1GiB", "--drive-size", "4GiB", "--peer", "redis",
                  "--redis-appendfsync", fsync, "--repeat", "3", "--seconds", "1", "--no-auth-cost"]
        runs.append(Run(sync, _bench(*common, "--sizes", "4KiB,64KiB,2MiB", "--conns", "1,4,16",
                                     "--json", "{out}/%s.json" % sync)))
        runs.append(Run(sync + "-batch", _bench(*common, "--sizes", "4KiB,64KiB", "--conns", "4,16", "--batch", "16",
                                                "--json", "{out}/%s-batch.json" % sync)))
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
    "D1": Entry(
        "the drive tier against fio",
        [Run("d1", ["{build}/memkv-drive-bench", "--dir", "{out}/db", "--file-size", "2GiB", "--seconds", "1",
                    "--repeat", "3", "--json", "{out}/d1.json"])],
        {
            ("drive tier", "put, 64 KiB to 16 MiB x queue depth 1/4/16 (15 cells)"):
                c.drive_row("d1", "put", "ratio_fdatasync",
                            "fio write `--fdatasync=1` (durable), same block size and depth", "every"),
            ("drive tier", "put, the same 15 cells"):
                c.drive_row("d1", "put", "ratio", "fio write without fdatasync (not durable)", None,
                            count_at=(">=", 0.9)),
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
            ("file mode", "put, `sync: always`, 2 MiB, 16 connections"):
                c.file_put("always", 2 * MIB, (16,), (), "Redis `always`"),
            ("file mode", "get (values in the pool), 4 KiB to 2 MiB, 1/4/16 connections and batches"):
                c.file_get("interval"),
        },
        [file_mode_plot]),
    "S2": Entry(
        "the LD_PRELOAD shim against the C client (its 16 MiB rows; the MLPerf calls are printed, not parsed)",
        [Run("s2", [os.path.join(BENCH, "preload_bench.sh"), "{build}", "9", "8", "{out}/s2.json"], quick={})],
        {
            ("LD_PRELOAD shim", "write of 16 MiB files"): c.preload_row("s2", "write", "memkv_put"),
            ("LD_PRELOAD shim", "read of 16 MiB files"): c.preload_row("s2", "read", "memkv_get"),
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
}

# The IDs of the docs' list that run-all does not rerun, and why; their rows
# stay as they are.
NOT_RERUN = {
    "T4": "its rows are the history runs at ad44e51 and its auth-cost JSON is not parsed yet",
    "T5": "its 16 MiB row is the history run at ad44e51 (not in the newest sweep); not parsed yet",
    "D2": "memkv-drive-restart-bench writes no JSON; its printed figures are not parsed yet",
    "D3": "memkv-drive-crypt-bench writes no JSON; its figures are compared on a quiet machine",
    "R1": "needs the two Soft-RoCE QEMU guests of tests/rdma/README.md",
    "L1": "bench/large_value_bench.sh prints its figures; not parsed yet",
    "A1": "needs the engine venvs (scripts/engine-venv.sh), which download the engines",
    "N1": "the NIXL check needs NIXL under /opt/nixl",
    "U1": "the tenant bench needs an older server binary (--baseline)",
    "M1": "bench/match_prefix_bench.sh prints its figures; not parsed yet",
    "P1": "needs the Python package built (build/python); its output is not parsed yet",
    "N2": "memkv-nixl-engine-bench prints its figures; not parsed yet",
    "E1": "the eviction bench prints its figures; not parsed",
    "E2": "the TTFT run needs a model and the llama_cpp venv",
    "F1": "its --fill JSON is not parsed yet",
    "F2": "its --fresh JSON is not parsed yet",
    "Q1": "its JSON is not parsed yet, and its recorded figures are from a 16-core machine",
}
