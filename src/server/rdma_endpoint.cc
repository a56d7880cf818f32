#include "server/rdma_endpoint.h"

#include <algorithm>
#include <limits>

#include "base/log.h"

namespace memkv::server {
namespace {

constexpr uint32_t kServerQpSendWr = 1;  // responder only: nothing is ever posted

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<proto::RemoteSegment> GrantSegments(std::span<const iovec> iov) {
  std::vector<proto::RemoteSegment> out;
  out.reserve(iov.size());
  for (const iovec& v : iov) {
    const auto base = reinterpret_cast<uint64_t>(v.iov_base);
    for (uint64_t done = 0; done < v.iov_len;) {
      const uint64_t len = std::min<uint64_t>(v.iov_len - done, kMaxGrantSegmentBytes);
      out.push_back({base + done, static_cast<uint32_t>(len)});
      done += len;
    }
  }
  return out;
}

Nanos RdmaGrantLease(Nanos base_ns, uint64_t value_bytes) {
  constexpr uint64_t kNanosPerSecond = 1'000'000'000;
  // Whole seconds first, then the remainder: no intermediate product overflows.
  const auto max = static_cast<uint64_t>(std::numeric_limits<Nanos>::max());
  const uint64_t seconds = value_bytes / kGrantLeaseFloorBytesPerSecond;
  if (seconds > max / kNanosPerSecond - 1) return std::numeric_limits<Nanos>::max();
  const uint64_t rest_ns = value_bytes % kGrantLeaseFloorBytesPerSecond * kNanosPerSecond /
                           kGrantLeaseFloorBytesPerSecond;
  const uint64_t transfer_ns = seconds * kNanosPerSecond + rest_ns;
  const uint64_t base = base_ns > 0 ? static_cast<uint64_t>(base_ns) : 0;
  if (transfer_ns > max - base) return std::numeric_limits<Nanos>::max();
  return static_cast<Nanos>(base + transfer_ns);
}

RdmaEndpoint::~RdmaEndpoint() = default;

Result<std::unique_ptr<RdmaEndpoint>> RdmaEndpoint::Create(const config::RdmaConfig& config,
                                                           storage::MemoryStore* store, verbs::Provider& provider) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<std::string> devices, provider.Devices());
  if (devices.empty()) {
    LOG_INFO_C("rdma") << "no RDMA device on this host (" << provider.WhyNoDevices()
                       << "): serving inline-bulk TCP only";
    return std::unique_ptr<RdmaEndpoint>();
  }
  if (std::find(devices.begin(), devices.end(), config.device) == devices.end()) {
    LOG_WARN_C("rdma") << "rdma.device " << config.device << " is not on this host (RDMA devices: " << Join(devices)
             << "): serving inline-bulk TCP only; set rdma.device to one of them";
    return std::unique_ptr<RdmaEndpoint>();
  }
  std::unique_ptr<RdmaEndpoint> ep(new RdmaEndpoint());
  MEMKV_ASSIGN_OR_RETURN(ep->context_, provider.Open(config.device, 1));
  const verbs::PortInfo& port = ep->context_->port();
  MEMKV_RETURN_IF_ERROR(verbs::CheckMtu(config.mtu, port, "rdma.mtu"));
  if (!port.active) {
    return FailedPrecondition("RDMA port " + port.device + " port " + std::to_string(port.port_num) +
                              " is " + port.state + ", not ACTIVE (check the link: rdma link, ibv_devinfo -d " +
                              port.device + ")");
  }
  ep->mtu_ = config.mtu;
  Result<verbs::DcbConfig> dcb = Unavailable("DCB not read: traffic_class and service_level are pinned");
  if (config.traffic_class == 0 || config.service_level == 0) dcb = verbs::ReadDcb(port.netdev);
  ep->path_ = verbs::ResolvePath(port, dcb, config.gid_index, config.traffic_class, config.service_level);
  for (const std::string& w : ep->path_.warnings) LOG_WARN_C("rdma") << w;
  for (const std::string& n : ep->path_.notes) LOG_INFO_C("rdma") << n;
  for (const verbs::GidEntry& g : port.gids) {
    if (g.index == ep->path_.gid_index) ep->gid_ = g.gid;
  }
  if (store->pool_bytes() > port.max_mr_size && port.max_mr_size != 0) {
    return FailedPrecondition("memory.max_size " + std::to_string(store->pool_bytes()) +
                              " bytes exceeds the largest region " + port.device + " can register (" +
                              std::to_string(port.max_mr_size) + " bytes); lower memory.max_size");
  }
  Result<std::unique_ptr<verbs::Registration>> pool =
      ep->context_->Register(store->pool_base(), store->pool_bytes(), /*remote=*/true);
  if (!pool.ok()) {
    return pool.status().WithContext("registering the " + std::to_string(store->pool_bytes() >> 20) +
                                     " MiB memory pool with " + port.device +
                                     " (raise the memlock limit: ulimit -l unlimited, or LimitMEMLOCK=infinity)");
  }
  ep->pool_ = std::move(pool).value();
  MEMKV_ASSIGN_OR_RETURN(ep->cq_, ep->context_->CreateCq(16));
  return ep;
}

std::string RdmaEndpoint::Describe() const {
  const verbs::PortInfo& p = port();
  return "RDMA on " + p.device + " port " + std::to_string(p.port_num) + " (netdev " +
         (p.netdev.empty() ? "?" : p.netdev) + "): mtu " + std::to_string(mtu_) + " (active " +
         std::to_string(p.active_mtu) + "), gid_index " + std::to_string(path_.gid_index) + ", traffic_class " +
         std::to_string(path_.traffic_class) + " (DSCP " + std::to_string(path_.dscp) + "), service_level " +
         std::to_string(path_.service_level) + "; pool of " + std::to_string(pool_->length() >> 20) +
         " MiB registered once";
}

proto::RdmaAnswer RdmaEndpoint::Accept(const proto::RdmaOffer& offer, const std::string& peer,
                                       std::vector<std::unique_ptr<verbs::QueuePair>>* qps) {
  proto::RdmaAnswer answer;
  if (offer.mtu != mtu_) {
    answer.result = proto::RdmaAnswerResult::kRefused;
    answer.message = "RDMA MTU mismatch: the client uses MEMKV_RDMA_MTU " + std::to_string(offer.mtu) +
                     " but this server's rdma.mtu is " + std::to_string(mtu_) +
                     "; set both ends (and the fabric) to the same value";
    LOG_WARN_C("rdma") << "refusing RDMA from " << peer << ": " << answer.message;
    return answer;
  }
  verbs::PathOptions path;
  path.mtu = mtu_;
  path.gid_index = path_.gid_index;
  path.traffic_class = path_.traffic_class;
  path.service_level = path_.service_level;
  std::vector<std::unique_ptr<verbs::QueuePair>> made;
  MutexLock lock(mu_);
  for (const proto::RdmaQp& remote : offer.qps) {
    Result<std::unique_ptr<verbs::QueuePair>> qp = context_->CreateQp(cq_.get(), kServerQpSendWr);
    Status s = qp.status();
    if (s.ok()) {
      verbs::QpAddress to;
      to.qpn = remote.qpn;
      to.psn = remote.psn;
      to.gid = offer.gid;
      s = (*qp)->Connect(to, path);
    }
    if (!s.ok()) {
      answer.result = proto::RdmaAnswerResult::kRefused;
      answer.message = "the server could not set up its RDMA queue pair: " + s.ToString();
      LOG_WARN_C("rdma") << "RDMA setup for " << peer << " failed: " << s.ToString();
      return answer;
    }
    answer.qps.push_back({(*qp)->local().qpn, (*qp)->local().psn});
    made.push_back(std::move(qp).value());
  }
  answer.result = proto::RdmaAnswerResult::kAccepted;
  answer.mtu = mtu_;
  answer.traffic_class = path_.traffic_class;
  answer.service_level = path_.service_level;
  answer.gid = gid_;
  answer.rkey = pool_->rkey();
  *qps = std::move(made);
  return answer;
}

}  // namespace memkv::server
