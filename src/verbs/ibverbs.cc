// SystemProvider(): the verbs seam over rdma-core's libibverbs, loaded at
// run time (ibverbs_api.h): without it the host simply has no RDMA devices.
//
// Ownership: a Context owns a DeviceHandle (ibv_context + PD) through a
// shared_ptr, and every Registration, CompletionQueue and QueuePair it makes
// holds another reference, so the PD and the device stay open until the
// last child is gone even if the caller drops the Context first. Children are
// destroyed by their owners (QP before its CQ, per verbs.h); the handle then
// deallocates the PD and closes the device, in that order.
//
// Errors name the call, the device (and the QPN where there is one) and
// errno, e.g. "ibv_modify_qp(RTR) on rxe0 qpn 0x11: Invalid argument (EINVAL)".
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "base/errno_text.h"
#include "base/log.h"
#include "verbs/ibverbs_api.h"
#include "verbs/verbs.h"

namespace memkv::verbs {

// The kWc* constants are ibv_wc_status values (verbs_common.cc names them).
static_assert(kWcSuccess == IBV_WC_SUCCESS && kWcLocLenErr == IBV_WC_LOC_LEN_ERR &&
              kWcLocQpOpErr == IBV_WC_LOC_QP_OP_ERR && kWcLocProtErr == IBV_WC_LOC_PROT_ERR &&
              kWcWrFlushErr == IBV_WC_WR_FLUSH_ERR && kWcRemInvReqErr == IBV_WC_REM_INV_REQ_ERR &&
              kWcRemAccessErr == IBV_WC_REM_ACCESS_ERR && kWcRemOpErr == IBV_WC_REM_OP_ERR &&
              kWcRetryExcErr == IBV_WC_RETRY_EXC_ERR && kWcRnrRetryExcErr == IBV_WC_RNR_RETRY_EXC_ERR &&
              kWcGeneralErr == IBV_WC_GENERAL_ERR && IBV_WC_TM_RNDV_INCOMPLETE == 23);

namespace {

// The loaded libibverbs. Every object below exists only after
// SysProvider::Open found the library, so the table is there when they call.
const IbverbsApi& Api() { return *LoadIbverbs(); }

// Most verbs calls return the errno value; a few return -1 and set errno.
int ErrOf(int ret) { return ret > 0 ? ret : (errno != 0 ? errno : EIO); }

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", v);
  return buf;
}

uint32_t MtuBytes(ibv_mtu mtu) {
  int v = static_cast<int>(mtu);
  return v >= IBV_MTU_256 && v <= IBV_MTU_4096 ? 128u << v : 0;
}

ibv_mtu MtuEnum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    default:
      return IBV_MTU_4096;
  }
}

const char* PortStateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

// The opened device and its one protection domain, shared by the Context and
// everything it creates.
struct DeviceHandle {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  PortInfo port;

  DeviceHandle() = default;
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  ~DeviceHandle() {
    if (pd != nullptr) {
      int rc = Api().dealloc_pd(pd);
      if (rc != 0) LOG_WARN_C("verbs") << "ibv_dealloc_pd on " << port.device << ": " << ErrnoText(ErrOf(rc));
    }
    if (ctx != nullptr) {
      int rc = Api().close_device(ctx);
      if (rc != 0) LOG_WARN_C("verbs") << "ibv_close_device(" << port.device << "): " << ErrnoText(ErrOf(rc));
    }
  }
};

class SysRegistration final : public Registration {
 public:
  SysRegistration(std::shared_ptr<DeviceHandle> dev, ibv_mr* mr) : dev_(std::move(dev)), mr_(mr) {}
  ~SysRegistration() override {
    int rc = Api().dereg_mr(mr_);
    if (rc != 0) LOG_WARN_C("verbs") << "ibv_dereg_mr on " << dev_->port.device << ": " << ErrnoText(ErrOf(rc));
  }
  SysRegistration(const SysRegistration&) = delete;
  SysRegistration& operator=(const SysRegistration&) = delete;

  uint8_t* addr() const override { return static_cast<uint8_t*>(mr_->addr); }
  uint64_t length() const override { return mr_->length; }
  uint32_t lkey() const override { return mr_->lkey; }
  uint32_t rkey() const override { return mr_->rkey; }

 private:
  std::shared_ptr<DeviceHandle> dev_;  // first declared: released last
  ibv_mr* mr_;
};

class SysCompletionQueue final : public CompletionQueue {
 public:
  SysCompletionQueue(std::shared_ptr<DeviceHandle> dev, ibv_comp_channel* channel, ibv_cq* cq)
      : dev_(std::move(dev)), channel_(channel), cq_(cq) {}
  ~SysCompletionQueue() override {
    // Every event taken from the channel must be acked before the CQ goes.
    DrainEvents();
    int rc = Api().destroy_cq(cq_);
    if (rc != 0) {
      LOG_WARN_C("verbs") << "ibv_destroy_cq on " << dev_->port.device << ": " << ErrnoText(ErrOf(rc))
               << " (a QueuePair still uses it?)";
    }
    rc = Api().destroy_comp_channel(channel_);
    if (rc != 0) LOG_WARN_C("verbs") << "ibv_destroy_comp_channel on " << dev_->port.device << ": " << ErrnoText(ErrOf(rc));
  }
  SysCompletionQueue(const SysCompletionQueue&) = delete;
  SysCompletionQueue& operator=(const SysCompletionQueue&) = delete;

  int fd() const override { return channel_->fd; }

  Status Arm() override {
    int rc = ibv_req_notify_cq(cq_, 0);
    if (rc != 0) return Internal("ibv_req_notify_cq on " + dev_->port.device + ": " + ErrnoText(ErrOf(rc)));
    return Status::Ok();
  }

  void DrainEvents() override {
    unsigned events = 0;
    for (;;) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (Api().get_cq_event(channel_, &ev_cq, &ev_ctx) != 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          LOG_WARN_C("verbs") << "ibv_get_cq_event on " << dev_->port.device << ": " << ErrnoText(errno);
        }
        break;
      }
      ++events;
    }
    if (events > 0) Api().ack_cq_events(cq_, events);
  }

  Result<size_t> Poll(std::span<Completion> out) override {
    size_t done = 0;
    ibv_wc wc[16];
    while (done < out.size()) {
      int want = static_cast<int>(std::min<size_t>(out.size() - done, 16));
      int n = ibv_poll_cq(cq_, want, wc);
      if (n < 0) return Internal("ibv_poll_cq on " + dev_->port.device + ": returned " + std::to_string(n));
      for (int i = 0; i < n; ++i) {
        Completion& c = out[done++];
        c.wr_id = wc[i].wr_id;
        c.status = static_cast<int>(wc[i].status);
        c.opcode = wc[i].opcode == IBV_WC_RDMA_READ ? WrOpcode::kRead : WrOpcode::kWrite;
        c.byte_len = wc[i].byte_len;
        c.vendor_err = wc[i].vendor_err;
        c.qp_num = wc[i].qp_num;
      }
      if (n < want) break;
    }
    return done;
  }

  ibv_cq* cq() const { return cq_; }

 private:
  std::shared_ptr<DeviceHandle> dev_;
  ibv_comp_channel* channel_;
  ibv_cq* cq_;
};

class SysQueuePair final : public QueuePair {
 public:
  SysQueuePair(std::shared_ptr<DeviceHandle> dev, ibv_qp* qp, uint32_t psn)
      : dev_(std::move(dev)), qp_(qp), psn_(psn) {}
  ~SysQueuePair() override {
    // After ibv_destroy_qp returns the NIC no longer touches our buffers.
    int rc = Api().destroy_qp(qp_);
    if (rc != 0) LOG_WARN_C("verbs") << "ibv_destroy_qp on " << Where() << ": " << ErrnoText(ErrOf(rc));
  }
  SysQueuePair(const SysQueuePair&) = delete;
  SysQueuePair& operator=(const SysQueuePair&) = delete;

  QpAddress local() const override {
    QpAddress a;
    a.qpn = qp_->qp_num;
    a.psn = psn_;
    return a;  // gid left zero: the caller fills it from PortInfo.gids
  }

  Status Connect(const QpAddress& remote, const PathOptions& path) override {
    if (!IsValidMtu(path.mtu)) {
      return InvalidArgument("path MTU " + std::to_string(path.mtu) + " on " + Where() +
                             " is not one of 256, 512, 1024, 2048, 4096");
    }
    const PortInfo& port = dev_->port;

    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.pkey_index = 0;
    init.port_num = port.port_num;
    init.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    MEMKV_RETURN_IF_ERROR(Modify("INIT", &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));

    ibv_qp_attr rtr{};
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = MtuEnum(path.mtu);
    rtr.dest_qp_num = remote.qpn;
    rtr.rq_psn = remote.psn & 0xffffff;
    rtr.max_dest_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(path.max_rd_atomic, port.max_qp_rd_atom));
    rtr.min_rnr_timer = 12;
    rtr.ah_attr.is_global = 1;
    std::memcpy(rtr.ah_attr.grh.dgid.raw, remote.gid.data(), remote.gid.size());
    rtr.ah_attr.grh.sgid_index = static_cast<uint8_t>(path.gid_index);
    rtr.ah_attr.grh.traffic_class = path.traffic_class;
    rtr.ah_attr.grh.hop_limit = 64;
    rtr.ah_attr.grh.flow_label = 0;
    rtr.ah_attr.sl = path.service_level;
    rtr.ah_attr.src_path_bits = 0;
    rtr.ah_attr.port_num = port.port_num;
    MEMKV_RETURN_IF_ERROR(Modify("RTR", &rtr,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));

    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    rts.timeout = path.timeout;
    rts.retry_cnt = path.retry_count;
    rts.rnr_retry = 7;
    rts.sq_psn = psn_;
    rts.max_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(path.max_rd_atomic, port.max_qp_init_rd_atom));
    return Modify("RTS", &rts,
                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC);
  }

  Status Post(const WorkRequest& wr) override {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(wr.local);
    sge.length = wr.length;
    sge.lkey = wr.lkey;
    ibv_send_wr swr{};
    swr.wr_id = wr.wr_id;
    swr.sg_list = &sge;
    swr.num_sge = 1;
    swr.opcode = wr.opcode == WrOpcode::kRead ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    swr.send_flags = IBV_SEND_SIGNALED;
    swr.wr.rdma.remote_addr = wr.remote_addr;
    swr.wr.rdma.rkey = wr.rkey;
    ibv_send_wr* bad = nullptr;
    errno = 0;
    int rc = ibv_post_send(qp_, &swr, &bad);
    if (rc != 0) {
      const char* op = wr.opcode == WrOpcode::kRead ? "RDMA_READ" : "RDMA_WRITE";
      return Unavailable(std::string("ibv_post_send(") + op + ", " + std::to_string(wr.length) + " bytes) on " +
                         Where() + ": " + ErrnoText(ErrOf(rc)));
    }
    return Status::Ok();
  }

  Status SetError() override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    return Modify("ERR", &attr, IBV_QP_STATE);
  }

 private:
  std::string Where() const { return dev_->port.device + " qpn " + Hex(qp_->qp_num); }

  Status Modify(const char* step, ibv_qp_attr* attr, int mask) {
    errno = 0;
    int rc = Api().modify_qp(qp_, attr, mask);
    if (rc != 0) {
      return Unavailable(std::string("ibv_modify_qp(") + step + ") on " + Where() + ": " + ErrnoText(ErrOf(rc)));
    }
    return Status::Ok();
  }

  std::shared_ptr<DeviceHandle> dev_;
  ibv_qp* qp_;
  uint32_t psn_;
};

class SysContext final : public Context {
 public:
  explicit SysContext(std::shared_ptr<DeviceHandle> dev) : dev_(std::move(dev)) {}

  const PortInfo& port() const override { return dev_->port; }

  Result<std::unique_ptr<Registration>> Register(void* addr, uint64_t length, bool remote) override {
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (remote) access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    errno = 0;
    ibv_mr* mr = Api().reg_mr(dev_->pd, addr, length, access);
    if (mr == nullptr) {
      int err = ErrOf(0);
      return Unavailable("ibv_reg_mr(" + std::to_string(length) + " bytes, " + (remote ? "remote" : "local") +
                         " access) on " + dev_->port.device + ": " + ErrnoText(err) +
                         (err == ENOMEM || err == EFAULT ? " (check ulimit -l, the locked-memory limit)" : ""));
    }
    return std::unique_ptr<Registration>(new SysRegistration(dev_, mr));
  }

  Result<std::unique_ptr<CompletionQueue>> CreateCq(uint32_t depth) override {
    errno = 0;
    ibv_comp_channel* channel = Api().create_comp_channel(dev_->ctx);
    if (channel == nullptr) {
      return Unavailable("ibv_create_comp_channel on " + dev_->port.device + ": " + ErrnoText(ErrOf(0)));
    }
    int flags = ::fcntl(channel->fd, F_GETFL);
    if (flags < 0 || ::fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      int err = errno;
      Api().destroy_comp_channel(channel);
      return Internal("fcntl(O_NONBLOCK) on the completion channel of " + dev_->port.device + ": " + ErrnoText(err));
    }
    errno = 0;
    ibv_cq* cq = Api().create_cq(dev_->ctx, static_cast<int>(depth), nullptr, channel, 0);
    if (cq == nullptr) {
      int err = ErrOf(0);
      Api().destroy_comp_channel(channel);
      return Unavailable("ibv_create_cq(depth " + std::to_string(depth) + ") on " + dev_->port.device + ": " +
                         ErrnoText(err));
    }
    return std::unique_ptr<CompletionQueue>(new SysCompletionQueue(dev_, channel, cq));
  }

  Result<std::unique_ptr<QueuePair>> CreateQp(CompletionQueue* cq, uint32_t max_send_wr) override {
    auto* sys_cq = dynamic_cast<SysCompletionQueue*>(cq);
    if (sys_cq == nullptr) return InvalidArgument("CreateQp on " + dev_->port.device + ": not a CQ of this provider");
    ibv_qp_init_attr attr{};
    attr.send_cq = sys_cq->cq();
    attr.recv_cq = sys_cq->cq();
    attr.cap.max_send_wr = max_send_wr;
    attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    errno = 0;
    ibv_qp* qp = Api().create_qp(dev_->pd, &attr);
    if (qp == nullptr) {
      return Unavailable("ibv_create_qp(RC, max_send_wr " + std::to_string(max_send_wr) + ") on " +
                         dev_->port.device + ": " + ErrnoText(ErrOf(0)));
    }
    return std::unique_ptr<QueuePair>(new SysQueuePair(dev_, qp, RandomPsn()));
  }

 private:
  uint32_t RandomPsn() {
    std::random_device rd;
    return rd() & 0xffffff;
  }

  std::shared_ptr<DeviceHandle> dev_;
};

// Reads the GID table of `port` into info->gids (valid entries only) and the
// port's netdev.
void ReadGids(ibv_context* ctx, uint8_t port, int gid_tbl_len, PortInfo* info) {
  for (int i = 0; i < gid_tbl_len; ++i) {
    ibv_gid_entry entry{};
    errno = 0;
    int rc = Api().query_gid_ex(ctx, port, static_cast<uint32_t>(i), &entry, 0, sizeof(entry));
    if (rc != 0) {
      int err = ErrOf(rc);
      // ENODATA / EINVAL: an empty slot, the normal case for most indices.
      if (err != ENODATA && err != EINVAL && err != ENOENT) {
        LOG_DEBUG_C("verbs") << "ibv_query_gid_ex(" << info->device << " port " << int(port) << " index " << i
                  << "): " << ErrnoText(err);
      }
      continue;
    }
    GidEntry e;
    e.index = static_cast<uint32_t>(i);
    std::memcpy(e.gid.data(), entry.gid.raw, e.gid.size());
    if (std::all_of(e.gid.begin(), e.gid.end(), [](uint8_t b) { return b == 0; })) continue;
    switch (entry.gid_type) {
      case IBV_GID_TYPE_IB:
        e.type = GidType::kIb;
        break;
      case IBV_GID_TYPE_ROCE_V1:
        e.type = GidType::kRoceV1;
        break;
      case IBV_GID_TYPE_ROCE_V2:
        e.type = GidType::kRoceV2;
        break;
      default:
        continue;
    }
    if (entry.ndev_ifindex != 0) {
      char name[IF_NAMESIZE] = {};
      if (if_indextoname(entry.ndev_ifindex, name) != nullptr) e.netdev = name;
    }
    if (info->netdev.empty() && !e.netdev.empty()) info->netdev = e.netdev;
    info->gids.push_back(std::move(e));
  }
  if (info->netdev.empty()) {
    std::ifstream in("/sys/class/infiniband/" + info->device + "/ports/" + std::to_string(port) +
                     "/gid_attrs/ndevs/0");
    std::string name;
    if (in && std::getline(in, name)) info->netdev = name;
  }
}

class SysProvider final : public Provider {
 public:
  Result<std::vector<std::string>> Devices() override {
    std::string why;
    if (LoadIbverbs(&why) == nullptr) {
      // No rdma-core on this host: no devices, as with rdma-core and no NIC.
      LOG_DEBUG_C("verbs") << why;
      return std::vector<std::string>{};
    }
    errno = 0;
    int num = 0;
    ibv_device** list = Api().get_device_list(&num);
    if (list == nullptr) {
      if (errno == ENOSYS || errno == 0) return std::vector<std::string>{};  // no RDMA support at all
      return Unavailable("ibv_get_device_list: " + ErrnoText(errno));
    }
    std::vector<std::string> names;
    for (int i = 0; i < num; ++i) names.emplace_back(Api().get_device_name(list[i]));
    Api().free_device_list(list);
    return names;
  }

  std::string WhyNoDevices() override {
    std::string why;
    return LoadIbverbs(&why) == nullptr ? why : "ibv_get_device_list found none";
  }

  Result<std::unique_ptr<Context>> Open(const std::string& device, uint8_t port) override {
    std::string why;
    if (LoadIbverbs(&why) == nullptr) return Unavailable("RDMA device " + device + ": " + why);
    errno = 0;
    int num = 0;
    ibv_device** list = Api().get_device_list(&num);
    if (list == nullptr && errno != ENOSYS && errno != 0) {
      return Unavailable("ibv_get_device_list: " + ErrnoText(errno));
    }
    ibv_device* found = nullptr;
    std::string present;
    for (int i = 0; i < num; ++i) {
      std::string name = Api().get_device_name(list[i]);
      if (name == device) found = list[i];
      present += (present.empty() ? "" : ", ") + name;
    }
    auto dev = std::make_shared<DeviceHandle>();
    dev->port.device = device;
    dev->port.port_num = port;
    if (found != nullptr) {
      errno = 0;
      dev->ctx = Api().open_device(found);
    }
    int open_err = errno;
    if (list != nullptr) Api().free_device_list(list);
    if (found == nullptr) {
      return NotFound("RDMA device " + device + " not found; " +
                      (present.empty() ? std::string("no RDMA devices present (is a driver loaded? for Soft-RoCE: "
                                                     "rdma link add rxe0 type rxe netdev eth0)")
                                       : "present: " + present));
    }
    if (dev->ctx == nullptr) return Unavailable("ibv_open_device(" + device + "): " + ErrnoText(open_err ? open_err : EIO));

    errno = 0;
    dev->pd = Api().alloc_pd(dev->ctx);
    if (dev->pd == nullptr) return Unavailable("ibv_alloc_pd on " + device + ": " + ErrnoText(ErrOf(0)));

    ibv_device_attr dattr{};
    int rc = Api().query_device(dev->ctx, &dattr);
    if (rc != 0) return Unavailable("ibv_query_device(" + device + "): " + ErrnoText(ErrOf(rc)));
    if (port < 1 || port > dattr.phys_port_cnt) {
      return NotFound("port " + std::to_string(port) + " of " + device + " does not exist (it has " +
                      std::to_string(dattr.phys_port_cnt) + ")");
    }
    PortInfo& info = dev->port;
    info.max_mr_size = dattr.max_mr_size;
    info.max_qp_rd_atom = static_cast<uint32_t>(dattr.max_qp_rd_atom);
    info.max_qp_init_rd_atom = static_cast<uint32_t>(dattr.max_qp_init_rd_atom);

    ibv_port_attr pattr{};
    rc = QueryPort(Api(), dev->ctx, port, &pattr);
    if (rc != 0) return Unavailable("ibv_query_port(" + device + ", " + std::to_string(port) + "): " + ErrnoText(ErrOf(rc)));
    info.active = pattr.state == IBV_PORT_ACTIVE;
    info.state = PortStateName(pattr.state);
    info.active_mtu = MtuBytes(pattr.active_mtu);
    info.max_mtu = MtuBytes(pattr.max_mtu);
    info.ethernet = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
    ReadGids(dev->ctx, port, pattr.gid_tbl_len, &info);
    return std::unique_ptr<Context>(new SysContext(std::move(dev)));
  }
};

}  // namespace

Provider& SystemProvider() {
  static SysProvider* provider = new SysProvider();  // stateless; never destroyed
  return *provider;
}

}  // namespace memkv::verbs
