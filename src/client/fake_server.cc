#include "client/fake_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "base/checksum.h"
#include "io/socket.h"
#include "proto/frame.h"
#include "proto/messages.h"

namespace memkv::client::testing {
namespace {

Nanos Far() { return MonotonicNanos() + 60'000'000'000; }

std::string_view AsView(const std::vector<uint8_t>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Sends one response frame. `auth` null: an untagged (zero tag) answer.
Status Respond(int fd, proto::FrameAuth* auth, const proto::FrameHeader& request, StatusCode status,
               const std::string& meta, const std::vector<uint8_t>& payload = {},
               uint64_t checksum = 0, uint64_t request_id_offset = 0) {
  proto::FrameHeader h;
  h.opcode = request.opcode;
  h.flags = proto::kFlagResponse;
  h.request_id = request.request_id + request_id_offset;
  h.status = status;
  h.meta_len = static_cast<uint32_t>(meta.size());
  h.payload_len = payload.size();
  h.payload_checksum = checksum;
  std::vector<uint8_t> head(proto::kHeaderSize + meta.size());
  proto::EncodeFields(h, head.data());
  std::memcpy(head.data() + proto::kHeaderSize, meta.data(), meta.size());
  if (auth != nullptr) {
    Tag tag = auth->SignNext(head.data(), {head.data() + proto::kHeaderSize, meta.size()});
    std::memcpy(head.data() + proto::kFieldsSize, tag.data(), tag.size());
  }
  iovec iov[2] = {{head.data(), head.size()}, {const_cast<uint8_t*>(payload.data()), payload.size()}};
  return io::SendAll(fd, std::span<iovec>(iov, payload.empty() ? 1 : 2), Far());
}

struct Frame {
  uint8_t raw[proto::kHeaderSize];
  proto::FrameHeader header;
  std::vector<uint8_t> meta;
};

Status ReadFrameHead(int fd, Frame* f) {
  MEMKV_RETURN_IF_ERROR(io::RecvAll(fd, f->raw, sizeof(f->raw), Far()));
  MEMKV_RETURN_IF_ERROR(proto::DecodeFields(f->raw, &f->header));
  f->meta.resize(f->header.meta_len);
  if (!f->meta.empty()) MEMKV_RETURN_IF_ERROR(io::RecvAll(fd, f->meta.data(), f->meta.size(), Far()));
  return Status::Ok();
}

}  // namespace

std::unique_ptr<FakeServer> FakeServer::Start(const Key32& key, Mode mode, uint32_t max_inflight, uint16_t port) {
  std::unique_ptr<FakeServer> server(new FakeServer(key, mode, max_inflight));
  Result<UniqueFd> listener = io::ListenTcp("127.0.0.1", port, 64);
  if (!listener.ok()) return nullptr;
  server->listener_ = std::move(listener).value();
  server->port_ = io::LocalPort(server->listener_.get()).value();
  server->info_ = proto::ServerInfo{.id = "fake-" + std::to_string(server->port_)};
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return nullptr;
  server->stop_read_.Reset(pipe_fds[0]);
  server->stop_write_.Reset(pipe_fds[1]);
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

FakeServer::~FakeServer() {
  char byte = 0;
  (void)::write(stop_write_.get(), &byte, 1);
  acceptor_.join();
  DropConnections();
}

size_t FakeServer::stored_keys() {
  std::lock_guard<std::mutex> lock(mu_);
  return store_.size();
}

bool FakeServer::Has(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return store_.count(key) != 0;
}

void FakeServer::set_info(const proto::ServerInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  info_ = info;
}

void FakeServer::set_no_info() {
  std::lock_guard<std::mutex> lock(mu_);
  info_.reset();
}

void FakeServer::DropConnections() {
  std::vector<std::thread> threads;
  std::vector<UniqueFd> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (UniqueFd& fd : conns_) ::shutdown(fd.get(), SHUT_RDWR);
    threads.swap(threads_);
    conns.swap(conns_);
  }
  for (std::thread& t : threads) t.join();
  // `conns` closes the sockets here, after their threads are gone.
}

void FakeServer::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    accepted_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    conns_.emplace_back(fd);
    if (mode_.load() == Mode::kSilent) continue;  // hold it open, say nothing
    threads_.emplace_back([this, fd] {
      (void)ServeFrames(fd);
      ::shutdown(fd, SHUT_RDWR);  // the client sees EOF; the fd closes in DropConnections
    });
  }
}

Status FakeServer::ServeFrames(int fd) {
  Result<std::unique_ptr<HmacSha256>> master = HmacSha256::Create(key_);
  MEMKV_RETURN_IF_ERROR(master.status());
  Frame f;
  MEMKV_RETURN_IF_ERROR(ReadFrameHead(fd, &f));
  Tag tag;
  std::memcpy(tag.data(), f.raw + proto::kFieldsSize, tag.size());
  if (f.header.opcode != static_cast<uint8_t>(proto::Opcode::kConnect) || f.meta.size() != proto::kNonceSize ||
      !TagsEqual(proto::ConnectTag(**master, f.raw, f.meta, {}), tag)) {
    return Respond(fd, nullptr, f.header, StatusCode::kAuthFailed, "Connect tag does not verify");
  }
  if (mode_.load() == Mode::kRefuseConnect) {
    return Respond(fd, nullptr, f.header, StatusCode::kAuthFailed,
                   "Connect tag does not verify: the client's auth key differs from the server's");
  }
  proto::ConnectResponse hello;
  MEMKV_RETURN_IF_ERROR(RandomBytes(hello.server_nonce.data(), hello.server_nonce.size()));
  hello.max_inflight = max_inflight_;
  const std::string hello_meta = proto::EncodeConnectResponse(hello);
  {
    proto::FrameHeader h;
    h.opcode = f.header.opcode;
    h.flags = proto::kFlagResponse;
    h.request_id = f.header.request_id;
    h.meta_len = static_cast<uint32_t>(hello_meta.size());
    std::vector<uint8_t> head(proto::kHeaderSize + hello_meta.size());
    proto::EncodeFields(h, head.data());
    std::memcpy(head.data() + proto::kHeaderSize, hello_meta.data(), hello_meta.size());
    Tag t = proto::ConnectTag(**master, head.data(), {head.data() + proto::kHeaderSize, hello_meta.size()},
                              f.meta);
    if (mode_.load() == Mode::kBadConnectTag) t[0] ^= 1;
    std::memcpy(head.data() + proto::kFieldsSize, t.data(), t.size());
    iovec iov{head.data(), head.size()};
    MEMKV_RETURN_IF_ERROR(io::SendAll(fd, std::span<iovec>(&iov, 1), Far()));
  }
  std::array<uint8_t, proto::kNonceSize> client_nonce;
  std::memcpy(client_nonce.data(), f.meta.data(), client_nonce.size());
  MEMKV_ASSIGN_OR_RETURN(proto::SessionKeys keys, proto::DeriveSessionKeys(key_, client_nonce, hello.server_nonce));
  MEMKV_ASSIGN_OR_RETURN(auto auth, proto::FrameAuth::Create(keys.server_to_client, keys.client_to_server));

  for (;;) {
    MEMKV_RETURN_IF_ERROR(ReadFrameHead(fd, &f));
    std::memcpy(tag.data(), f.raw + proto::kFieldsSize, tag.size());
    if (!auth->VerifyNext(f.raw, f.meta, tag)) {
      return Respond(fd, auth.get(), f.header, StatusCode::kAuthFailed, "frame tag does not verify");
    }
    std::vector<uint8_t> payload(f.header.payload_len);
    if (!payload.empty()) MEMKV_RETURN_IF_ERROR(io::RecvAll(fd, payload.data(), payload.size(), Far()));
    requests_.fetch_add(1);
    const Mode mode = mode_.load();
    if (mode == Mode::kSilentAfterHandshake) continue;
    const uint64_t id_offset = mode == Mode::kWrongRequestId ? 1000 : 0;
    auto corrupt = [&](std::vector<uint8_t>& value) {
      if (mode == Mode::kCorruptValues && !value.empty()) value[0] ^= 0x5a;
    };
    const auto& req = f.header;
    std::unique_lock<std::mutex> lock(mu_);
    switch (static_cast<proto::Opcode>(req.opcode)) {
      case proto::Opcode::kServerInfo: {
        std::optional<proto::ServerInfo> info = info_;
        lock.unlock();
        if (!info) {
          MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kProtocolError,
                                        "unknown opcode " + proto::OpcodeName(req.opcode)));
        } else {
          MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kOk, proto::EncodeServerInfo(*info)));
        }
        break;
      }
      case proto::Opcode::kPut: {
        if (const StatusCode answer = put_answer_.load(); answer != StatusCode::kOk) {
          lock.unlock();
          MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, answer,
                                        answer == StatusCode::kBusy ? "server is busy" : "server is draining"));
          break;
        }
        if (Checksum(payload.data(), payload.size()) != req.payload_checksum) {
          lock.unlock();
          return Respond(fd, auth.get(), req, StatusCode::kCorruption, "payload checksum mismatch");
        }
        store_[std::string(AsView(f.meta))] = std::move(payload);
        lock.unlock();
        MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kOk, "", {}, 0, id_offset));
        break;
      }
      case proto::Opcode::kGet: {
        auto it = store_.find(AsView(f.meta));
        if (it == store_.end()) {
          lock.unlock();
          MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kNotFound, "", {}, 0, id_offset));
          break;
        }
        std::vector<uint8_t> value = it->second;
        lock.unlock();
        uint64_t sum = Checksum(value.data(), value.size());
        corrupt(value);
        MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kOk, "", value, sum, id_offset));
        break;
      }
      case proto::Opcode::kDelete:
      case proto::Opcode::kExists: {
        auto it = store_.find(AsView(f.meta));
        bool found = it != store_.end();
        if (found && req.opcode == static_cast<uint8_t>(proto::Opcode::kDelete)) store_.erase(it);
        lock.unlock();
        MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, found ? StatusCode::kOk : StatusCode::kNotFound,
                                      "", {}, 0, id_offset));
        break;
      }
      case proto::Opcode::kBatchPut: {
        std::vector<proto::PutItem> items;
        Status s = proto::DecodeBatchPutRequest(f.meta, req.payload_len, &items);
        if (!s.ok()) {
          lock.unlock();
          return Respond(fd, auth.get(), req, s.code(), s.message());
        }
        std::vector<StatusCode> statuses;
        size_t at = 0;
        for (const proto::PutItem& item : items) {
          if (Checksum(payload.data() + at, item.value_len) != item.checksum) {
            lock.unlock();
            return Respond(fd, auth.get(), req, StatusCode::kCorruption, "payload checksum mismatch");
          }
          const StatusCode answer = put_answer_.load();
          if (answer == StatusCode::kOk) {
            store_[std::string(item.key)].assign(payload.begin() + at, payload.begin() + at + item.value_len);
          }
          at += item.value_len;
          statuses.push_back(answer);
        }
        lock.unlock();
        MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kOk, proto::EncodeStatusList(statuses),
                                      {}, 0, id_offset));
        break;
      }
      case proto::Opcode::kBatchGet:
      case proto::Opcode::kBatchExists: {
        std::vector<std::string_view> batch_keys;
        Status s = proto::DecodeKeyList(f.meta, &batch_keys);
        if (!s.ok()) {
          lock.unlock();
          return Respond(fd, auth.get(), req, s.code(), s.message());
        }
        std::vector<StatusCode> statuses;
        std::vector<proto::GetItem> items;
        std::vector<uint8_t> values;
        for (std::string_view key : batch_keys) {
          auto it = store_.find(key);
          if (it == store_.end()) {
            statuses.push_back(StatusCode::kNotFound);
            items.push_back({StatusCode::kNotFound, 0, 0});
            continue;
          }
          statuses.push_back(StatusCode::kOk);
          std::vector<uint8_t> value = it->second;
          items.push_back({StatusCode::kOk, value.size(), Checksum(value.data(), value.size())});
          corrupt(value);
          values.insert(values.end(), value.begin(), value.end());
        }
        lock.unlock();
        if (req.opcode == static_cast<uint8_t>(proto::Opcode::kBatchExists)) {
          MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kOk, proto::EncodeStatusList(statuses),
                                        {}, 0, id_offset));
        } else {
          MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kOk,
                                        proto::EncodeBatchGetResponse(items), values, 0, id_offset));
        }
        break;
      }
      default:
        lock.unlock();
        MEMKV_RETURN_IF_ERROR(Respond(fd, auth.get(), req, StatusCode::kProtocolError,
                                      "unknown opcode " + proto::OpcodeName(req.opcode)));
    }
  }
}

}  // namespace memkv::client::testing
