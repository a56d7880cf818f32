// FakeServer: a small in-process MemKV server on a loopback port, for the
// client's unit tests. It speaks docs/wire-protocol.md (handshake, the
// single-key and batch opcodes over an in-memory map) and misbehaves on
// demand. Written from the protocol document, independently of the client,
// so the tests catch a client that misreads it.
//
// One thread per connection with blocking-style I/O. Test-only.
#ifndef MEMKV_CLIENT_FAKE_SERVER_H_
#define MEMKV_CLIENT_FAKE_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/hmac.h"
#include "base/unique_fd.h"
#include "memkv/status.h"
#include "proto/messages.h"

namespace memkv::client::testing {

// The key the client tests' fake servers and clients share.
inline Key32 TestKey() {
  Key32 key;
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 7);
  return key;
}

class FakeServer {
 public:
  enum class Mode {
    kNormal,
    kSilent,                // accepts, never reads or answers
    kSilentAfterHandshake,  // completes the handshake, then reads but never answers
    kBadConnectTag,         // answers Connect with a wrong tag
    kRefuseConnect,         // answers Connect with AuthFailed and a message, untagged
    kCorruptValues,         // flips a byte of every value it returns (checksum unchanged)
    kWrongRequestId,        // answers with a request id the client never used
  };

  // `port` 0: any free one; else that one (a restart on the same address).
  static std::unique_ptr<FakeServer> Start(const Key32& key, Mode mode = Mode::kNormal,
                                           uint32_t max_inflight = 128, uint16_t port = 0);
  ~FakeServer();

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  void set_mode(Mode mode) { mode_.store(mode); }
  int connections_accepted() const { return accepted_.load(); }
  int requests_seen() const { return requests_.load(); }
  size_t stored_keys();
  bool Has(const std::string& key);
  // ServerInfo's answer: by default id "fake-<port>", no weight (capacity
  // 0); set_info replaces it; set_no_info answers "unknown opcode", as a
  // server that predates ServerInfo.
  void set_info(const proto::ServerInfo& info);
  void set_no_info();
  // Puts (single and batch) answered with `code` instead of being stored
  // (kDraining, kBusy); kOk stores them again.
  void set_put_answer(StatusCode code) { put_answer_.store(code); }
  // Closes every connection and waits for their threads; the listener stays.
  void DropConnections();

 private:
  FakeServer(const Key32& key, Mode mode, uint32_t max_inflight) : key_(key), mode_(mode), max_inflight_(max_inflight) {}
  void AcceptLoop();
  void Serve(int fd);
  Status ServeFrames(int fd);

  const Key32 key_;
  std::atomic<Mode> mode_;
  const uint32_t max_inflight_;
  uint16_t port_ = 0;
  UniqueFd listener_;
  UniqueFd stop_read_, stop_write_;
  std::thread acceptor_;
  std::atomic<int> accepted_{0};
  std::atomic<int> requests_{0};
  std::atomic<StatusCode> put_answer_{StatusCode::kOk};

  std::mutex mu_;
  // Guarded by mu_.
  std::vector<UniqueFd> conns_;
  std::vector<std::thread> threads_;
  std::map<std::string, std::vector<uint8_t>, std::less<>> store_;
  std::optional<proto::ServerInfo> info_;
};

}  // namespace memkv::client::testing

#endif  // MEMKV_CLIENT_FAKE_SERVER_H_
