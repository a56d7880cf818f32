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
        values = [v for _, v in named]
        ratio = "%s to %s%s" % (f2(min(values)), f2(max(values)), count_words(values, target))
        return Fresh("-", reference, ratio, values, misses_of(named))
    return row


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
    (times: lower is better), and save_cold against a fresh client's put."""
    def row(data, target):
        ops = (data.get(run) or {}).get("ops", {})

        def ms(name):
            return (ops.get(name) or {}).get("median_ms")

        save, again, put, get, cold = (ms(n) for n in ("save_cold", "restore_again", "raw_batch_put",
                                                       "raw_batch_get", "raw_cold_put"))
        if not needed(save, again, put, get):
            return None
        r_save, r_again = round(save / put, 2), round(again / get, 2)
        reference = "%s ms, %s ms (`raw_batch_put`, `raw_batch_get`: the C++ client, warm connections)" % (
            f2(put), f2(get))
        ratio = "%sx, %sx (time)" % (f2(r_save), f2(r_again))
        if cold is not None:
            reference += "; `raw_cold_put` %s ms (a fresh client: create, first batch)" % f2(cold)
            ratio += "; `save_cold` / `raw_cold_put` %sx" % f2(save / cold)
        return Fresh("%s ms, %s ms" % (f2(save), f2(again)), reference, ratio, [r_save, r_again],
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
