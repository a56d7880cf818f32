// FakeFabric: an in-process implementation of the verbs seam for unit tests,
// with faults on demand.
//
// Devices are added with AddDevice (a PortInfo each). QPs of all devices of
// one fabric can be connected to each other. A posted WRITE copies the local
// bytes into the remote registration named by rkey; a READ copies the other
// way; the completion lands on the QP's CQ (and its fd() turns readable once
// armed), exactly as the NIC would report it:
//   - a remote range outside a registration with remote access, or an
//     unknown rkey              -> IBV_WC_REM_ACCESS_ERR, QP to error
//   - a local range outside the registration of lkey -> IBV_WC_LOC_PROT_ERR
//   - a QP in error             -> posts succeed and complete with
//                                  IBV_WC_WR_FLUSH_ERR, as on a NIC
//   - path MTU above the fabric's max_mtu (SetPathMaxMtu) -> the data never
//     arrives: IBV_WC_RETRY_EXC_ERR, QP to error
// Faults:
//   FailPosts(n, err)            the next n Post() calls fail with errno err
//   FailCompletions(n, status)   the next n WRs complete with `status` (no
//                                data moved), and the QP goes to error as a
//                                NIC's would; later WRs flush
//   HoldCompletions(true)        completions are kept back (data moved) until
//                                HoldCompletions(false): late completions.
//                                Held ones still report success after a
//                                SetError (the NIC had finished them).
// Accounting: LiveRegistrations(), LiveQps(), OutstandingWrs() let a test
// check that everything was given back.
//
// Thread-safe (one mutex); completions are delivered synchronously inside
// Post() unless held.
//
// Stricter than some NICs, so code that passes here passes there (details at
// the top of fake.cc): each Open() is its own protection domain (keys of one
// Context are foreign to another's QPs); a WR reaches its peer only while the
// peer QP exists, is connected back to it and is not in error (else
// IBV_WC_RETRY_EXC_ERR); a bad rkey puts the responder QP in error too; a
// full send queue (max_send_wr WRs not yet polled) fails Post() with ENOMEM;
// Arm() raises no event for completions already queued.
#ifndef MEMKV_VERBS_FAKE_H_
#define MEMKV_VERBS_FAKE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "verbs/verbs.h"

namespace memkv::verbs {

class FakeFabric final : public Provider {
 public:
  FakeFabric();
  ~FakeFabric() override;

  // A device with one port; `port.device` is its name. A default healthy
  // RoCEv2 port when only the name is given.
  void AddDevice(const PortInfo& port);
  void AddDevice(const std::string& name);
  static PortInfo HealthyPort(const std::string& name);  // ACTIVE, 4096, RoCEv2 GID 1 (IPv4)

  // Provider.
  Result<std::vector<std::string>> Devices() override;
  Result<std::unique_ptr<Context>> Open(const std::string& device, uint8_t port) override;
  // Open() fails with this status (e.g. a device that vanished) until
  // FailOpen(Status::Ok()).
  void FailOpen(Status status);

  // Faults.
  void FailPosts(int n, int err);
  void FailCompletions(int n, int status);
  void HoldCompletions(bool hold);
  void SetPathMaxMtu(uint32_t bytes);  // 0 = no limit

  // Accounting.
  size_t LiveRegistrations() const;
  size_t LiveQps() const;
  size_t OutstandingWrs() const;  // posted, completion not yet polled
  uint64_t WritesCompleted() const;
  uint64_t ReadsCompleted() const;
  uint64_t BytesMoved() const;
  // The attributes the last Connect() of any QP applied (for tests of the
  // traffic class / SL / MTU that reached the QP).
  PathOptions LastPath() const;

  struct State;  // internal, shared with the objects it hands out

 private:
  std::shared_ptr<State> state_;
};

}  // namespace memkv::verbs

#endif  // MEMKV_VERBS_FAKE_H_
