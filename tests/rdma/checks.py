#!/usr/bin/env python3
"""Judge the MemKV Soft-RoCE scenarios from the files the guests left behind.

usage: checks.py RESULTS BOOT...   (BOOT: healthy, lossy-hop)

RESULTS/BOOT is a run-pair.sh --out directory: a/ and b/ hold each guest's
STEP.out / STEP.err / STEP.rc (the probe's stdout ends with one JSON line),
hw_LABEL.txt (rxe0 hw_counters snapshots), log, rc; switch.json has the
switch's frame counters; pair/ the signal files. Prints one PASS/FAIL line per
check, with log excerpts under each FAIL; exit status 1 when any failed.
"""
import json
import os
import sys

RESULTS = sys.argv[1]
BOOTS = sys.argv[2:]
failures = []


def read(path, default=""):
    try:
        with open(path, errors="replace") as fh:
            return fh.read()
    except OSError:
        return default


class Boot:
    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(RESULTS, name)
        self.switch = json.loads(read(os.path.join(self.dir, "switch.json"), "{}") or "{}")

    def path(self, guest, name):
        return os.path.join(self.dir, guest, name)

    def text(self, guest, name):
        return read(self.path(guest, name))

    def rc(self, guest, step):
        t = self.text(guest, step + ".rc").strip()
        return int(t) if t.lstrip("-").isdigit() else None

    def summary(self, guest, step):
        """The probe's final JSON line, or {} when there is none."""
        for line in reversed(self.text(guest, step + ".out").splitlines()):
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    return {}
        return {}

    def hw(self, guest, label):
        out = {}
        for line in self.text(guest, "hw_%s_%s.txt" % (guest, label)).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                out[parts[0]] = int(parts[1])
        return out

    def hw_delta(self, guest, before, after):
        b, a = self.hw(guest, before), self.hw(guest, after)
        return {k: a[k] - b.get(k, 0) for k in a if a[k] != b.get(k, 0)}

    def excerpt(self, guest, *names, lines=6):
        out = []
        for n in names:
            t = self.text(guest, n).rstrip().splitlines()
            if t:
                out.append("    %s/%s/%s (last %d of %d lines):" % (self.name, guest, n, min(lines, len(t)), len(t)))
                out += ["      | " + l[:400] for l in t[-lines:]]
            else:
                out.append("    %s/%s/%s: (empty or missing)" % (self.name, guest, n))
        return out


def check(boot, name, ok, detail, excerpt=()):
    tag = "%s/%s" % (boot.name, name)
    print("%s %s: %s" % ("PASS" if ok else "FAIL", tag, detail))
    if not ok:
        failures.append(tag)
        for line in excerpt:
            print(line)
    sys.stdout.flush()


def stats(s):
    return s.get("stats", {})


def step_files(step):
    return (step + ".out", step + ".err")


def check_boot(boot):
    """Both guests ran their script to the end (rc file written), and neither
    guest's emulated NIC stopped transmitting (run-pair.sh ends such a boot)."""
    stall = read(os.path.join(boot.dir, "nic-stall")).strip()
    check(boot, "nic", not stall, "the emulated NIC of " + stall if stall else
          "both guests' NICs kept transmitting (run-pair.sh saw neither sign of a stall)")
    for g in "ab":
        rc = boot.text(g, "rc").strip()
        check(boot, "guest-" + g, rc == "0", "guest %s script exit %s" % (g, rc or "missing (guest died or timed out)"),
              boot.excerpt(g, "log", lines=15) + boot.excerpt(g, "console.log", lines=10))


def check_server_ready(boot, server):
    out = boot.text("a", server + ".out")
    check(boot, "server-" + server, out.startswith("ready "),
          "memkv start (%s) in guest a printed %r" % (server, out.strip()[:60]),
          boot.excerpt("a", server + ".err", lines=10))


def check_probe_ok(boot, step):
    s = boot.summary("b", step)
    st = stats(s)
    rc = boot.rc("b", step)
    ok = rc == 0 and s.get("failed") == 0 and s.get("mismatched") == 0 and s.get("ok", 0) > 0
    check(boot, step + "/bytes", ok,
          "probe rc=%s ok=%s failed=%s mismatched=%s (every op ok and byte-exact)"
          % (rc, s.get("ok"), s.get("failed"), s.get("mismatched")), boot.excerpt("b", *step_files(step)))
    return s, st


def doctor_report(boot, step):
    """memkv doctor --json's object, or {}."""
    try:
        return json.loads(boot.text("b", step + ".out") or "{}")
    except ValueError:
        return {}


def finding(report, fid):
    for f in report.get("findings", []):
        if f.get("id") == fid:
            return f
    return {}


def healthy_doctor(boot):
    # Host checks against the real rxe0 with the config this host would run
    # (rxe0, mtu 4096, marking pinned to 104 / 3, a pool the reserved
    # hugepages cover): active MTU 4096, the RoCEv2 GID at index 1, DCB
    # unreadable on virtio but not needed (info): clean, exit 0.
    r = doctor_report(boot, "doctor-host")
    rc = boot.rc("b", "doctor-host")
    ids = {f.get("id"): f.get("severity") for f in r.get("findings", [])}
    gid = finding(r, "memkv.gid_index").get("observed", "")
    check(boot, "doctor/host", rc == 0 and r.get("device") == "rxe0" and ids.get("mtu.active") == "ok"
          and gid.startswith("gid_index 1 (auto): RoCE v2") and ids.get("dcb.read") == "info"
          and r.get("summary", {}).get("errors") == 0 and r.get("summary", {}).get("warnings") == 0,
          "rc=%s (want 0) device=%s mtu.active=%s %r dcb.read=%s errors=%s warnings=%s"
          % (rc, r.get("device"), ids.get("mtu.active"), gid, ids.get("dcb.read"),
             r.get("summary", {}).get("errors"), r.get("summary", {}).get("warnings")),
          boot.excerpt("b", "doctor-host.out", "doctor-host.err", lines=20))
    # The path check to guest a's server: RDMA carries every block with the
    # server's marking, and the switch saw that DSCP on every RoCE packet.
    r = doctor_report(boot, "doctor-peer")
    rdma, marking = finding(r, "path.rdma"), finding(r, "path.marking")
    dscps = set(boot.switch.get("roce_v2_by_dscp", {}))
    check(boot, "doctor/peer", rdma.get("severity") == "ok" and finding(r, "path.mtu").get("severity") == "ok"
          and "DSCP 26" in marking.get("observed", "") and dscps == {"26"},
          "path.rdma=%s (%s); marking %r; switch DSCPs %s"
          % (rdma.get("severity"), rdma.get("observed"), marking.get("observed"), sorted(dscps)),
          boot.excerpt("b", "doctor-peer.out", "doctor-peer.err", lines=20))


def healthy(boot):
    check_boot(boot)
    check_server_ready(boot, "s4096")

    # a. every block size over RDMA at mtu 4096.
    s, st = check_probe_ok(boot, "roundtrip")
    total = s.get("sizes_sum", 0)
    check(boot, "roundtrip/rdma-carried", st.get("rdma_ops", 0) > 0 and st.get("rdma_bytes", 0) >= total
          and st.get("tcp_bytes", -1) == 0 and st.get("fallbacks", -1) == 0,
          "rdma_ops=%s rdma_bytes=%s (>= %d, the sizes' sum) tcp_bytes=%s (== 0) fallbacks=%s transport=%s"
          % (st.get("rdma_ops"), st.get("rdma_bytes"), total, st.get("tcp_bytes"), st.get("fallbacks"),
             st.get("transport")), boot.excerpt("b", *step_files("roundtrip")))
    # Put moves each size once, Get and GetInto once each: at most 4096 value
    # bytes per packet, so at least 3 * sum / 4096 packets through client's rxe0.
    d = boot.hw_delta("b", "before", "after_roundtrip")
    moved = d.get("sent_pkts", 0) + d.get("rcvd_pkts", 0)
    need = 3 * total // 4096
    check(boot, "roundtrip/rxe-counters", total > 0 and moved >= need,
          "guest b rxe0 sent_pkts+rcvd_pkts moved by %d (>= %d); delta %s" % (moved, need, d))
    # The server pins traffic_class 104 (DSCP 26); the client applies the
    # server's, so both guests' RoCE packets carry it.
    by_src = boot.switch.get("roce_v2_by_src", {})
    roce = boot.switch.get("roce_v2", 0)
    sent = {ip: by_src.get(ip, {}) for ip in ("10.77.0.1", "10.77.0.2")}
    check(boot, "roundtrip/dscp", roce >= need and all(d and set(d) == {"26"} for d in sent.values()),
          "switch counted %d RoCEv2 packets (>= %d), DSCP by sender: server %s, client %s (want only 26)"
          % (roce, need, sent["10.77.0.1"], sent["10.77.0.2"]))

    # tcp: the same round trips with MEMKV_TRANSPORT=tcp (plumbing; no verbs).
    s, st = check_probe_ok(boot, "tcp")
    d = boot.hw_delta("b", "after_roundtrip", "after_tcp")
    check(boot, "tcp/no-rdma", st.get("rdma_ops", -1) == 0 and st.get("rdma_bytes", -1) == 0
          and st.get("tcp_bytes", 0) >= s.get("sizes_sum", 1) and d.get("sent_pkts", 0) <= 16,
          "rdma_ops=%s rdma_bytes=%s tcp_bytes=%s; guest b rxe0 sent_pkts moved by %d"
          % (st.get("rdma_ops"), st.get("rdma_bytes"), st.get("tcp_bytes"), d.get("sent_pkts", 0)))

    # c. start-up refusal at active MTU 1024.
    mtu = boot.text("b", "refusal_active_mtu.txt").strip()
    rc = boot.rc("b", "refuse4096")
    err = boot.text("b", "refuse4096.err")
    check(boot, "refusal/exit", mtu == "1024" and rc == 3,
          "netdev MTU 1500 -> rxe0 active_mtu %s; memkv start with rdma.mtu 4096 exited %s (want 3)" % (mtu, rc),
          boot.excerpt("b", "refuse4096.out", "refuse4096.err"))
    check(boot, "refusal/message", "4096" in err and "1024" in err and "exceeds the active MTU" in err,
          "stderr names 4096, 1024 and 'exceeds the active MTU'", boot.excerpt("b", "refuse4096.err"))
    out = boot.text("b", "accept1024.out")
    check(boot, "refusal/mtu1024-starts", out.startswith("ready "),
          "memkv start with rdma.mtu 1024 on the same NIC printed %r" % out.strip()[:60],
          boot.excerpt("b", "accept1024.err"))

    # d. the server dies (kill -9) under a put+get loop.
    s = boot.summary("b", "stall")
    rc = boot.rc("b", "stall")
    killed = os.path.exists(os.path.join(boot.dir, "pair", "a-killed"))
    check(boot, "stall/no-hang", rc == 0 and s.get("hang") is False and s.get("over_deadline") == 0,
          "probe rc=%s hang=%s max_latency_ms=%s deadline_ms=%s over_deadline=%s"
          % (rc, s.get("hang"), s.get("max_latency_ms"), s.get("deadline_ms"), s.get("over_deadline")),
          boot.excerpt("b", *step_files("stall")))
    check(boot, "stall/errors-seen", killed and s.get("ok_before_error", 0) > 0 and s.get("failed", 0) > 0
          and s.get("mismatched") == 0,
          "server killed=%s; %s ok ops before the first error, then %s failed (outcomes %s, first: %s)"
          % (killed, s.get("ok_before_error"), s.get("failed"), s.get("outcomes"), (s.get("first_error") or "")[:200]),
          boot.excerpt("b", *step_files("stall")) + boot.excerpt("a", "log"))


def lossy_hop_doctor(boot):
    # Across the 1514-byte hop at mtu 4096, doctor names the MTU problem.
    r = doctor_report(boot, "doctor-hop")
    rc = boot.rc("b", "doctor-hop")
    mtu = finding(r, "path.mtu")
    check(boot, "doctor/mtu-hop", rc == 2 and mtu.get("severity") == "error"
          and "IBV_WC_RETRY_EXC_ERR" in mtu.get("observed", "") and finding(r, "path.tcp").get("severity") == "ok",
          "rc=%s (want 2) path.mtu=%s: %s" % (rc, mtu.get("severity"), mtu.get("observed")),
          boot.excerpt("b", "doctor-hop.out", "doctor-hop.err", lines=20))


def lossy_hop(boot):
    check_boot(boot)
    check_server_ready(boot, "s4096")
    check_server_ready(boot, "s1024")
    dropped = boot.switch.get("roce_v2_dropped_size", 0)

    # b(iii) mtu 1024 at both ends crosses the 1514-byte hop over RDMA.
    s, st = check_probe_ok(boot, "mtu1024")
    d = boot.hw_delta("b", "before", "after_mtu1024")
    check(boot, "mtu1024/rdma-carried", st.get("rdma_bytes", 0) >= 16 << 20 and st.get("fallbacks", -1) == 0
          and st.get("tcp_bytes", -1) == 0,
          "rdma_bytes=%s (>= 16 MiB) tcp_bytes=%s fallbacks=%s; rxe0 delta %s"
          % (st.get("rdma_bytes"), st.get("tcp_bytes"), st.get("fallbacks"), d),
          boot.excerpt("b", *step_files("mtu1024")))
    # Its 16 puts are all 1 MiB: after a connection's first, each WRITEs
    # into the spare slot the previous one asked for.
    check(boot, "mtu1024/spare-slots", st.get("rdma_spare_puts", 0) > 0,
          "rdma_spare_puts=%s of 16 puts of 1 MiB" % st.get("rdma_spare_puts"),
          boot.excerpt("b", *step_files("mtu1024")))

    # b(i) auto at 4096: retries exhaust, one downgrade, nothing lost.
    s, st = check_probe_ok(boot, "auto")
    reason = st.get("fallback_reason", "")
    check(boot, "auto/fallback", st.get("fallbacks") == 1 and "IBV_WC_RETRY_EXC_ERR" in reason
          and st.get("completion_errors", {}).get("12", 0) > 0 and st.get("transport") == "tcp",
          "fallbacks=%s transport=%s completion_errors=%s reissued=%s reason=%r"
          % (st.get("fallbacks"), st.get("transport"), st.get("completion_errors"), st.get("rdma_reissued"),
             reason[:200]), boot.excerpt("b", *step_files("auto")))
    warns = [l for l in boot.text("b", "auto.err").splitlines() if "WARN" in l and "downgrading" in l]
    check(boot, "auto/warn-once", len(warns) == 1,
          "%d WARN line(s) with 'downgrading' on the client's stderr: %s" % (len(warns), warns[:2]),
          boot.excerpt("b", "auto.err"))
    retry = lambda d: d.get("retry_exceeded_err", 0) + d.get("completer_retry_err", 0)
    db = boot.hw_delta("b", "after_mtu1024", "after_rdma")
    da = boot.hw_delta("a", "before", "after")
    check(boot, "auto/rxe-retry-exhausted", dropped > 0 and retry(db) + retry(da) > 0,
          "switch dropped %d oversized RoCE frames; retry counters: guest b %s, guest a %s"
          % (dropped, {k: v for k, v in db.items() if "retry" in k or "seq" in k},
             {k: v for k, v in da.items() if "retry" in k or "seq" in k}))

    # b(ii) rdma at 4096: the caller sees the verbs status.
    s = boot.summary("b", "rdma")
    st = stats(s)
    rc = boot.rc("b", "rdma")
    text = boot.text("b", "rdma.out") + boot.text("b", "rdma.err")
    check(boot, "rdma/error-surfaces", rc == 1 and s.get("failed", 0) > 0 and "IBV_WC_RETRY_EXC_ERR" in text
          and st.get("fallbacks", -1) == 0,
          "probe rc=%s (want 1) failed=%s fallbacks=%s; IBV_WC_RETRY_EXC_ERR named: %s; first error: %s"
          % (rc, s.get("failed"), st.get("fallbacks"), "IBV_WC_RETRY_EXC_ERR" in text,
             (s.get("first_error") or "")[:200]), boot.excerpt("b", *step_files("rdma")))


for name in BOOTS:
    b = Boot(name)
    print("== %s (%s)" % (name, b.dir))
    {"healthy": healthy, "lossy-hop": lossy_hop}[name](b)
    {"healthy": healthy_doctor, "lossy-hop": lossy_hop_doctor}[name](b)

print("checks: %d failed%s" % (len(failures), (": " + " ".join(failures)) if failures else ""))
sys.exit(1 if failures else 0)
