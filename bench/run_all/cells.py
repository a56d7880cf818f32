"""Summary-table rows from the JSON of memkv-bench and memkv-drive-bench.

Each row function takes data ({run name: parsed JSON}) and the row's target
as parse_target reads it (None when it reads none), and returns a Fresh, or
None when the JSON lacks a cell the row needs: that row is then left as it is.
Figures are formatted as the programs print them: MiB/s to one decimal,
ratios to two."""

import statistics

from .table import Fresh, meets

KIB = 1024
MIB = 1024 * 1024


def size_name(n):
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if n >= unit and n % unit == 0:
            return "%d %s" % (n // unit, name)
    return "%d B" % n


def f1(x):
    return "%.1f" % x


def f2(x):
    return "%.2f" % x


def times(x):
    """A tail multiple as the table words it: 20x, 6.2x."""
    return ("%.0fx" if x >= 10 else "%.1fx") % x


def cell(js, op, size, conns):
    """The memkv-bench cell of op, size and connection count, or None."""
    if js is None:
        return None
    for c in js.get("cells", []):
        if c.get("op") == op and c.get("size_bytes") == size and c.get("conns") == conns:
            return c
    return None


def mibs(c, who):
    side = c.get(who) if c else None
    return side.get("mib_per_s") if side else None


def ratio_of(c, who):
    """memkv / who of a cell: the JSON's own ratio (as printed, two decimals)
    when it has one, else computed from the MiB/s."""
    key = {"raw": "ratio", "redis": "ratio_redis"}[who]
    if c.get(key) is not None:
        return c[key]
    m, r = mibs(c, "memkv"), mibs(c, who)
    return round(m / r, 2) if m is not None and r else None


def needed(*values):
    return all(v is not None for v in values)


def misses_of(named, fmt=f2):
    """named: [(name, value)] -> callable(target) naming the values that
    miss; a miss that would print as meeting the target (0.897 as 0.90)
    gets a third decimal."""
    def words(target):
        out = []
        for n, v in named:
            if meets(target, v):
                continue
            text = fmt(v)
            if fmt is f2 and meets(target, float(text)):
                text = "%.3f" % v
            out.append("%s %s" % (n, text))
        return out
    return words


def count_words(values, target):
    if target is None:
        return ""
    return "; %d of %d at or above %s" % (sum(meets(target, v) for v in values), len(values),
                                          f2(target[1]))


def one_cell(run, op, size, conns, who, note):
    """A row of one cell: memkv against the raw stream or Redis."""
    def row(data, target):
        c = cell(data.get(run), op, size, conns)
        m, r, q = mibs(c, "memkv"), mibs(c, who) if c else None, ratio_of(c, who) if c else None
        if not needed(m, r, q):
            return None
        return Fresh(f1(m) + " MiB/s", "%s MiB/s (%s)" % (f1(r), note), f2(q), [q])
    return row


def pairs(js, size, conns_list, side, fmt):
    """ "put a / b, get c / d" over conns_list, or None when a cell is missing."""
    parts = []
    for op in ("put", "get"):
        values = []
        for n in conns_list:
            c = cell(js, op, size, n)
            v = side(c) if c else None
            if v is None:
                return None
            values.append(fmt(v))
        parts.append(op + " " + " / ".join(values))
    return ", ".join(parts)


def against_redis_2mib(run):
    def row(data, target):
        js = data.get(run)
        memkv = pairs(js, 2 * MIB, (1, 4), lambda c: mibs(c, "memkv"), f1)
        redis = pairs(js, 2 * MIB, (1, 4), lambda c: mibs(c, "redis"), f1)
        ratio = pairs(js, 2 * MIB, (1, 4), lambda c: ratio_of(c, "redis"), f2)
        if not needed(memkv, redis, ratio):
            return None
        named = [("%s x%d" % (op, n), ratio_of(cell(js, op, 2 * MIB, n), "redis"))
                 for op in ("put", "get") for n in (1, 4)]
        return Fresh(memkv + " MiB/s", "%s MiB/s (Redis %s, no persistence)" % (redis, js.get("redis_version")),
                     ratio, [v for _, v in named], misses_of(named))
    return row


def cell_by_cell(run, sizes, conns_list, who, reference):
    """A row judging every cell of sizes x conns_list x put/get: min to max,
    how many meet the target, and the misses."""
    def row(data, target):
        js = data.get(run)
        named = []
        for size in sizes:
            for n in conns_list:
                for op in ("put", "get"):
                    c = cell(js, op, size, n)
                    q = ratio_of(c, who) if c else None
                    if q is None:
                        return None
                    named.append(("%s %s x%d" % (size_name(size), op, n), q))
        return spread_of(named, reference, target)
    return row


def spread_of(named, reference, target, words=""):
    """A row judging every [(name, ratio)]: min to max, how many meet the
    target, and the misses."""
    values = [v for _, v in named]
    ratio = "%s%s to %s%s" % (words, f2(min(values)), f2(max(values)), count_words(values, target))
    return Fresh("-", reference, ratio, values, misses_of(named))


def tail(run):
    """p99.99 / p50 at queue depth 1, 4 KiB and 2 MiB, memkv and the raw stream."""
    def row(data, target):
        js = data.get(run)
        mine, raw, named = {}, {}, []
        for size in (4 * KIB, 2 * MIB):
            for op in ("put", "get"):
                c = cell(js, op, size, 1)
                if c is None or not c.get("memkv") or not c.get("raw"):
                    return None
                for side, into in (("memkv", mine), ("raw", raw)):
                    p50 = c[side].get("p50_us")
                    if not p50:
                        return None
                    into[(size, op)] = c[side]["p9999_us"] / p50
                named.append(("%s %s" % (size_name(size), op), mine[(size, op)]))

        def words(x, labels):
            groups = []
            for size in (4 * KIB, 2 * MIB):
                put, get = times(x[(size, "put")]), times(x[(size, "get")])
                groups.append("%s put %s, get %s" % (size_name(size), put, get) if labels else put + ", " + get)
            return "; ".join(groups)

        suffix = ""
        if target is not None and not any(meets(target, v) for v in raw.values()):
            suffix = " (nor by the raw stream)"
        return Fresh(words(mine, True), "raw stream: " + words(raw, False), "-", [v for _, v in named],
                     misses_of(named, times), met_suffix=suffix)
    return row


def cpu_2mib(run):
    def row(data, target):
        js = data.get(run)

        def cpu(who):
            return lambda c: (c.get(who) or {}).get("cpu_s_per_gib")
        memkv = pairs(js, 2 * MIB, (1, 4), cpu("memkv"), f2)
        raw = pairs(js, 2 * MIB, (1, 4), cpu("raw"), f2)
        redis = pairs(js, 2 * MIB, (1, 4), cpu("redis"), f2)
        if not needed(memkv, raw):
            return None
        reference = "raw " + raw + ("; Redis " + redis if redis else "")
        return Fresh(memkv + " s/GiB", reference, "-", [])
    return row


def batch_cell(run, op, size, conns):
    """A --batch row: memkv against Redis pipelining, the raw stream beside."""
    def row(data, target):
        js = data.get(run)
        c = cell(js, op, size, conns)
        if c is None:
            return None
        m, r, w = mibs(c, "memkv"), mibs(c, "redis"), mibs(c, "raw")
        q, qr = ratio_of(c, "redis"), ratio_of(c, "raw")
        if not needed(m, r, w, q, qr):
            return None
        return Fresh(f1(m) + " MiB/s", "%s MiB/s (Redis pipelining %d); raw %s" % (f1(r), js.get("batch", 1), f1(w)),
                     "%s (raw %s)" % (f2(q), f2(qr)), [q])
    return row


# File mode (S1): runs "interval", "interval-batch", "always", "always-batch".

def file_put(policy, size, conns_list, batch_conns, note):
    """MemKV, Redis and ratio over single-op cells of conns_list and batch
    cells of batch_conns: "a / b / c, batches d / e"."""
    def row(data, target):
        single, batch = data.get(policy), data.get(policy + "-batch")
        groups = {"memkv": [], "redis": [], "ratio": []}
        named = []
        for js, conns, label in ((single, conns_list, ""), (batch, batch_conns, "batches ")):
            for n in conns:
                c = cell(js, "put", size, n)
                m, r = mibs(c, "memkv"), mibs(c, "redis")
                q = ratio_of(c, "redis") if c else None
                if not needed(m, r, q):
                    return None
                groups["memkv"].append((label, f1(m)))
                groups["redis"].append((label, f1(r)))
                groups["ratio"].append((label, f2(q)))
                named.append(("%sx%d" % (label, n), q))

        def words(items):
            out = []
            for label in ("", "batches "):
                vals = [v for l, v in items if l == label]
                if vals:
                    out.append(label + " / ".join(vals))
            return ", ".join(out)
        return Fresh(words(groups["memkv"]) + " MiB/s", "%s MiB/s (%s)" % (words(groups["redis"]), note),
                     words(groups["ratio"]), [v for _, v in named], misses_of(named))
    return row


def file_get(policy):
    """Gets of the file-mode run against Redis, 4 KiB to 2 MiB."""
    def row(data, target):
        single, batch = data.get(policy), data.get(policy + "-batch")
        parts, named = [], []
        for size in (4 * KIB, 64 * KIB, 2 * MIB):
            ones = [ratio_of(cell(single, "get", size, n), "redis") if cell(single, "get", size, n) else None
                    for n in (1, 4, 16)]
            if None in ones:
                return None
            named += [("%s x%d" % (size_name(size), n), q) for n, q in zip((1, 4, 16), ones)]
            text = "%s %s" % (size_name(size), " / ".join(f2(q) for q in ones))
            if size < 2 * MIB:
                b = [ratio_of(cell(batch, "get", size, n), "redis") if cell(batch, "get", size, n) else None
                     for n in (4, 16)]
                if None in b:
                    return None
                named += [("%s batches x%d" % (size_name(size), n), q) for n, q in zip((4, 16), b)]
                text += ", batches " + " / ".join(f2(q) for q in b)
            parts.append(text)
        return Fresh("-", "Redis, same runs", "; ".join(parts) + " (`%s` run)" % policy,
                     [v for _, v in named], misses_of(named))
    return row


# The drive tier (D1): memkv-drive-bench's cells, op x size x queue depth.

def drive_ratios(js, op, key):
    if js is None:
        return None
    named = []
    for c in js.get("cells", []):
        if c.get("op") != op:
            continue
        if c.get(key) is None:
            return None
        named.append(("%s qd%d" % (size_name(c["size_bytes"]), c["queue_depth"]), c[key]))
    return named or None


def drive_row(run, op, key, reference, judge, count_at=None):
    """judge: "median" judges the median of the cells, "every" each cell,
    None nothing (the target is no target)."""
    def row(data, target):
        named = drive_ratios(data.get(run), op, key)
        if named is None:
            return None
        values = [v for _, v in named]
        spread = "%s to %s" % (f2(min(values)), f2(max(values)))
        median = statistics.median(values)
        at = target if target is not None else count_at
        counted = count_words(values, at) if at is not None else ""
        if judge == "every":
            ratio = "median %s (%s)%s" % (f2(median), spread, counted)
            return Fresh("-", reference, ratio, values, misses_of(named))
        if judge == "median":
            return Fresh("-", reference, "median %s (%s)" % (f2(median), spread), [median])
        return Fresh("-", reference, "median %s (%s)%s" % (f2(median), spread, counted), [])
    return row


def kv_store_row(run):
    """A memkv-kv-store-bench row: save_cold and restore_again against the
    C++ client's batch put and get of the same bytes on warm connections
    (times: lower is better), and a handle with a client of its own
    (save_own_client; save_cold in runs from before handles shared their
    client) against a fresh client's put."""
    def row(data, target):
        ops = (data.get(run) or {}).get("ops", {})

        def ms(name):
            return (ops.get(name) or {}).get("median_ms")

        save, again, put, get, cold, own = (ms(n) for n in ("save_cold", "restore_again", "raw_batch_put",
                                                            "raw_batch_get", "raw_cold_put", "save_own_client"))
        if not needed(save, again, put, get):
            return None
        r_save, r_again = round(save / put, 2), round(again / get, 2)
        memkv = "%s ms, %s ms" % (f2(save), f2(again))
        reference = "%s ms, %s ms (`raw_batch_put`, `raw_batch_get`: the C++ client, warm connections)" % (
            f2(put), f2(get))
        ratio = "%sx, %sx (time)" % (f2(r_save), f2(r_again))
        if own is not None:
            memkv += "; `save_own_client` %s ms (a handle with a client of its own)" % f2(own)
        if cold is not None:
            reference += "; `raw_cold_put` %s ms (a fresh client: create, first batch)" % f2(cold)
            fresh_name, fresh = ("save_own_client", own) if own is not None else ("save_cold", save)
            ratio += "; `%s` / `raw_cold_put` %sx" % (fresh_name, f2(fresh / cold))
        return Fresh(memkv, reference, ratio, [r_save, r_again],
                     misses_of([("save_cold", r_save), ("restore_again", r_again)]))
    return row


def preload_row(run, op, client_call):
    """A bench/preload_bench.sh row: 16 MiB files through the shim against
    the C client's call, median MiB/s of the rounds."""
    def row(data, target):
        side = (data.get(run) or {}).get(op) or {}
        shim, client = side.get("shim_mib_s"), side.get("c_client_mib_s")
        if not needed(shim, client) or client <= 0:
            return None
        ratio = round(shim / client, 2)
        return Fresh("%.0f MiB/s" % shim, "%.0f MiB/s (C client `%s`)" % (client, client_call), f2(ratio), [ratio])
    return row


def mlperf_row(run):
    """bench/preload_bench.sh's MLPerf KV-cache calls: write and read MiB/s
    through the shim and on the local directory (reported, no ratio)."""
    def row(data, target):
        ml = (data.get(run) or {}).get("mlperf") or {}
        shim, local = ml.get("shim") or {}, ml.get("local") or {}
        figures = [side.get(k) for side in (shim, local) for k in ("write_mib_per_s", "read_mib_per_s")]
        if not needed(*figures):
            return None
        fs = (ml.get("local_fs") or "").split()
        where = "a local %s directory" % fs[-1] if fs else "a local directory"
        return Fresh("write %.0f, read %.0f MiB/s" % tuple(figures[:2]),
                     "write %.0f, read %.0f MiB/s (%s)" % (figures[2], figures[3], where), "-", [])
    return row


# The DRAM pool (F1): memkv-bench --fill, one entry per value size.

def per_value_byte(x):
    """A bytes-per-value-byte figure to four decimals, or five when four
    would hide that it is above 1 (2 MiB + 1: 1.00003)."""
    text = "%.4f" % x
    return text if float(text) != 1.0 or x == 1.0 else "%.5f" % x


def fill_row(run, size):
    """Pool bytes per value byte at one size, Redis's used_memory per value
    byte and the two servers' RSS per value byte beside it."""
    def row(data, target):
        js = data.get(run) or {}
        s = next((s for s in js.get("sizes", []) if s.get("size_bytes") == size), None)
        if s is None or (s.get("memory") or {}).get("value_bytes", 0) == 0:
            return None
        mine, redis = s.get("pool_per_value_byte"), s.get("redis") or {}
        if not needed(mine, redis.get("used_per_value_byte"), redis.get("rss_per_value_byte")):
            return None
        rss = s["rss_per_value_byte"] / redis["rss_per_value_byte"]
        return Fresh(per_value_byte(mine), "Redis `used_memory` %.3f per value byte; RSS memkv / Redis %s" % (
            redis["used_per_value_byte"], f2(rss)), "-", [mine])
    return row


# A fresh server (F2): memkv-bench --fresh, fresh/warm per size x connections.

def fresh_row(run, reference):
    def row(data, target):
        js = data.get(run) or {}
        named = [("%s x%d" % (size_name(c["size_bytes"]), c["conns"]), c.get("ratio")) for c in js.get("cells", [])]
        if not named or any(q is None for _, q in named):
            return None
        return spread_of(named, reference, target, "fresh/warm ")
    return row


# Loads before stores (Q1): memkv-loads-first-bench, p99 of the loads with
# network.loads_first on and off, a cell per round and setting.

def loads_first_row(runs):
    def row(data, target):
        spans, ratios = {True: [], False: []}, []
        for run in runs:
            js = data.get(run) or {}
            cells = js.get("cells", [])
            for on in (True, False):
                p99 = [c["load_p99_us"] for c in cells if c.get("loads_first") is on]
                if not p99:
                    return None
                spans[on].append("%.0f-%.0f us" % (min(p99), max(p99)))
            if js.get("p99_off_over_on_median") is None:
                return None
            ratios.append(js["p99_off_over_on_median"])
            rounds = len(cells) // 2

        def words(items):
            return items[0] + "".join(" (%s)" % i for i in items[1:])
        return Fresh(words(spans[True]) + " with `network.loads_first`", words(spans[False]) + " with it off, same run",
                     "%s lower, median of %d rounds" % (words(["%.2fx" % q for q in ratios]), rounds), ratios,
                     misses_of([("run %d" % (i + 1), q) for i, q in enumerate(ratios)]))
    return row


# The NIXL backend's engine without NIXL (N2): memkv-nixl-engine-bench,
# write and read per shape, the engine against the client and an A/A control.

def nixl_engine_row(run, count, size, long_reference):
    def row(data, target):
        js = data.get(run) or {}
        shape = next((s for s in js.get("shapes", []) if s.get("count") == count and s.get("bytes") == size), None)
        if shape is None:
            return None
        ops = [shape.get("ops", {}).get(op) for op in ("write", "read")]
        if None in ops:
            return None

        def both(f, fmt=f2):
            return " / ".join(fmt(f(o)) for o in ops)
        ratios = [o["engine_over_client"] for o in ops]
        control = both(lambda o: o["control_over_client"])
        reference = "%s GiB/s" % both(lambda o: o["client"]["median_gib_per_s"])
        reference += (" (`BatchPut` / `BatchGetInto`, same keys and buffers); A/A control / client " if long_reference
                      else "; A/A ") + control
        return Fresh("%s GiB/s" % both(lambda o: o["engine"]["median_gib_per_s"]), reference,
                     " / ".join(f2(q) for q in ratios), ratios, misses_of(list(zip(("write", "read"), ratios))))
    return row


# The Python client (P1): bench/python_batch_get.py, batch_get_into against
# the C++ BatchGetInto per shape.

def python_row(run, count, size):
    def row(data, target):
        js = data.get(run) or {}
        s = next((s for s in js.get("shapes", []) if s.get("count") == count and s.get("size") == size), None)
        if s is None or not s.get("cpp_gib_per_s"):
            return None
        ratio = round(s["python_gib_per_s"] / s["cpp_gib_per_s"], 2)
        return Fresh("%s GiB/s" % f2(s["python_gib_per_s"]), "%s GiB/s (C++ `BatchGetInto`)" % f2(s["cpp_gib_per_s"]),
                     f2(ratio), [ratio])
    return row


# Time to first token on a real model (E2): bench/engine_ttft.py --json, a
# header line, then a line per prompt length and cache.

def ms(x):
    return "{:,.1f}".format(x)


def ttft_cells(lines, tokens):
    """{cache: row} of one prompt length, or None when recompute or a MemKV
    cache is missing."""
    got = {r["cache"]: r for r in lines or [] if r.get("tokens") == tokens and "cache" in r}
    if not all(c in got for c in ("recompute", "memkv-memory", "memkv-file")):
        return None
    return got


def ttft_restored(run, tokens):
    """MemKV's TTFT (memory / file mode) against recompute: the speed-up."""
    def row(data, target):
        got = ttft_cells(data.get(run), tokens)
        if got is None:
            return None
        mine = [got["memkv-memory"], got["memkv-file"]]
        ups = [r["speedup_vs_recompute"] for r in mine]
        return Fresh(" / ".join(ms(r["ttft_ms"]) for r in mine) + " ms",
                     "%s ms (recompute)" % ms(got["recompute"]["ttft_ms"]),
                     " / ".join("%.1fx" % u for u in ups) + " faster", ups,
                     misses_of(list(zip(("memory", "file"), ups))))
    return row


def ttft_against(run, tokens, cache, name):
    """MemKV's TTFT over one of llama-cpp-python's caches' (time: lower is better)."""
    def row(data, target):
        got = ttft_cells(data.get(run), tokens)
        if got is None or cache not in got:
            return None
        theirs = got[cache]
        mine = [got["memkv-memory"], got["memkv-file"]]
        times = [round(r["ttft_ms"] / theirs["ttft_ms"], 1) for r in mine]
        note = "" if theirs["same_tokens"] else ", which returned other tokens than recompute"
        return Fresh(" / ".join(ms(r["ttft_ms"]) for r in mine) + " ms",
                     "%s ms (`%s`%s)" % (ms(theirs["ttft_ms"]), name, note),
                     " / ".join("%.1f" % t for t in times) + " (time)", times,
                     misses_of(list(zip(("memory", "file"), times)), lambda x: "%.1f" % x))
    return row


def ttft_tokens(run):
    """Whether every MemKV cell's completions equal recompute's, token for
    token, beside llama-cpp-python's caches."""
    def row(data, target):
        rows = [r for r in data.get(run) or [] if "cache" in r]
        mine = [r for r in rows if r["cache"].startswith("memkv")]
        if not mine:
            return None
        same = sum(r["same_tokens"] for r in mine)
        theirs = []
        for cache in ("llama-ram", "llama-disk"):
            cells = [r for r in rows if r["cache"] == cache]
            theirs.append("%d of %d" % (sum(r["same_tokens"] for r in cells), len(cells)) if cells else "-")
        return Fresh("%d of %d cells (memory and file mode)" % (same, len(mine)),
                     "`LlamaRAMCache` / `LlamaDiskCache` %s / %s cells" % tuple(theirs), "-", [],
                     verdict=same == len(mine))
    return row


# The authentication cost (T4): memkv-bench's auth-cost JSON, the CPU of a
# 2 MiB request's tags and checksums against the plain raw stream's p50.

def auth_cost_row(run, what, key, fmt, target_pct=None):
    """what: the words of the CPU figure; key: its JSON field; target_pct:
    the share of a request it must stay within (None: reported only)."""
    def row(data, target):
        auth = (data.get(run) or {}).get("auth_cost") or {}
        cost = auth.get(key)
        p50 = {}
        for c in auth.get("cells", []):
            if c.get("conns") == 1 and c.get("size_bytes") == 2 * MIB and c.get("plain_p50_us"):
                p50[c["op"]] = c["plain_p50_us"]
        if cost is None or not all(op in p50 for op in ("put", "get")):
            return None
        shares = [100.0 * cost / p50[op] for op in ("put", "get")]
        reference = "the plain raw stream's p50: put %.0f us, get %.0f us" % (p50["put"], p50["get"])
        if target_pct is None:
            reference = "as above"
        verdict = None if target_pct is None else all(s < target_pct for s in shares)
        return Fresh(fmt % cost + " us", reference, " / ".join(fmt_pct(s) for s in shares) + " of a request", [],
                     verdict=verdict)
    return row


def fmt_pct(x):
    return ("%.2f%%" if x < 10 else "%.1f%%") % x


# 16 MiB values (T5): the sweep's 16 MiB cells against the raw stream.

def sweep_16mib(run, judged_conns):
    def row(data, target):
        js = data.get(run)
        conns = (1, 4, 16)
        memkv = pairs(js, 16 * MIB, conns, lambda c: mibs(c, "memkv"), f1)
        raw = pairs(js, 16 * MIB, conns, lambda c: mibs(c, "raw"), f1)
        ratio = pairs(js, 16 * MIB, conns, lambda c: ratio_of(c, "raw"), f2)
        if not needed(memkv, raw, ratio):
            return None
        named = [("%s x%d" % (op, n), ratio_of(cell(js, op, 16 * MIB, n), "raw"))
                 for op in ("put", "get") for n in judged_conns]
        return Fresh(memkv + " MiB/s", "raw " + raw + " MiB/s", ratio, [v for _, v in named], misses_of(named))
    return row


# The engine adapters (A1): bench/adapter_{sglang,vllm,lmcache}.py --json,
# store and load per shape, the adapter against the plain Python client.

def adapter_cells(run, js):
    """[(shape words, op, adapter GiB/s, client GiB/s, ratio, A/A control
    ratio or None)] of one adapter's JSON, in its order."""
    out = []
    if run.endswith("lmcache"):
        for r in (js or {}).get("results", []):
            out.append(("%d x %s" % (r["count"], size_name(r["size"])), r["op"], r["adapter_gib_per_s"],
                        r["client_gib_per_s"], r["ratio"], None))
        return out
    for r in js or []:
        if "pool" in r:  # sglang: a KV pool kind, pages of page_bytes
            shape = "%s %d x %s" % (r["pool"], r["pages"], size_name(r["page_bytes"]))
        else:  # vllm: chunks of row_bytes
            shape = "%d x %s" % (r["chunks"], size_name(r["row_bytes"]))
        for op in ("store", "load"):
            control = r.get("%s_aa_ratio" % op, r.get("%s_control_ratio" % op))
            out.append((shape, op, r["adapter_%s_gib_s" % op], r["client_%s_gib_s" % op], r["%s_ratio" % op], control))
    return out


def adapter_row(run):
    def row(data, target):
        cells = adapter_cells(run, data.get(run))
        if not cells:
            return None
        fmt = f2 if not run.endswith("lmcache") else (lambda x: "%.3f" % x)  # as each bench prints it

        def span(values):
            return "%s to %s" % (f2(min(values)), f2(max(values)))
        reference = "%s GiB/s (the plain Python client, same batches and put options)" % span([c[3] for c in cells])
        controls = [c[5] for c in cells if c[5] is not None]
        if controls:
            reference += "; A/A control " + span(controls)
        shapes = list(dict.fromkeys(c[0] for c in cells))
        ratio = ", ".join("%s %s" % (s, " / ".join(fmt(c[4]) for c in cells if c[0] == s)) for s in shapes)
        named = [("%s %s" % (c[0], c[1]), c[4]) for c in cells]
        return Fresh(span([c[2] for c in cells]) + " GiB/s", reference, ratio + " (store / load)",
                     [c[4] for c in cells], misses_of(named))
    return row


# RDMA against perftest (R1): tests/rdma/bench-scenarios.sh's table.json,
# per size, flight (dN: N ops in flight, bN: batches of N) and op.

def rdma_row(run, size, flight, in_flight):
    """put and get of one size and flight against ib_write_bw and ib_read_bw
    with as many in flight; a cell without a MemKV figure is a miss."""
    def row(data, target):
        cells = {c["op"]: c for c in (data.get(run) or {}).get("cells", [])
                 if c.get("size_bytes") == size and c.get("flight") == flight}
        if not all(op in cells and cells[op].get("perftest_mib_s") for op in ("put", "get")):
            return None
        put, get = cells["put"], cells["get"]

        def mib(c):
            return "no result" if c.get("memkv_mib_s") is None else f1(c["memkv_mib_s"])

        def words(c):
            return "no result" if c.get("ratio") is None else f2(c["ratio"])
        named = [(op, cells[op].get("ratio")) for op in ("put", "get")]

        def misses(target):
            return ["%s %s" % (op, "no result" if q is None else f2(q)) for op, q in named
                    if q is None or not meets(target, q)]
        memkv = "put %s, get %s MiB/s" % (mib(put), mib(get))
        if put.get("memkv_mib_s") is None and get.get("memkv_mib_s") is None:
            memkv = "no result (the run's table.txt says why)"
        return Fresh(memkv,
                     "`ib_write_bw` %s, `ib_read_bw` %s MiB/s (perftest, same guests, same boot, %s)" % (
                         f1(put["perftest_mib_s"]), f1(get["perftest_mib_s"]), in_flight),
                     "put %s, get %s" % (words(put), words(get)), [0.0 if q is None else q for _, q in named], misses)
    return row


# Prefix-aware eviction (E1): memkv-prefix-eviction-bench --json, prefix-aware
# eviction and plain LRU over the same requests, one run per mode.

def eviction_sides(js):
    """(prefix-aware run, plain LRU run) of one JSON, or None."""
    runs = {r.get("policy"): r for r in (js or {}).get("runs", [])}
    if "prefix_aware" not in runs or "plain_lru" not in runs:
        return None
    return runs["prefix_aware"], runs["plain_lru"]


def blocks(x):
    return "{:,.0f}".format(x) if x == int(x) else "{:,.1f}".format(x)


def eviction_row(runs, first_row=False):
    """One or two runs (one request at a time / 64 per batch) of a lookup mode:
    the whole-prefix fraction and blocks reachable of each policy; judged on
    the fraction (>= 0.95) and on reachable (>= 1.5x LRU)."""
    def row(data, target):
        sides = [eviction_sides(data.get(r)) for r in runs]
        if None in sides or any(data.get(r, {}).get("reachable_aware_over_lru_ratio") is None for r in runs):
            return None
        reach = [data[r]["reachable_aware_over_lru_ratio"] for r in runs]
        fractions = [a["whole_prefix_fraction"] for a, _ in sides]

        def pair(run):
            return "%.4f, %s" % (run["whole_prefix_fraction"], blocks(run["reachable_blocks_mean"]))
        mine = " / ".join(pair(a) for a, _ in sides)
        lru = " / ".join(pair(b) for _, b in sides)
        if first_row:
            a = sides[0][0]
            mine = "whole-prefix fraction %.4f, %s blocks reachable" % (a["whole_prefix_fraction"],
                                                                       blocks(a["reachable_blocks_mean"]))
        ratio = "reachable " + " / ".join(f2(q) for q in reach)
        if len(runs) == 1:
            ratio += ", MemKV hits %s" % f2(data[runs[0]]["memkv_hits_aware_over_lru_ratio"])
        fraction_ok, reach_ok = all(f >= 0.95 for f in fractions), all(q >= 1.5 for q in reach)
        words = ("fraction met" if fraction_ok else "**fraction not met** (%s)" % " / ".join(
            "%.4f" % f for f in fractions)) + "; " + (
            "reachable met" if reach_ok else "**reachable not met** (%s)" % " / ".join(f2(q) for q in reach))
        return Fresh(mine, ("plain LRU, same puts without parent keys: " if first_row else "plain LRU: ") + lru, ratio,
                     [], verdict=fraction_ok and reach_ok, met_text=words)
    return row


# Drive bytes per value byte (D2): memkv-drive-restart-bench --json.

def drive_bytes_row(run):
    def row(data, target):
        js = data.get(run) or {}
        mine, size, block = js.get("drive_bytes_per_value_byte"), js.get("value_bytes"), js.get("block_size_bytes")
        if not needed(mine, size, block):
            return None
        # Format 1 gave every value a slot of a whole block and a 4 KiB header.
        slot = (block + 4 * KIB) / size
        reference = "%s (format 1: a %s + 4 KiB slot each)" % (("%.0f" if slot >= 100 else "%.2f") % slot,
                                                               size_name(block))
        return Fresh("%.4f" % mine, reference, "-", [mine])
    return row


# Encryption at rest (D3): memkv-drive-crypt-bench --json, one entry per run.

def crypt_row(runs):
    def row(data, target):
        medians = [(data.get(r) or {}).get("median") for r in runs]
        if not all(medians):
            return None
        put = [m["put_encrypted_over_plain_ratio"] for m in medians]
        get = [m["get_encrypted_over_plain_ratio"] for m in medians]
        misses = ["%s below %s in %d of %d runs" % (op, f2(floor), sum(q < floor for q in qs), len(qs))
                  for op, qs, floor in (("put", put, 0.9), ("get", get, 0.8)) if any(q < floor for q in qs)]
        words = "met" if not misses else "**not met**: " + ", ".join(misses)
        return Fresh("-", "the same store unencrypted, alternating in one run",
                     "put %s, get %s" % (" / ".join(f2(q) for q in put), " / ".join(f2(q) for q in get)), [],
                     verdict=not misses, met_text=words)
    return row


# Large values (L1): bench/large_value_bench.sh --json, a run per mode.

def large_value_row(run, mode, op, first=False):
    def row(data, target):
        runs = {r.get("storage_mode"): r for r in (data.get(run) or {}).get("runs", [])}
        r = runs.get(mode)
        cell = next((c for c in (r or {}).get("rows", []) if c.get("op") == op), None)
        if cell is None:
            return None
        ratio = cell["one_value_over_small_values_ratio"]
        count = "{:,}".format(r["small_values"])
        small = "%s values of %s%s" % (count, size_name(r["small_value_bytes"]), ", same bytes" if first else "")
        return Fresh("%.0f MiB/s" % cell["one_value_median_mib_per_s"],
                     "%.0f MiB/s (%s)" % (cell["small_values_median_mib_per_s"], small), f2(ratio), [ratio])
    return row


# MatchPrefix (M1): memkv-match-prefix-bench --json, without and with a hole.

def match_prefix_row(run, holed):
    def row(data, target):
        a, b = data.get(run), data.get(holed)
        if not a or not b:
            return None
        mine = [a["match_prefix_median_us"], b["match_prefix_median_us"]]
        ok = all(x < 1000 for x in mine)
        return Fresh("%.1f us (hole at %d: %.1f)" % (mine[0], b["hole"], mine[1]),
                     "%.1f us, %.1f us (`BatchExists` present prefix, same keys)" % (
                         a["batch_exists_median_us"], b["batch_exists_median_us"]),
                     "%s, %s (time)" % (f2(a["median_match_prefix_over_batch_exists_ratio"]),
                                        f2(b["median_match_prefix_over_batch_exists_ratio"])), [],
                     verdict=ok, met_text="met (%.0f us)" % mine[0] if ok else "**not met** (%.0f us)" % max(mine))
    return row


# Tenants under load (U1): memkv-tenant-bench --json, this build against the
# --baseline server, single puts and batches of 16. data[BASELINE], when
# there, names that server (run-all's words for it, main.baseline_words).
BASELINE = "--baseline"


def tenant_row(runs):
    def row(data, target):
        got = [data.get(r) for r in runs]
        if not all(g and g.get("rows") for g in got):
            return None

        def span(g):
            rates = [x["memkv_puts_per_s"] / 1000 for x in g["rows"]]
            return "%.0f-%.0fk" % (min(rates), max(rates))
        ratios = [g["median"]["memkv_over_baseline_ratio"] for g in got]
        return Fresh(" / ".join(span(g) for g in got) + " puts/s",
                     "%s, alternating" % (data.get(BASELINE) or "the server of %s" % got[0]["baseline"]),
                     "%s (median of %d)" % (" / ".join(f2(q) for q in ratios), got[0]["rounds"]), ratios,
                     misses_of(list(zip(("single", "batches"), ratios))))
    return row
