// Session (memkv::server): one client connection on the server, a
// non-blocking state machine driven by its worker's event loop. (Named apart
// from client::Connection, the client's side of the same socket.)
//
// Reading: 72-byte header, then meta (verified against the tag before
// anything is done with it), then the payload, which goes straight into
// pool space reserved for it (a PendingPut from TieredStore::Reserve) with no
// intermediate copy. Writing: responses are queued with their value bytes
// referenced in place (StoredValues, pinned in the pool or read from a drive)
// and gathered into sendmsg(2) calls.
//
// Requests on one connection run to completion in order, so responses leave
// in request order. While kMaxInflightPerConnection responses are unsent the
// connection stops parsing and reading (backpressure); once answers leave,
// the requests already buffered are parsed first (HasBufferedRequests: the
// worker runs the connection again without waiting for the socket, which may
// have nothing more to say). A fatal problem (bad auth, bad framing) queues
// an error response, stops reading and closes once it is flushed.
//
// Deadline: once authenticated, each frame must arrive whole within
// frame_timeout_ns of its first byte (CheckFrameDeadline, run by the worker's
// sweep): a client that stalls mid-put would otherwise hold the pool chunks
// reserved for its value for as long as it stays connected.
//
// Write stall: a connection that owes its client bytes, queued here or
// still in the kernel's send queue, and has had none of them taken (sent on
// from here, or acknowledged by the client's TCP) for the write-stall
// timeout is stalled (WriteStalled, run by the worker's sweep): small answers
// that all fit in the socket's send buffer are owed as much as large ones.
//
// Memory: the input buffer (InputBuffer) starts at a few KiB on the first
// read, grows while a busy client keeps it full or to hold two of the small
// frames a client sends (InputBuffer::FitFrames), and is freed, with the
// other per-request scratch, once the connection is idle (TrimIdle).
//
// Values in pieces: a put the store takes in pieces (TieredStore::StreamsPut:
// with drives, a value over a quarter of the pool) is received a window at a
// time into its ValueStream, each window written to the drives before the
// next is read; a get the store answers streamed() is sent a window at a
// time, each read from the drives once the last has left, and the
// connection reads no further request until the value is sent. So the
// connection never holds more of such a value than the window (docs/storage.md).
//
// Storage (ctx.store, a TieredStore) completes an operation inline or, when
// it needs a drive, later: the connection then parks (reads no further
// requests, so responses still leave in order), and the worker resumes it
// when the completion arrives through the worker's CompletionInbox
// (OnStorageDone). Other connections are served meanwhile. The connection
// does not know whether the store has drives.
//
// Owned by one Worker and touched only by that worker's thread.
#ifndef MEMKV_SERVER_SESSION_H_
#define MEMKV_SERVER_SESSION_H_

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/hmac.h"
#include "base/unique_fd.h"
#include "proto/frame.h"
#include "server/session_buffer.h"
#include "server/connection_limits.h"
#include "server/credentials.h"
#include "server/fleet.h"
#include "server/identities.h"
#include "server/metrics.h"
#include "server/namespace_stats.h"
#include "server/rdma_endpoint.h"
#include "server/request.h"
#include "tier/completion_inbox.h"
#include "tier/tiered_store.h"
#include "verbs/verbs.h"

namespace memkv::server {

// What every connection of a worker shares.
struct SessionContext {
  tier::TieredStore* store = nullptr;
  // The worker's inbox: completions of storage operations that waited on a
  // drive come back through it, tagged with the connection's id.
  std::shared_ptr<tier::CompletionInbox> inbox;
  // The worker's puts deferred to the end of its turn (ReplyTo::turn); null:
  // none are.
  tier::TurnCommits* turn = nullptr;
  RdmaEndpoint* rdma = nullptr;  // null: TCP only
  Nanos rdma_grant_lease_ns = 30'000'000'000;  // a slot or pin held longer closes the connection
  Nanos frame_timeout_ns = 30'000'000'000;     // a frame must arrive whole within this (CheckFrameDeadline)
  uint64_t max_value_bytes = 16ULL << 30;      // memory.max_value_size, announced at Connect
  ServerMetrics* metrics = nullptr;
  NamespaceStats* namespaces = nullptr;  // null: no per-namespace counts
  // The slot each connection holds (reserved by the worker before it builds
  // the Session, given back by ~Session). Null: no limits.
  ConnectionLimits* limits = nullptr;
  // The keys that may sign a Connect (the administrator's and the
  // tenants'); a connection takes the current snapshot at Connect and is
  // re-checked when a reload replaces it (RecheckCredential).
  const CredentialStore* credentials = nullptr;
  TenantStats* tenant_stats = nullptr;  // the tenants' counters (also reached through each TenantIdentity)
  // The cache identities served and their counts (identities.*); null: every
  // identity accepted, nothing counted.
  Identities* identities = nullptr;
  // Identity, draining and the put queue's bound; null: puts always admitted.
  FleetState* fleet = nullptr;
  // Loads before stores (network.loads_first): a turn (one OnReadable)
  // takes at most this many bytes of put payloads, so that the worker comes
  // back to connections waiting on a load; 0: no bound.
  uint64_t store_turn_bytes = 0;
};

// Ok, or TooLarge naming `limit` (the server's memory.max_value_size).
Status CheckValueSize(uint64_t size, uint64_t limit);

class Session {
 public:
  // `id` is unique for the worker's lifetime (fds are reused, ids are not).
  Session(uint64_t id, UniqueFd fd, std::string peer, const SessionContext& ctx, Nanos now);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint64_t id() const { return id_; }
  int fd() const { return fd_.get(); }
  const std::string& peer() const { return peer_; }
  bool authenticated() const { return auth_ != nullptr; }
  Nanos accepted_at() const { return accepted_at_; }
  // When queued output last made progress (or was queued on an idle socket).
  Nanos last_write_progress() const { return last_write_progress_; }
  // True when the client has taken none of the bytes it is owed for
  // `stall_ns`: answers queued here that did not move, or answers in the
  // kernel's send queue that the client's TCP has not acknowledged (it
  // stopped reading and its window closed). Run by the worker's sweep.
  bool WriteStalled(Nanos now, Nanos stall_ns);

  // Event handlers; false means "close me now".
  // `socket_ready`: the socket may have input (false: only what is buffered
  // is parsed; the worker's poll reports what arrives).
  bool OnReadable(bool socket_ready = true);
  bool OnWritable();
  // The storage operation this connection waits for has completed (the
  // worker took `done` from its inbox): runs it, which queues the response,
  // and resumes reading requests.
  bool OnStorageDone(tier::CompletionInbox::Closure& done);

  bool WantsRead() const;
  // Whether the worker polls the socket for input: while the connection
  // reads, and while it waits only for the end of the worker's turn (which
  // comes before the next poll returns), so that such a wait changes no
  // interest.
  bool PollsInput() const { return WantsRead() || (turn_wait_ && !closing_); }
  // Store-class: receiving a put's value (its payload). The worker serves
  // the other, load-class, connections first when network.loads_first is on
  // (docs/operations.md, "Loads before stores").
  bool StoreClass() const { return state_ == ReadState::kPayload; }
  // Buffered bytes can be parsed now (room freed up below the in-flight
  // limit, or the per-event budget ran out): the worker calls OnReadable
  // again without waiting for the socket.
  bool HasBufferedRequests() const;
  // Frees the input buffer and scratch of a connection that has read
  // nothing for a while and holds no partial frame.
  void TrimIdle(Nanos now);
  bool WantsWrite() const { return !out_.empty(); }
  // No more requests will be read; close once the queued output is flushed.
  bool closing() const { return closing_; }
  // Stop reading (server shutdown); responses already queued still go out.
  void BeginClose() { closing_ = true; }
  // (A value being sent in pieces is sent whole first, or cut off by a failure.)
  bool Finished() const { return closing_ && out_.empty() && !storage_wait_ && get_stream_ == nullptr; }
  // False when a grant outlived its lease (the client is gone or stuck
  // mid-transfer): the caller closes the connection, which cuts its QPs off
  // from the pool before the memory is reused.
  bool CheckGrantLeases(Nanos now);
  // False when an authenticated connection has had a frame in progress
  // (part of its header, meta or payload received) for longer than
  // ctx.frame_timeout_ns: the client is gone or stuck mid-frame. Counted and
  // logged here; the caller closes the connection, whose pending put then
  // gives its reserved pool chunks back. The time the server itself is not
  // reading the connection (parked on storage, at the in-flight limit)
  // does not count: while it lasts, the frame's clock is moved forward.
  bool CheckFrameDeadline(Nanos now);

  // Tenants (session_tenant.cc). After a reload replaced the credentials:
  // a connection whose key is still configured (the same bytes, for the
  // same tenant and prefix, or still the administrator key) takes the
  // tenant's new flags and keeps running; one whose key is gone is revoked:
  // the next request it sends is answered AuthFailed "credential removed by
  // a reload" and the connection closed. Returns false when the connection
  // was revoked (counted by the caller).
  bool RecheckCredential(const Credentials& credentials);
  // Revoked, with nothing in progress or queued: the worker closes it now
  // (the client notices the close and reconnects, which its key no longer
  // passes).
  bool RevokedAndIdle() const;
  // The tenant this connection authenticated as; null for the administrator
  // key (and before Connect).
  const TenantIdentity* tenant() const { return tenant_.get(); }

 private:
  enum class ReadState { kHeader, kMeta, kPayload };

  struct OutFrame {
    std::vector<uint8_t> head;              // fields | tag | meta
    std::vector<iovec> iov;                 // head, then payload pieces
    std::vector<tier::StoredValue> values;  // keep value bytes (pinned or owned) alive until sent
    size_t first = 0;                       // first unsent iov
  };

  // What a payload being received turns into once it is complete. Items
  // whose status is not Ok (and the whole payload when frame_error is set)
  // are read into scratch and dropped, which keeps the stream in sync.
  struct PayloadSink {
    struct Item {
      std::string key;
      uint64_t size = 0;
      uint64_t checksum = 0;           // what the client says the bytes hash to
      uint64_t received_checksum = 0;  // what they hash to, computed as they arrive
      storage::PendingPut put;
      PutOptions options;
      Status status;
      // A later item of the batch names the same key: this one is not
      // stored and is answered with that item's status (SupersedeRepeats).
      size_t superseded_by = kNotSuperseded;
    };
    static constexpr size_t kNotSuperseded = SIZE_MAX;
    std::vector<Item> items;
    bool batch = false;
    bool with_messages = false;  // BatchPutWith: answered with each item's message
    Status frame_error;
  };

  // connection.cc: I/O and framing.
  bool FillInput();
  void ParseFrames();
  bool OnHeader();
  void OnMeta();
  bool ReceivePayload();
  // Payload bytes this turn may still take: ctx.store_turn_bytes less what
  // it took (UINT64_MAX without a bound).
  uint64_t TurnRoom() const;
  void HashArrived(uint64_t n);
  void StartPayload(PayloadSink sink);
  void AddDiscard(uint64_t bytes);
  bool Flush();
  void Queue(OutFrame frame);
  // `streamed_len`: payload bytes that follow in later frames (a streamed get).
  void Respond(StatusCode status, std::string meta, std::vector<iovec> payload = {},
               std::vector<tier::StoredValue> values = {}, uint64_t checksum = 0, uint64_t streamed_len = 0);
  // The Connect answer: tagged under the shared key and bound to the client nonce.
  void RespondConnect(std::string meta, std::span<const uint8_t> client_nonce, HmacSha256& key_mac);
  void RespondError(const Status& status);
  void Fail(const Status& status);  // respond, then close
  // A frame was taken in whole: the next one's clock starts now if some of
  // it is already buffered, else with its first byte (FillInput).
  void FrameDone();
  // Bytes of the frame in progress received so far, and its whole size (0
  // while its header is incomplete).
  uint64_t FrameBytesReceived() const;
  uint64_t FrameBytesExpected() const;

  // session_ops.cc: the pipeline (request.h) and the opcodes' handlers,
  // each named in the rules table (request_rules.cc).
  friend std::span<const OpRule> AllRules();
  void HandleConnect();
  void DispatchAuthenticated();
  // An opcode without a rule: answered, its payload read and dropped.
  void RefuseUnknown();
  // The rule applied to the frame: the request decoded and scoped into
  // req_, the credential's right checked, and each put's value checked
  // against the size limit and the fleet's admission and given its room.
  // Ok, or why the whole request is refused (a batch item's own refusal
  // goes in its status).
  Status Admit(const OpRule& rule);
  Status ReserveRoom(const OpRule& rule, PutItem& item);
  void SinkItem(PutItem& put, PayloadSink::Item* item);
  void HandlePing(Request& request);
  void HandlePut(Request& request);
  void HandleBatchPut(Request& request);  // BatchPut and BatchPutWith
  void HandleMatchPrefix(Request& request);
  void HandleExists(Request& request);
  void HandleBatchExists(Request& request);
  void HandleList(Request& request);
  void HandleStat(Request& request);
  void HandleServerInfo(Request& request);
  void HandleIdentify(Request& request);
  void HandleReport(Request& request);
  void HandleRdmaPut(Request& request);  // RdmaPut and RdmaPutWith
  // RdmaSpare: a slot held for the connection's next put of its size, which
  // WRITEs into it at once and publishes it with RdmaCommitTo (docs/rdma.md).
  void HandleRdmaSpare(Request& request);
  // Ok, or why this connection may not hold a spare of `size` bytes.
  Status SpareRoom(uint64_t size) const;
  void GrantSlot(PutItem& item, bool spare);
  void HandleRdmaCommit(Request& request);
  // Every answer drops the spare slot: the client sends it once its WRITEs completed.
  void HandleRdmaCommitTo(Request& request);
  void HandleRdmaGet(Request& request);
  void GrantPin(storage::ReadHandle handle);
  void HandleRdmaRelease(Request& request);

  // session_tenant.cc: the tenant's counters, when a tenant's connection.
  // The owner's counts: its tenant's (tenants only) and its identity row's.
  void CountTenantLookups(uint64_t lookups, uint64_t hits, uint64_t bytes, uint64_t fetched);
  void CountTenantStored(uint64_t puts, uint64_t bytes);

  // session_storage.cc: requests whose storage operation may wait on a
  // drive. Each passes the store a completion that queues the response;
  // Await parks the connection while it is pending. A completion may
  // capture `this`: it runs on this worker, and is dropped if the
  // connection is closed before it arrives.
  void Await(tier::Completion completion);
  void FinishPayload();
  void SupersedeRepeats(std::vector<PayloadSink::Item>& items);
  // An empty item list with the room of the last one kept, and keeping a
  // finished one's (cleared) for the next put.
  std::vector<PayloadSink::Item> TakeSpareItems();
  void KeepSpareItems(std::vector<PayloadSink::Item>& items);
  // Per-namespace counts (NamespaceStats), when the server keeps them: a
  // lookup of `key` (found or not, `bytes` served), a value stored.
  // `fetch`: a get (the value's bytes are served), not an existence check.
  void CountLookup(std::string_view key, bool hit, uint64_t bytes = 0, bool fetch = false);
  void CountStored(std::string_view key, uint64_t bytes);
  void CommitPut(PayloadSink::Item& item);
  void CommitBatch(std::vector<PayloadSink::Item> items, bool with_messages);
  void RespondBatchPut(std::vector<PayloadSink::Item>& items, bool with_messages);
  void HandleGet(Request& request);
  void RespondGet(std::string_view key, Result<tier::StoredValue> value);
  void HandleBatchGet(Request& request);
  void RespondBatchGet(std::span<const std::string_view> keys, std::vector<Result<tier::StoredValue>>& values);
  void HandleDelete(Request& request);

  // session_stream.cc: values in pieces (see above).
  void BeginStreamPut(std::string key, QuotaHold hold);
  void ReceiveIntoWindow();
  void OnStreamPieceWritten(Status written);
  // The payload's last byte arrived (the put's pieces all written, or the
  // put failed and the rest was discarded): answer it.
  void EndPayload();
  void FinishStreamPut();
  void BeginStreamGet(tier::StoredValue value);
  // A streamed get's window has left (or it has just begun): reads the next
  // piece, or ends the stream after the last.
  void ContinueStreamGet();
  void OnStreamPieceRead(Status read);

  uint64_t id_;
  UniqueFd fd_;
  std::string peer_;
  SessionContext ctx_;
  Nanos accepted_at_;
  Nanos last_write_progress_;
  // Kernel send queue (WriteStalled): since when bytes sit unacknowledged,
  // and the acknowledged-bytes count (TCP_INFO) seen then.
  Nanos kernel_owed_since_ = 0;
  uint64_t kernel_acked_seen_ = 0;
  std::unique_ptr<proto::FrameAuth> auth_;
  // The credential this connection authenticated with: its key (re-checked
  // on reload) and, for a tenant's key, the tenant (null: administrator).
  Key32 key_{};
  std::shared_ptr<const TenantIdentity> tenant_;
  // The cache identity the connection sent (Identify): its "@<tag>/" segment
  // in every stored key it names (KeyScope), and its counters (null until
  // counted; an unidentified connection's are its tenant's "none" row).
  std::string identity_segment_;
  IdentityCounters* identity_row_ = nullptr;
  IdentityCounters* IdentityRow();
  // The connection's view of the key space, as the pipeline scopes keys.
  KeyScope Scope() const { return KeyScope(tenant_.get(), identity_segment_); }
  // tenants[].max_connections: takes one of the tenant's open-connection
  // slots until the session ends, or refuses naming the limit.
  Status AdmitTenantConnection(const TenantIdentity& tenant);
  std::atomic<uint64_t>* open_of_tenant_ = nullptr;  // the slot taken, if any
  // A load's or a store's latency into its identity row's histogram.
  void ObserveIdentityLatency(uint64_t nanos);
  bool revoked_ = false;            // its key was removed by a reload
  Request req_;                     // the current request, as the pipeline decoded and scoped it
  bool closing_ = false;
  bool logged_error_ = false;
  bool storage_wait_ = false;  // parked until a storage operation completes
  bool turn_wait_ = false;     // ... one deferred to the end of the worker's turn (tier::Completion::kTurn)
  tier::ReplyTo reply_;        // this connection at its worker's inbox

  // Input buffer for headers and metas; payloads bypass it when large.
  InputBuffer in_;
  Nanos last_read_ = 0;            // when bytes last arrived
  bool socket_drained_ = false;    // the last read came back short: nothing more to read until the next event
  uint64_t turn_payload_bytes_ = 0;  // payload bytes taken in this turn (ctx.store_turn_bytes)

  ReadState state_ = ReadState::kHeader;
  Nanos request_start_ = 0;        // when the current request's header arrived
  Nanos frame_started_ = 0;        // when the frame in progress began; 0: none (CheckFrameDeadline)
  proto::FrameHeader cur_;
  std::array<uint8_t, proto::kHeaderSize> cur_raw_{};
  std::vector<uint8_t> meta_;
  PayloadSink sink_;
  std::vector<iovec> payload_iov_;
  // SupersedeRepeats's (hash of a key, item index) list; its room is kept.
  std::vector<std::pair<size_t, size_t>> repeat_scratch_;
  // A batch's lists, kept with their room for the next batch (each holds a
  // few KiB: allocating them anew per batch costs the allocator more than
  // small lists do): the items of the last batch answered, and the commits
  // CommitBatch hands the store (left empty and kept without drives). A
  // list with room for more than kSpareItemsKept items is let go, so an
  // idle connection holds the room of at most that many items, not of the
  // largest batch it ever sent.
  static constexpr size_t kSpareItemsKept = 64;
  std::vector<PayloadSink::Item> spare_items_;  // TakeSpareItems, KeepSpareItems
  std::vector<tier::PutCommit> commit_scratch_;
  size_t payload_first_ = 0;
  uint64_t payload_left_ = 0;
  std::shared_ptr<tier::ValueStream> put_stream_;  // the put being received in pieces
  std::shared_ptr<tier::ValueStream> get_stream_;  // the value being sent in pieces
  ChecksumStream hash_;            // of the item being received
  size_t hash_item_ = 0;
  uint64_t hash_offset_ = 0;       // bytes of items[hash_item_] hashed so far
  std::unique_ptr<uint8_t[]> discard_;  // scratch for bytes we must read but not keep

  std::deque<OutFrame> out_;

  // RDMA: what a client may touch in the pool, by token. A put slot is a
  // PendingPut the client WRITEs into; a pin is a ReadHandle it READs from.
  struct Grant {
    storage::PendingPut put;  // slot (until RdmaCommit)
    storage::ReadHandle pin;  // pinned value (until RdmaRelease)
    std::string key;          // slot: where it is published (a spare: whose quotas it holds)
    bool spare = false;       // slot: granted by RdmaSpare, published by RdmaCommitTo
    uint64_t checksum = 0;    // slot: what the client says the bytes hash to
    PutOptions options;       // slot: what the put says about its value
    Nanos lease_ns = 0;       // RdmaGrantLease: the base lease plus the value's share
    Nanos expires = 0;
  };
  std::unordered_map<uint64_t, Grant> grants_;
  // Checks what landed in the slot against its checksum, then publishes it.
  void CommitSlot(Grant g);
  uint64_t next_token_ = 1;
  uint32_t spares_ = 0;  // of grants_: spare slots
  // Declared after grants_ so that they are destroyed first: once the QPs
  // are gone, the client can no longer reach the granted memory.
  std::vector<std::unique_ptr<verbs::QueuePair>> qps_;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_SESSION_H_
