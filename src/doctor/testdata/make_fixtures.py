#!/usr/bin/env python3
"""Writes the recorded-host fixtures of src/doctor/testdata (README.md there).

Each fixture is a directory a FixtureProbe reads: sysfs/procfs files as the
kernel shows them on a ConnectX host, the dcbnl reply in hex (laid out byte
for byte as the kernel's dcbnl_ieee_fill writes it, the same layout
src/verbs/detect_test.cc builds), `ethtool -S` text before and after the
counter interval, and the verbs-only values. Run it after changing a fixture
here, never edit the generated files by hand:

    python3 src/doctor/testdata/make_fixtures.py

doctor_test checks that every dcb/*.hex parses and matches its builder.
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

RTM_GETDCB, NLMSG_ERROR, DCB_CMD_IEEE_GET = 78, 2, 21
DCB_ATTR_IFNAME, DCB_ATTR_IEEE, DCB_ATTR_DCBX = 1, 13, 14
DCB_ATTR_IEEE_ETS, DCB_ATTR_IEEE_PFC, DCB_ATTR_IEEE_APP_TABLE, DCB_ATTR_IEEE_APP = 1, 2, 3, 1
SEL_DSCP = 5
EOPNOTSUPP = 95


def align4(b):
    return b + b"\0" * (-len(b) % 4)


def attr(kind, payload):
    return align4(struct.pack("<HH", 4 + len(payload), kind) + payload)


def nest(kind, body):
    return struct.pack("<HH", 4 + len(body), kind) + body


def dcb_reply(ifname, apps, pfc_en):
    """RTM_GETDCB / DCB_CMD_IEEE_GET: IFNAME, IEEE{ETS, PFC, APP_TABLE}, DCBX."""
    ets = struct.pack("<BBB", 1, 8, 0) + b"\0" * 56  # willing, ets_cap, cbs, 7 x u8[8]
    pfc = struct.pack("<BBBxH2x", 8, pfc_en, 0, 0xFFFF) + b"\0" * 128  # ieee_pfc, 136 bytes
    table = b"".join(attr(DCB_ATTR_IEEE_APP, struct.pack("<BBH", SEL_DSCP, prio, dscp)) for dscp, prio in apps)
    ieee = attr(DCB_ATTR_IEEE_ETS, ets) + attr(DCB_ATTR_IEEE_PFC, pfc) + nest(DCB_ATTR_IEEE_APP_TABLE, table)
    body = struct.pack("<BBH", 0, DCB_CMD_IEEE_GET, 0) + attr(DCB_ATTR_IFNAME, ifname.encode() + b"\0")
    body += nest(DCB_ATTR_IEEE, ieee) + attr(DCB_ATTR_DCBX, bytes([0x09]))  # DCB_CAP_DCBX_VER_IEEE | HOST
    return struct.pack("<IHHII", 16 + len(body), RTM_GETDCB, 0, 7, 0) + body


def dcb_error(err):
    """NLMSG_ERROR answering the request (what a netdev without dcbnl gets)."""
    echoed = struct.pack("<IHHII", 0, RTM_GETDCB, 0, 0, 0)
    body = struct.pack("<i", -err) + echoed
    return struct.pack("<IHHII", 16 + len(body), NLMSG_ERROR, 0, 7, 0) + body


def hexlines(data):
    h = data.hex()
    return "\n".join(h[i:i + 64] for i in range(0, len(h), 64)) + "\n"


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


# mlx5 with trust dscp: all 64 DSCPs listed, DSCP d -> priority d >> 3 (26 -> 3).
MLX5_DSCP_MAP = [(d, d >> 3) for d in range(64)]

# show_gids on a ConnectX port with an IPv4 address: RoCE v1 and v2 for the
# link-local address (0, 1), then v1 and v2 for 10.0.0.1 (2, 3).
LINK_LOCAL = "fe80:0000:0000:0000:0a5c:01ff:fe02:0301"
V4 = "0000:0000:0000:0000:0000:ffff:0a00:0001"
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"
GIDS = [(LINK_LOCAL, "IB/RoCE v1"), (LINK_LOCAL, "RoCE v2"), (V4, "IB/RoCE v1"), (V4, "RoCE v2")]

MLX5_HW_COUNTERS = [
    "duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
    "req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
    "resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err",
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps", "rp_cnp_handled",
    "rp_cnp_ignored", "rx_atomic_requests", "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests",
]


def ethtool_text(values):
    names = ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_xdp_drop", "rx_out_of_buffer",
             "rx_discards_phy", "tx_discards_phy", "rx_pause_ctrl_phy", "tx_pause_ctrl_phy"]
    for p in range(8):
        names += [f"rx_prio{p}_bytes", f"rx_prio{p}_packets", f"rx_prio{p}_discards", f"tx_prio{p}_bytes",
                  f"tx_prio{p}_packets", f"rx_prio{p}_pause", f"rx_prio{p}_pause_duration", f"tx_prio{p}_pause",
                  f"tx_prio{p}_pause_duration", f"rx_prio{p}_pause_transition"]
    lines = ["NIC statistics:"] + [f"     {n}: {values.get(n, 0)}" for n in names]
    return "\n".join(lines) + "\n"


LIMITS = """Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max file size             unlimited            unlimited            bytes     
Max data size             unlimited            unlimited            bytes     
Max stack size            8388608              unlimited            bytes     
Max core file size        0                    unlimited            bytes     
Max resident set          unlimited            unlimited            bytes     
Max processes             2061362              2061362              processes 
Max open files            1048576              1048576              files     
Max locked memory         {memlock:<21}{memlock:<21}bytes     
Max address space         unlimited            unlimited            bytes     
Max file locks            unlimited            unlimited            locks     
Max pending signals       2061362              2061362              signals   
Max msgqueue size         819200               819200               bytes     
Max nice priority         0                    0                    
Max realtime priority     0                    0                    
Max realtime timeout      unlimited            unlimited            us        
"""

STATUS = """Name:\tmemkv
Umask:\t0022
State:\tR (running)
Uid:\t1000\t1000\t1000\t1000
Gid:\t1000\t1000\t1000\t1000
CapInh:\t0000000000000000
CapPrm:\t0000000000000000
CapEff:\t0000000000000000
CapBnd:\t000001ffffffffff
"""

MEMINFO = """MemTotal:       528157492 kB
MemFree:        412339876 kB
MemAvailable:   498823412 kB
HugePages_Total:   32768
HugePages_Free:    32768
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
Hugetlb:        67108864 kB
"""

CONFIG = """# The MemKV server config of this recorded host.
network:
  address: 0.0.0.0:9900
memory:
  max_size: 64 GiB
rdma:
  device: mlx5_0
  gid_index: {gid_index}
  traffic_class: 0
  service_level: 0
  mtu: 4096
storage:
  mode: memory
"""


def host(name, hostname, *, netdev_mtu=9000, active_mtu=4096, dcb=None, ecn_prios=(3,), gid_index=0,
         eth_before=None, eth_after=None, hw_before=None, hw_after=None):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    dev, nd = "mlx5_0", "enp1s0f0"
    port = f"/sys/class/infiniband/{dev}/ports/1"
    write(root, "/proc/sys/kernel/hostname", hostname + "\n")
    write(root, "/proc/meminfo", MEMINFO)
    write(root, "/proc/self/limits", LIMITS.format(memlock="unlimited"))
    write(root, "/proc/self/status", STATUS)
    write(root, port + "/state", "4: ACTIVE\n")
    write(root, port + "/link_layer", "Ethernet\n")
    for i, (gid, kind) in enumerate(GIDS):
        write(root, f"{port}/gids/{i}", gid + "\n")
        write(root, f"{port}/gid_attrs/types/{i}", kind + "\n")
        write(root, f"{port}/gid_attrs/ndevs/{i}", nd + "\n")
    for i in range(len(GIDS), 8):  # unused slots: zero GID, no type
        write(root, f"{port}/gids/{i}", ZERO + "\n")
    for c in MLX5_HW_COUNTERS:
        write(root, f"{port}/hw_counters/{c}", f"{(hw_before or {}).get(c, 0)}\n")
    for c, v in (hw_after or {}).items():
        write(root, f"/after{port}/hw_counters/{c}", f"{v}\n")
    write(root, f"/sys/class/net/{nd}/mtu", f"{netdev_mtu}\n")
    write(root, f"/sys/class/net/{nd}/operstate", "up\n")
    write(root, "/sys/class/net/lo/mtu", "65536\n")
    write(root, "/sys/class/net/lo/operstate", "unknown\n")
    for side in ("roce_np", "roce_rp"):
        for p in range(8):
            write(root, f"/sys/class/net/{nd}/ecn/{side}/enable/{p}", "1\n" if p in ecn_prios else "0\n")
    # The 64 GiB pool's 2 MiB hugepages, reserved at boot (vm.nr_hugepages).
    write(root, "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "32768\n")
    write(root, "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "32768\n")
    write(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
    write(root, f"/verbs/{dev}/1",
          f"# what only verbs reports (ibv_query_port, ibv_query_device)\nactive_mtu {active_mtu}\n"
          f"max_mtu 4096\nmax_mr_size 18446744073709551615\n")
    write(root, f"/dcb/{nd}.hex", hexlines(dcb))
    write(root, f"/ethtool/{nd}.txt", ethtool_text(eth_before or {}))
    write(root, f"/after/ethtool/{nd}.txt", ethtool_text(eth_after or eth_before or {}))
    write(root, "/etc/memkv/config.yaml", CONFIG.format(gid_index=gid_index))


# Background traffic during the interval: prio 3 carries RoCE, prio 0 the rest.
TRAFFIC_BEFORE = {"rx_packets": 9120450, "tx_packets": 8813307, "rx_bytes": 30118243361, "tx_bytes": 29400118822,
                  "rx_prio0_bytes": 118243361, "tx_prio0_bytes": 100118822, "rx_prio3_bytes": 30000000000,
                  "tx_prio3_bytes": 29300000000, "rx_prio3_pause": 1520, "tx_prio3_pause": 310}
TRAFFIC_AFTER = dict(TRAFFIC_BEFORE, rx_packets=9151211, tx_packets=8844012, rx_bytes=30243118000,
                     tx_bytes=29525002113, rx_prio0_bytes=118250112, tx_prio0_bytes=100120001,
                     rx_prio3_bytes=30124868000, tx_prio3_bytes=29424880000)
HEALTHY_DCB = dcb_reply("enp1s0f0", MLX5_DSCP_MAP, 0x08)

host("healthy-mlx5", "gpu-node-1", dcb=HEALTHY_DCB, eth_before=TRAFFIC_BEFORE, eth_after=TRAFFIC_AFTER,
     hw_after={"rx_write_requests": 30119, "rx_read_requests": 30004})
host("mtu-1500", "gpu-node-2", netdev_mtu=1500, active_mtu=1024, dcb=HEALTHY_DCB, eth_before=TRAFFIC_BEFORE,
     eth_after=TRAFFIC_AFTER)
host("gid0-rocev1", "gpu-node-3", dcb=HEALTHY_DCB, gid_index=2, eth_before=TRAFFIC_BEFORE, eth_after=TRAFFIC_AFTER)
host("no-dcb", "gpu-node-4", dcb=dcb_error(EOPNOTSUPP), eth_before=TRAFFIC_BEFORE, eth_after=TRAFFIC_AFTER)
# PFC on priority 4 (and ECN with it) while DSCP 26 still lands on 3: under
# load priority 3 drops, and the RDMA requester retransmits. The app table
# holds only the entries that were configured (dcb app add ... app-dscp-prio
# 0:0 10:1 26:3 46:5), so no DSCP at all reaches the lossless priority 4.
SPARSE_DSCP_MAP = [(0, 0), (10, 1), (26, 3), (46, 5)]
host("pfc-wrong-priority", "gpu-node-5", dcb=dcb_reply("enp1s0f0", SPARSE_DSCP_MAP, 0x10), ecn_prios=(4,),
     eth_before=TRAFFIC_BEFORE,
     eth_after=dict(TRAFFIC_AFTER, rx_prio3_discards=57, rx_discards_phy=57),
     hw_before={"out_of_sequence": 4}, hw_after={"out_of_sequence": 16, "local_ack_timeout_err": 2})
