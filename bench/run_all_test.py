#!/usr/bin/env python3
"""bench/run-all's table logic on canned JSON (bench/testdata/run_all/, cut
from short real runs): which rows change, what they say, and that every other
byte of docs/benchmarks.md stays as it was. Runs no benchmark."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from run_all import table  # noqa: E402
from run_all.main import apply, baseline_words, commit_of, docs_ids, load_data, main, write_record  # noqa: E402
from run_all.registry import NOT_RERUN, REGISTRY  # noqa: E402

DOCS = os.path.join(os.path.dirname(HERE), "docs", "benchmarks.md")
DATA = os.path.join(HERE, "testdata", "run_all")
RUN = "abc1234+dirty"
MLPERF = "MLPerf Storage KV-cache calls, 48 `.npy` of 8 to 64 MiB, 4 threads"


def load(*names):
    data = {}
    for name in names:
        with open(os.path.join(DATA, name + ".json")) as f:
            data[name] = json.load(f)
    return data


def load_lines(name):
    """A program's JSON lines (bench/engine_ttft.py --json), as run-all reads its log."""
    with open(os.path.join(DATA, name + ".jsonl")) as f:
        return {name: [json.loads(l) for l in f if l.startswith("{")]}


def row_cells(text, area, cell):
    lines = text.splitlines(True)
    return table.split_row(lines[table.rows_of(lines)[(area, cell)]])


class Docs(unittest.TestCase):
    def setUp(self):
        with open(DOCS) as f:
            self.text = f.read()
        self.lines = self.text.splitlines(True)

    def test_every_registry_row_is_in_the_table_under_its_id(self):
        index = table.rows_of(self.lines)
        for i, entry in REGISTRY.items():
            for key in entry.rows:
                self.assertIn(key, index, "%s's row %r is not in the summary table" % (i, key))
                self.assertEqual(table.split_row(self.lines[index[key]])[8], i, key)

    def test_every_id_of_the_list_is_rerun_or_says_why_not(self):
        ids = [i for i, _ in docs_ids(self.lines)]
        self.assertIn("T1", ids)
        for i in ids:
            self.assertTrue(i in REGISTRY or i in NOT_RERUN, "%s is neither rerun nor in NOT_RERUN" % i)

    def changed(self, new):
        """Indexes of the lines of the old text that differ in new, the
        machine lines left out of both (new has one for its run; a run that
        no row names any more has lost its own); they come after the rows."""
        self.assertEqual(new.count(table.machine_mark(RUN)), 1)
        had_machine_lines = any(table.MACHINE_MARK in l for l in self.lines)
        old_lines = [l for l in self.lines if table.MACHINE_MARK not in l]
        new_lines = new.splitlines(True)
        if not had_machine_lines:  # the first machine line comes with a blank line after it
            first = next(i for i, l in enumerate(new_lines) if table.MACHINE_MARK in l)
            del new_lines[first + 1]
        new_lines = [l for l in new_lines if table.MACHINE_MARK not in l]
        self.assertEqual(len(old_lines), len(new_lines))
        return {i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b}

    def test_t2_rewrites_its_rows_only(self):
        new, outcomes = apply(self.text, ["T2"], {"T2": load("t2")}, RUN, "machine words")
        index = table.rows_of(self.lines)
        t2_rows = {index[k] for k in REGISTRY["T2"].rows}
        self.assertEqual(self.changed(new), t2_rows)
        cells = row_cells(new, "TCP", "batches of 16, 4 KiB put, 16 connections")
        self.assertEqual(cells[2], "1120.0 MiB/s")
        self.assertEqual(cells[3], "1027.7 MiB/s (Redis pipelining 16); raw 3239.8")
        self.assertEqual(cells[4], "1.09 (raw 0.35)")
        self.assertEqual(cells[5], ">= 1.5x Redis")  # the target is never rewritten
        self.assertEqual(cells[6], "**not met**")  # 1.09 < 1.5
        self.assertEqual(cells[7], RUN)
        self.assertEqual(cells[8], "T2")
        cells = row_cells(new, "TCP", "batches of 16, 64 KiB put, 16 connections")
        self.assertEqual((cells[4], cells[6]), ("2.86 (raw 0.46)", "met"))
        self.assertEqual(len(outcomes["T2"]), 4)
        self.assertIn("machine words " + table.machine_mark(RUN) + "\n", new)

    def test_k1_rewrites_both_kv_store_rows_with_time_ratios(self):
        data = {"K1": load("k1-8mib", "k1-64kib")}
        new, outcomes = apply(self.text, ["K1"], data, RUN, "m")
        index = table.rows_of(self.lines)
        self.assertEqual(self.changed(new), {index[k] for k in REGISTRY["K1"].rows})
        small = row_cells(new, "kv_store plugin", "96 chunks of 64 KiB: `save_cold`, `restore_again` (median ms)")
        self.assertEqual(small[2], "3.89 ms, 1.31 ms")
        self.assertTrue(small[3].startswith("2.57 ms, 1.78 ms (`raw_batch_put`, `raw_batch_get`"), small[3])
        self.assertIn("`raw_cold_put` 3.07 ms", small[3])
        self.assertEqual(small[4], "1.51x, 0.73x (time); `save_cold` / `raw_cold_put` 1.27x")
        self.assertEqual(small[6], "**not met** (1 of 2): save_cold 1.51")  # <= 1.1x: lower is better
        self.assertEqual(small[7], RUN)
        # A run with save_own_client (handles sharing their client): it is
        # the one set against a fresh client's put.
        large = row_cells(new, "kv_store plugin", "96 chunks of 8 MiB: `save_cold`, `restore_again` (median ms)")
        self.assertEqual(large[2], "251.89 ms, 247.53 ms; "
                                   "`save_own_client` 249.76 ms (a handle with a client of its own)")
        self.assertEqual(large[4], "1.14x, 1.09x (time); `save_own_client` / `raw_cold_put` 1.08x")
        self.assertEqual(large[6], "**not met** (1 of 2): save_cold 1.14")
        self.assertEqual(len(outcomes["K1"]), 2)

    def test_s2_rewrites_the_shims_16_mib_rows(self):
        new, outcomes = apply(self.text, ["S2"], {"S2": load("s2")}, RUN, "m")
        index = table.rows_of(self.lines)
        self.assertEqual(self.changed(new), {index[k] for k in REGISTRY["S2"].rows})
        write = row_cells(new, "LD_PRELOAD shim", "write of 16 MiB files")
        self.assertEqual(write[2:5], ["1890 MiB/s", "2242 MiB/s (C client `memkv_put`)", "0.84"])
        self.assertEqual(write[6], "met")
        read = row_cells(new, "LD_PRELOAD shim", "read of 16 MiB files")
        self.assertEqual((read[3], read[4]), ("2374 MiB/s (C client `memkv_get`)", "0.99"))
        mlperf = row_cells(new, "LD_PRELOAD shim", MLPERF)
        self.assertEqual(mlperf[2:8], ["write 1200, read 686 MiB/s",
                                       "write 480, read 960 MiB/s (a local ext4 directory)", "-", "none", "-", RUN])
        self.assertEqual(len(outcomes["S2"]), 3)

    def test_s2_without_the_mlperf_calls_keeps_their_row(self):
        data = load("s2")
        del data["s2"]["mlperf"]  # no NumPy: preload_bench.sh skips them
        new, _ = apply(self.text, ["S2"], {"S2": data}, RUN, "m")
        index = table.rows_of(self.lines)
        self.assertEqual(self.changed(new), {index[k] for k in REGISTRY["S2"].rows
                                             if k != ("LD_PRELOAD shim", MLPERF)})

    def test_missing_json_leaves_the_rows_and_adds_no_machine_line(self):
        new, outcomes = apply(self.text, ["T2", "S1"], {"T2": {}}, RUN, "machine words")
        self.assertEqual(new, self.text)
        self.assertEqual(outcomes, {"T2": [], "S1": []})

    def test_the_machine_line_is_replaced_not_repeated(self):
        once, _ = apply(self.text, ["T2"], {"T2": load("t2")}, RUN, "Machine one.")
        twice, _ = apply(once, ["T2"], {"T2": load("t2")}, "def5678", "Machine two.")
        self.assertFalse("Machine one." in twice)  # no row names its run any more
        self.assertEqual(twice.count(table.machine_mark("def5678")), 1)
        self.assertTrue("\nMachine two. " + table.machine_mark("def5678") + "\n" in twice)
        self.assertEqual(row_cells(twice, "TCP", "batches of 16, 4 KiB get, 16 connections")[7], "def5678")

    def test_each_run_named_by_rows_keeps_its_machine_line(self):
        t2 = apply(self.text, ["T2"], {"T2": load("t2")}, "aaa1111", "Machine A.")[0]
        both = apply(t2, ["T5"], {"T5": load("t5")}, "bbb2222", "Machine B.")[0]
        lines = [l for l in both.splitlines() if table.MACHINE_MARK in l]
        self.assertEqual(lines[-2:], ["Machine A. " + table.machine_mark("aaa1111"),
                                      "Machine B. " + table.machine_mark("bbb2222")])
        # Every older line (the older format names its run in its text) whose
        # run rows of the result still name stays; the others go.
        out = both.splitlines(keepends=True)
        named = {r.strip() for i in table.rows_of(out).values() for r in table.split_row(out[i])[7].split(",")}
        older = [l.rstrip("\n") for l in self.lines if table.MACHINE_MARK in l]
        self.assertTrue(older)
        for l in older:
            self.assertEqual(l in both.splitlines(), table._line_run(l) in named, l)
        # T2 again under B: no row names A's run, and its line goes.
        again = apply(both, ["T2"], {"T2": load("t2")}, "bbb2222", "Machine B, later.")[0]
        self.assertNotIn("Machine A.", again)
        self.assertEqual(again.count(table.machine_mark("bbb2222")), 1)
        self.assertIn("Machine B, later. " + table.machine_mark("bbb2222"), again)

    def test_a_target_it_cannot_read_keeps_met(self):
        key = ("TCP", "batches of 16, 64 KiB get, 16 connections")
        old = row_cells(self.text, *key)
        edited = self.text.replace(table.join_row(old), table.join_row(old[:5] + ["~1.5x Redis", "as it was"] + old[7:]))
        self.assertNotEqual(edited, self.text)
        new, _ = apply(edited, ["T2"], {"T2": load("t2")}, RUN)
        cells = row_cells(new, *key)
        self.assertEqual(cells[6], "as it was")
        self.assertEqual(cells[4], "2.40 (raw 0.75)")
        self.assertEqual(cells[7], RUN)

    def test_t1_t3_d1_s1_rewrite_every_row_they_feed(self):
        data = {"T1": load("t1"), "T3": load("t3"), "D1": load("d1"),
                "S1": load("interval", "interval-batch", "always", "always-batch", "always-loop",
                             "always-loop-batch")}
        new, outcomes = apply(self.text, list(data), data, RUN, "m")
        index = table.rows_of(self.lines)
        fed = {index[k] for i in data for k in REGISTRY[i].rows}
        self.assertEqual(self.changed(new), fed)
        for i in data:
            self.assertEqual(len(outcomes[i]), len(REGISTRY[i].rows), i)
        tail = row_cells(new, "TCP", "tail at queue depth 1: p99.99 / p50")
        self.assertTrue(tail[2].startswith("4 KiB put "), tail[2])
        self.assertTrue(tail[3].startswith("raw stream: "), tail[3])
        cpu = row_cells(new, "TCP", "CPU per GiB, client + server, 2 MiB, 1 / 4 connections")
        self.assertEqual(cpu[6], "-")  # "none (reported)": met? stays
        sweep = row_cells(new, "TCP", "full sweep: 64 KiB to 4 MiB, 4 and 16 connections (20 cells)")
        self.assertRegex(sweep[4], r"^\d\.\d\d to \d\.\d\d; \d+ of 20 at or above 0\.75$")
        put = row_cells(new, "drive tier", "put, 64 KiB to 16 MiB x queue depth 1/4/16 (15 cells)")
        self.assertRegex(put[4], r"^median \d\.\d\d \(\d\.\d\d to \d\.\d\d\); \d+ of 15 at or above 0\.90$")
        get = row_cells(new, "drive tier", "get, every cell")
        self.assertIn("8 of 15 at or above 0.90", get[4])  # as memkv-drive-bench counts them
        self.assertIn("1 MiB qd4 0.897", get[6])  # a miss that prints as 0.90 gets a third decimal
        s1 = row_cells(new, "file mode", "put, `sync: always`, 4 KiB, 16 connections and batches (3 cells)")
        self.assertRegex(s1[2], r"^[\d.]+, batches [\d.]+ / [\d.]+ MiB/s$")
        self.assertTrue(s1[3].endswith("MiB/s (Redis `appendfsync always`)"), s1[3])

    def test_d1_without_references_leaves_its_rows(self):
        d1 = load("d1")
        for c in d1["d1"]["cells"]:
            c["ratio"] = c["ratio_fdatasync"] = None
            c.pop("ratio_each_sync", None)
            c.pop("ratio_each_sync_record", None)
        new, outcomes = apply(self.text, ["D1"], {"D1": d1}, RUN, "m")
        self.assertEqual((new, outcomes), (self.text, {"D1": []}))

    def test_d1_without_each_sync_rewrites_the_fio_rows_only(self):
        d1 = load("d1")
        for c in d1["d1"]["cells"]:
            c.pop("ratio_each_sync", None)
            c.pop("ratio_each_sync_record", None)
        _, outcomes = apply(self.text, ["D1"], {"D1": d1}, RUN, "m")
        rewritten = {cell for _, cell, *_ in outcomes["D1"]}
        self.assertNotIn("put, the same 15 cells, against puts durable when counted", rewritten)
        self.assertIn("put, 64 KiB to 16 MiB x queue depth 1/4/16 (15 cells)", rewritten)

    def test_s1_without_its_batch_runs_rewrites_only_the_rows_they_do_not_feed(self):
        new, outcomes = apply(self.text, ["S1"], {"S1": load("interval", "always")}, RUN, "m")
        rewritten = {cell for _, cell, *_ in outcomes["S1"]}
        self.assertEqual(rewritten, {"put, `sync: interval`, 2 MiB, 1/4/16 connections",
                                     "put, `sync: always`, 2 MiB, 16 connections"})


    def rewritten_only(self, i, data):
        """apply() of ID i alone: checks it changed its rows and nothing else,
        and returns the new text."""
        new, outcomes = apply(self.text, [i], {i: data}, RUN, "m")
        index = table.rows_of(self.lines)
        self.assertEqual(self.changed(new), {index[k] for k in REGISTRY[i].rows}, i)
        self.assertEqual(len(outcomes[i]), len(REGISTRY[i].rows), i)
        return new

    def test_f1_rewrites_the_pool_rows(self):
        new = self.rewritten_only("F1", load("f1"))
        small = row_cells(new, "DRAM pool", "pool bytes per value byte, 4 KiB")
        self.assertEqual(small[2], "1.0000")
        self.assertEqual(small[3], "Redis `used_memory` 1.271 per value byte; RSS memkv / Redis 0.89")
        self.assertEqual((small[4], small[6], small[7]), ("-", "met", RUN))
        odd = row_cells(new, "DRAM pool", "pool bytes per value byte, 2 MiB + 1")
        self.assertEqual(odd[2], "1.00003")  # four decimals would hide the extra page's share
        self.assertEqual(odd[6], "met")

    def test_f1_a_pool_over_its_target_is_not_met(self):
        f1 = load("f1")
        f1["f1"]["sizes"][1]["pool_per_value_byte"] = 1.2
        cells = row_cells(self.rewritten_only("F1", f1), "DRAM pool", "pool bytes per value byte, 64 KiB")
        self.assertEqual((cells[2], cells[6]), ("1.2000", "**not met**"))

    def test_f2_rewrites_both_fresh_rows(self):
        f2 = load("f2")
        slow = json.loads(json.dumps(f2["f2"]))
        slow["cells"][2]["ratio"] = 0.48
        new = self.rewritten_only("F2", {"f2": f2["f2"], "f2-no-prefault": slow})
        on = row_cells(new, "fresh server", "put on a never-written pool, 4 KiB and 2 MiB x 1 and 16 connections, "
                                            "prefault on (the default)")
        self.assertEqual(on[4], "fresh/warm 0.98 to 1.02; 4 of 4 at or above 0.80")
        self.assertEqual(on[6], "met (4 of 4)")
        off = row_cells(new, "fresh server", "the same with `--no-prefault` (not the default)")
        self.assertEqual(off[6], "**not met** (3 of 4): 2 MiB x1 0.48")

    def test_q1_rewrites_the_loads_first_row_from_both_runs(self):
        new = self.rewritten_only("Q1", load("q1", "q1-w4"))
        cells = row_cells(new, "loads before stores", "p99 of 64 KiB gets while 8 connections put 2 x 4 MiB "
                                                       "batches (2 workers; 16 connections, 4 workers)")
        self.assertEqual(cells[2], "4388-5196 us (13901-15842 us) with `network.loads_first`")
        self.assertEqual(cells[3], "15432-20995 us (37720-81144 us) with it off, same run")
        self.assertEqual(cells[4], "4.04x (3.57x) lower, median of 3 rounds")
        self.assertEqual(cells[6], "met (2 of 2)")

    def test_n2_rewrites_a_row_per_shape(self):
        new = self.rewritten_only("N2", load("n2"))
        big = row_cells(new, "NIXL engine (no NIXL)", "64 x 256 KiB, write / read (Post, then Poll until done)")
        self.assertEqual(big[2], "2.87 / 2.70 GiB/s")
        self.assertEqual(big[3], "3.43 / 3.02 GiB/s (`BatchPut` / `BatchGetInto`, same keys and buffers); "
                                 "A/A control / client 1.00 / 1.09")
        self.assertEqual((big[4], big[6]), ("0.83 / 0.89", "**not met** (0 of 2): write 0.83, read 0.89"))
        small = row_cells(new, "NIXL engine (no NIXL)", "8 x 256 KiB, write / read")
        self.assertEqual(small[3], "3.25 / 2.84 GiB/s; A/A 1.02 / 0.97")

    def test_p1_rewrites_both_python_rows(self):
        new = self.rewritten_only("P1", load("p1"))
        self.assertEqual(row_cells(new, "Python client", "`batch_get_into`, 64 x 64 KiB")[2:7],
                         ["2.87 GiB/s", "3.04 GiB/s (C++ `BatchGetInto`)", "0.94", ">= 0.9x C++", "met"])

    def test_a1_rewrites_each_adapters_row(self):
        new = self.rewritten_only("A1", load("a1-sglang", "a1-vllm", "a1-lmcache"))
        sglang = row_cells(new, "engine adapters", next(c for a, c in REGISTRY["A1"].rows if c.startswith("sglang")))
        self.assertEqual(sglang[2], "1.38 to 2.78 GiB/s")
        self.assertEqual(sglang[3], "1.31 to 3.05 GiB/s (the plain Python client, same batches and put options); "
                                    "A/A control 0.85 to 1.14")
        self.assertEqual(sglang[4], "mha 64 x 256 KiB 1.01 / 0.95, mla 64 x 256 KiB 0.98 / 0.91, "
                                    "mha 32 x 2 MiB 1.03 / 1.13, mha 8 x 256 KiB 1.01 / 1.05 (store / load)")
        self.assertEqual(sglang[6], "**not met** (7 of 8): mla 64 x 256 KiB load 0.91")
        lmcache = row_cells(new, "engine adapters", next(c for a, c in REGISTRY["A1"].rows if c.startswith("lmcache")))
        self.assertNotIn("A/A", lmcache[3])  # its bench has no control client
        self.assertTrue(lmcache[4].startswith("64 x 256 KiB 1.012 / 0.961, "), lmcache[4])

    def test_e2_rewrites_the_ttft_rows_from_json_lines(self):
        new = self.rewritten_only("E2", load_lines("e2"))
        restored = row_cells(new, "engine (llama.cpp)", "TTFT with the prompt restored, SmolLM2-135M, 4,096 tokens, "
                                                        "memory / file mode")
        self.assertEqual(restored[2:5], ["769.5 / 688.6 ms", "21,942.5 ms (recompute)", "28.5x / 31.9x faster"])
        self.assertEqual(restored[6], "met (2 of 2)")
        ram = row_cells(new, "engine (llama.cpp)", "the same against llama-cpp-python's `LlamaRAMCache`")
        self.assertEqual((ram[3], ram[4]), ("131.6 ms (`LlamaRAMCache`)", "5.8 / 5.2 (time)"))
        self.assertEqual(ram[6], "**not met** (0 of 2): memory 5.8, file 5.2")
        tokens = row_cells(new, "engine (llama.cpp)", "completions token for token equal to recompute in every run "
                                                      "of a cell, 512 to 8,000 tokens")
        self.assertEqual((tokens[2], tokens[6]), ("4 of 4 cells (memory and file mode)", "met"))

    def test_e2_a_memkv_cache_with_other_tokens_is_not_met(self):
        lines = load_lines("e2")
        for r in lines["e2"]:
            if r.get("cache") == "memkv-file" and r["tokens"] == 512:
                r["same_tokens"] = False
            if r.get("cache") == "llama-ram":
                r["same_tokens"] = False
        new, _ = apply(self.text, ["E2"], {"E2": lines}, RUN, "m")
        tokens = row_cells(new, "engine (llama.cpp)", "completions token for token equal to recompute in every run "
                                                      "of a cell, 512 to 8,000 tokens")
        self.assertEqual((tokens[2], tokens[3], tokens[6]),
                         ("3 of 4 cells (memory and file mode)",
                          "`LlamaRAMCache` / `LlamaDiskCache` 0 of 2 / 2 of 2 cells",
                          "**not met**"))
        ram = row_cells(new, "engine (llama.cpp)", "the same against llama-cpp-python's `LlamaRAMCache`")
        self.assertEqual(ram[3], "131.6 ms (`LlamaRAMCache`, which returned other tokens than recompute)")

    def test_t4_judges_the_tags_and_reports_the_checksums(self):
        new = self.rewritten_only("T4", load("t4"))
        tags = row_cells(new, "TCP", "authentication: 4 HMAC-SHA256 tags per 2 MiB request and response")
        self.assertEqual(tags[2:5], ["0.87 us", "the plain raw stream's p50: put 500 us, get 563 us",
                                     "0.17% / 0.15% of a request"])
        self.assertEqual(tags[6], "met")  # "within 10%", judged by the row itself
        sums = row_cells(new, "TCP", "payload checksums: 2 XXH3 passes per 2 MiB request (AVX2)")
        self.assertEqual((sums[2], sums[4], sums[6]), ("124.5 us", "24.9% / 22.1% of a request", "-"))

    def test_t5_judges_16_mib_at_4_and_16_connections(self):
        new = self.rewritten_only("T5", load("t5"))
        cells = row_cells(new, "TCP", "16 MiB, 1 / 4 / 16 connections")
        self.assertEqual(cells[4], "put 1.04 / 0.75 / 0.63, get 0.95 / 0.84 / 0.88")
        self.assertEqual(cells[6], "**not met** (3 of 4): put x16 0.63")  # 1 connection is not judged

    def test_r1_rewrites_the_rdma_rows_and_a_cell_without_a_result_misses(self):
        # r1.json: the figures of the recorded run at f65cd19 (run 1), and
        # the 2 MiB cells of 16 in flight that gave no result at 28dad7a.
        new = self.rewritten_only("R1", load("r1"))
        one = row_cells(new, "RDMA", "64 KiB put / get, one op at a time")
        self.assertEqual(one[2:5], ["put 10.5, get 10.0 MiB/s",
                                    "`ib_write_bw` 21.1, `ib_read_bw` 21.2 MiB/s (perftest, same guests, same boot, "
                                    "`-t 1`)", "put 0.50, get 0.47"])
        self.assertEqual(one[6], "**not met** (0 of 2): put 0.50, get 0.47")
        batches = row_cells(new, "RDMA", "64 KiB put / get, batches of 64 (every key its own pipelined RDMA op)")
        self.assertEqual((batches[4], batches[6]), ("put 0.77, get 0.86", "**not met** (1 of 2): put 0.77"))
        big = row_cells(new, "RDMA", "2 MiB, 16 threads with one op each")
        self.assertEqual((big[2], big[4]), ("no result (the run's table.txt says why)", "put no result, get no result"))
        self.assertEqual(big[6], "**not met** (0 of 2): put no result, get no result")

    def test_e1_judges_the_fraction_and_reachable_blocks_apart(self):
        e1, walk = load("e1")["e1"], load("e1-walk")["e1-walk"]
        data = {"e1": e1, "e1-b64": e1, "e1-e4-b64": e1, "e1-walk": walk, "e1-walk-b64": walk}
        new = self.rewritten_only("E1", data)
        first = row_cells(new, "prefix-aware eviction", next(c for _, c in REGISTRY["E1"].rows))
        self.assertEqual(first[2], "whole-prefix fraction 1.0000, 40 blocks reachable")
        self.assertEqual(first[3], "plain LRU, same puts without parent keys: 1.0000, 40")
        self.assertEqual(first[4], "reachable 1.00, MemKV hits 1.00")
        self.assertEqual(first[6], "fraction met; **reachable not met** (1.00)")
        walked = row_cells(new, "prefix-aware eviction", "walk lookups (Get from the head, no engine cache), one "
                                                         "request at a time / 64 per batch")
        self.assertEqual(walked[2:5], ["1.0000, 200 / 1.0000, 200", "plain LRU: 0.9600, 192 / 0.9600, 192",
                                       "reachable 1.04 / 1.04"])

    def test_d2_d3_l1_m1_u1_rewrite_their_rows(self):
        d3 = load("d3-1")["d3-1"]
        u1 = load("u1")["u1"]
        data = {"D2": load("d2-4k"), "D3": {"d3-1": d3, "d3-2": d3, "d3-3": d3}, "L1": load("l1"),
                "M1": load("m1", "m1-hole"), "U1": {"u1": u1, "u1-batch": u1}}
        new, outcomes = apply(self.text, list(data), data, RUN, "m")
        small = row_cells(new, "drive tier", "drive bytes per value byte, 20,000 values of 4 KiB")
        self.assertEqual(small[2:5], ["1.0000", "1025 (format 1: a 4 MiB + 4 KiB slot each)", "-"])
        self.assertEqual(len(outcomes["D2"]), 1)  # only the 4 KiB run's JSON is there
        crypt = row_cells(new, "drive tier", next(c for _, c in REGISTRY["D3"].rows))
        self.assertEqual(crypt[4], "put 0.86 / 0.86 / 0.86, get 0.66 / 0.66 / 0.66")
        self.assertEqual(crypt[6], "**not met**: put below 0.90 in 3 of 3 runs, get below 0.80 in 3 of 3 runs")
        big = row_cells(new, "large values", "memory mode, put: one 4 GiB value")
        self.assertEqual(big[2:7], ["2010 MiB/s", "2401 MiB/s (32 values of 2 MiB, same bytes)", "0.84",
                                    ">= 0.9x the 2 MiB values", "**not met**"])
        self.assertEqual(row_cells(new, "large values", "file mode, put")[4], "1.22")
        match = row_cells(new, "client", "`MatchPrefix`, 128 keys over 4 servers, median latency (p99 noisy)")
        self.assertEqual(match[2:5], ["88.9 us (hole at 16: 102.5)",
                                      "87.6 us, 102.5 us (`BatchExists` present prefix, same keys)",
                                      "1.01, 1.00 (time)"])
        self.assertEqual(match[6], "met (89 us)")
        tenants = row_cells(new, "Tenants", next(c for _, c in REGISTRY["U1"].rows))
        self.assertEqual(tenants[2:5], ["113-203k / 113-203k puts/s", "the server of build/memkv, alternating",
                                        "1.49 / 1.49 (median of 3)"])


def run_main(out, argv):
    """main(argv) with --out out, rewriting a copy of the docs page there,
    its output discarded: (exit status, the copy's path)."""
    docs = os.path.join(out, "benchmarks.md")
    with open(DOCS) as f, open(docs, "w") as g:
        g.write(f.read())
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            return main(argv + ["--out", out, "--docs", docs]), docs
        finally:
            sys.stdout = stdout


class Runs(unittest.TestCase):
    def test_json_lines_are_read_from_the_log_and_a_failed_run_is_not_read(self):
        with tempfile.TemporaryDirectory() as out:
            with open(os.path.join(out, "e2.log"), "w") as f:
                f.write('{"bench": "engine_ttft"}\nllama.cpp noise\n{"tokens": 512, "cache": "recompute"}\n')
            self.assertEqual(load_data(REGISTRY["E2"], out), {"e2": [{"bench": "engine_ttft"},
                                                                    {"tokens": 512, "cache": "recompute"}]})
            self.assertEqual(load_data(REGISTRY["E2"], out, failed={"e2": "exit 1"}), {})

    def test_reuse_rewrites_from_an_earlier_runs_json_and_record(self):
        with tempfile.TemporaryDirectory() as out:
            with open(os.path.join(DATA, "t2.json")) as f, open(os.path.join(out, "t2.json"), "w") as g:
                g.write(f.read())
            write_record(out, "T2", "abc1234", "Machine of the run.", {})
            rc, docs = run_main(out, ["--reuse", "--only", "T2,T3"])
            self.assertEqual(rc, 1)  # T3 has no earlier run there
            with open(docs) as f:
                new = f.read()
            cells = row_cells(new, "TCP", "batches of 16, 4 KiB put, 16 connections")
            self.assertEqual((cells[2], cells[7]), ("1120.0 MiB/s", "abc1234"))
            self.assertIn("Machine of the run. " + table.MACHINE_MARK, new)
            with open(DOCS) as f:
                old = f.read()
            t3 = ("TCP", "tail at queue depth 1: p99.99 / p50")
            self.assertEqual(row_cells(new, *t3), row_cells(old, *t3))

    def test_edits_made_to_the_page_while_the_runs_go_stay(self):
        with tempfile.TemporaryDirectory() as out:
            with open(os.path.join(DATA, "t2.json")) as f, open(os.path.join(out, "t2.json"), "w") as g:
                g.write(f.read())
            write_record(out, "T2", "abc1234", "Machine of the run.", {})
            docs = os.path.join(out, "benchmarks.md")
            edit = "\nA paragraph written while the benchmarks ran.\n"

            def load_and_edit(*load_args):
                with open(docs, "a") as f:
                    f.write(edit)
                return load_data(*load_args)

            with mock.patch("run_all.main.load_data", load_and_edit):
                rc, docs = run_main(out, ["--reuse", "--only", "T2"])
            self.assertEqual(rc, 0)
            with open(docs) as f:
                new = f.read()
            self.assertTrue(new.endswith(edit))
            cells = row_cells(new, "TCP", "batches of 16, 4 KiB put, 16 connections")
            self.assertEqual((cells[2], cells[7]), ("1120.0 MiB/s", "abc1234"))

    def test_the_baseline_is_named_by_its_checkouts_commit_and_reuse_keeps_the_name(self):
        with tempfile.TemporaryDirectory() as out:
            checkout = os.path.join(out, "older")
            os.makedirs(os.path.join(checkout, "build"))
            git = ["git", "-C", checkout, "-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run(git[:3] + ["init", "-q"], check=True)
            subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "older"], check=True)
            head = subprocess.run(git[:3] + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                  check=True).stdout.strip()
            named = baseline_words(os.path.join(checkout, "build", "memkv"))
            self.assertEqual(named, "the server built in a checkout of %s" % head)
            gone = os.path.join(out, "gone", "memkv")
            self.assertEqual(baseline_words(gone), "the server of %s" % gone)
            # --reuse, with the checkout gone: the name recorded when U1 ran.
            for name in ("u1", "u1-batch"):
                with open(os.path.join(DATA, "u1.json")) as f, open(os.path.join(out, name + ".json"), "w") as g:
                    g.write(f.read())
            write_record(out, "U1", "abc1234", "Machine of the run.", {}, named)
            shutil.rmtree(checkout)
            rc, docs = run_main(out, ["--reuse", "--only", "U1"])
            self.assertEqual(rc, 0)
            with open(docs) as f:
                tenants = row_cells(f.read(), "Tenants", next(c for _, c in REGISTRY["U1"].rows))
            self.assertEqual(tenants[3], "the server built in a checkout of %s, alternating" % head)

    def test_dry_run_shows_every_id_with_its_commands_or_why_not(self):
        import io
        got = io.StringIO()
        stdout, sys.stdout = sys.stdout, got
        try:
            self.assertEqual(main(["--dry-run", "--build", "/b", "--out", "/o"]), 0)
        finally:
            sys.stdout = stdout
        text = got.getvalue()
        self.assertIn("PYTHONPATH=/b/python '$(bash scripts/engine-venv.sh llama_cpp)/bin/python'", text)
        self.assertNotIn("NOT IN THE TABLE", text)
        for i in REGISTRY:
            self.assertIn("\n%s: " % i, "\n" + text)
        for i in NOT_RERUN:
            self.assertIn("%s: not rerun by run-all" % i, text)

    def test_u1_without_a_baseline_fails_its_runs_and_leaves_its_row(self):
        with tempfile.TemporaryDirectory() as out:
            rc, docs = run_main(out, ["--only", "U1", "--build", "/nonexistent"])
            self.assertEqual(rc, 1)
            with open(os.path.join(out, "run-all.json")) as f:
                self.assertIn("needs --baseline PATH", json.load(f)["U1"]["failed"]["u1"])
            with open(docs) as f, open(DOCS) as g:
                self.assertEqual(f.read(), g.read())

    def test_the_rewritten_page_does_not_make_the_tree_dirty(self):
        import subprocess
        with tempfile.TemporaryDirectory() as root:
            def git(*args):
                subprocess.run(["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@t"] + list(args),
                               check=True, capture_output=True)
            os.makedirs(os.path.join(root, "docs"))
            page, other = os.path.join(root, "docs", "benchmarks.md"), os.path.join(root, "code.cc")
            for path in (page, other):
                with open(path, "w") as f:
                    f.write("before\n")
            git("init", "-q")
            git("add", ".")
            git("commit", "-qm", "first")
            with open(page, "w") as f:
                f.write("rows of an earlier ID\n")
            self.assertFalse(commit_of(root, page).endswith("+dirty"))
            self.assertTrue(commit_of(root).endswith("+dirty"))
            with open(other, "w") as f:
                f.write("changed\n")
            self.assertTrue(commit_of(root, page).endswith("+dirty"))

    def test_a_venv_run_names_its_python_and_fills_its_environment(self):
        run = REGISTRY["E2"].runs[0]
        self.assertEqual(run.command("/b", "/o", False)[0], "$(bash scripts/engine-venv.sh llama_cpp)/bin/python")
        argv = run.command("/b", "/o", True, "/v/bin/python")
        self.assertEqual(argv[0], "/v/bin/python")
        self.assertEqual(argv[argv.index("--tokens") + 1], "512,4096")  # --quick
        self.assertEqual(run.environment("/b", "/o"), {"PYTHONPATH": "/b/python"})


class Targets(unittest.TestCase):
    def test_forms_of_the_table(self):
        self.assertEqual(table.parse_target(">= 0.9x raw"), (">=", 0.9))
        self.assertEqual(table.parse_target(">= 1.0x Redis"), (">=", 1.0))
        self.assertEqual(table.parse_target(">= 0.75x raw in every cell"), (">=", 0.75))
        self.assertEqual(table.parse_target("p99.99 <= 3x p50"), ("<=", 3.0))
        self.assertEqual(table.parse_target("<= 1.25"), ("<=", 1.25))
        self.assertEqual(table.parse_target(">= 1.0x `everysec` in every put cell"), (">=", 1.0))
        for unread in ("none (reported)", "-", "~1.0", ">= 0.9x plain puts, >= 0.8x gets", "every cell"):
            self.assertIsNone(table.parse_target(unread), unread)

    def test_met_compares_the_figure_of_the_json(self):
        self.assertTrue(table.meets((">=", 0.9), 0.9))
        self.assertFalse(table.meets((">=", 0.9), 0.8966))  # memkv-drive-bench counts it a miss too
        self.assertTrue(table.meets(("<=", 3.0), 2.5))


if __name__ == "__main__":
    unittest.main()
