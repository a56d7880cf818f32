// memkv/client.h: the C++ client library.
//
// A Client talks to one or more MemKV servers over the TCP inline-bulk
// protocol (docs/wire-protocol.md). Keys are placed on servers by weighted
// rendezvous hashing over the servers the list names (re-resolved every
// discovery_interval_ms), by each server's id, so adding a server moves only
// the keys it now owns and no server has to know about the others
// (docs/fleet.md).
//
// Every operation has a deadline (ClientOptions::timeout_ms): a dead, stalled
// or unreachable server yields DeadlineExceeded or Unavailable within it,
// never a hang, and operations on other servers are unaffected. A server that
// failed is skipped for a short backoff before it is tried again: its keys
// are read from the next server in their rendezvous order (misses there, not
// errors) and puts go there.
//
// Data read back is verified against its checksum; a mismatch is reported as
// NotFound (a miss), never returned as data.
//
// Thread-safety: a Client is safe to use from many threads at once; each
// server has a pool of up to num_connections connections. A call pipelines its
// requests on the connections it takes and hands each server's back as soon
// as its requests there are answered; it never waits for one server's
// connection while holding another's.
#ifndef MEMKV_CLIENT_H_
#define MEMKV_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/async.h"
#include "memkv/identity.h"
#include "memkv/put_options.h"
#include "memkv/status.h"

namespace memkv {

// The library's version, "MAJOR.MINOR.PATCH" (the Debian package's too).
std::string_view LibraryVersion();

// Severity of a client log line. The numbers are those of MEMKV_LOG_* in
// memkv.h and of memkv.LOG_* in Python.
enum class ClientLogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };
// Short lower-case name: "debug", "info", "warn", "error", "off".
std::string_view ClientLogLevelName(ClientLogLevel level);

// Receives the client's log lines at or above ClientOptions::log_level:
// the severity, the component ("client", "rdma", ...; may be empty) and the
// message, without timestamp or newline. Called on the thread of the call
// that logs (any thread that uses the Client), possibly from several at once;
// it must not call back into the Client.
using ClientLogCallback =
    std::function<void(ClientLogLevel level, std::string_view component, std::string_view message)>;

struct ClientOptions {
  // Server-list entries: "host:port", "dns:NAME:PORT" (every address NAME
  // resolves to) or "srv:NAME" (its SRV records); docs/fleet.md.
  std::vector<std::string> servers;
  std::string auth_key_hex;          // 64 hex characters
  std::string transport = "auto";    // auto | tcp | rdma
  uint32_t num_connections = 4;      // per server
  uint32_t timeout_ms = 5000;        // deadline of every operation
  uint32_t connect_timeout_ms = 2000;
  // Membership (docs/fleet.md): how often the list is resolved again and
  // every server asked its state (0: resolved once; servers not reached yet
  // are still asked on their backoff); the DNS server for dns:/srv: entries
  // ("IP:PORT"; empty: the system's); how long after a server joins a miss
  // on it is asked again of the key's previous owner (0: never).
  uint32_t discovery_interval_ms = 10'000;
  std::string dns_server;
  // Budget of resolving one dns: or srv: entry of the list (every query it
  // takes), apart from connect_timeout_ms; host:port entries are resolved
  // by the system's getaddrinfo when connecting (docs/fleet.md).
  uint32_t resolve_timeout_ms = 2000;
  uint32_t rebalance_grace_ms = 300'000;
  // Threads that run AsyncQueue submissions (memkv/async.h): at most this
  // many batches of the client run at once; started as they are needed.
  uint32_t async_threads = 4;
  // Loads before stores: stores (puts) are shed, answered Busy for every key
  // ("... shed by the client ...") and counted in ClientStats::stores_shed,
  // rather than wait, while the recent average store latency exceeds
  // store_shed_latency_ms (one store at a time still goes, to tell when the
  // tier recovers) or store_shed_inflight stores are in flight already.
  // 0 turns each off (docs/client-library.md, "Loads before stores").
  uint32_t store_shed_latency_ms = 1000;
  uint32_t store_shed_inflight = 64;
  // RDMA (transport auto or rdma; docs/rdma.md).
  std::vector<std::string> rdma_devices;  // local HCAs to use; empty = the first one present
  uint32_t rdma_mtu = 4096;               // path MTU; must equal the server's rdma.mtu
  uint32_t rdma_retry_count = 6;          // 0..7 transport retries before IBV_WC_RETRY_EXC_ERR
  uint32_t rdma_timeout = 14;             // local ACK timeout exponent: 4.096 us * 2^n
  uint32_t rdma_qps = 2;                  // QPs per server connection, 1..16
  // Pinned RDMA path attributes; nullopt ("auto"): the source GID the client
  // detects (RoCE v2, IPv4-mapped) and the traffic class (DSCP << 2) and
  // service level the server answers with, so both ends mark alike.
  std::optional<uint32_t> rdma_gid_index;      // 0..255
  std::optional<uint32_t> rdma_traffic_class;  // 0..252, a multiple of 4
  std::optional<uint32_t> rdma_service_level;  // 0..15
  // "host:port": serve this client's metrics as Prometheus text on
  // http://host:port/metrics (MEMKV_PROMETHEUS_BIND). Empty: off. Create
  // fails, naming the address, when it cannot bind.
  std::string prometheus_bind;
  // Access log (docs/client-library.md, "Access log"): JSON lines, one per
  // operation on a sampled key, that memkv-bench --replay re-issues. Empty
  // path: off. A key is sampled when its hash falls under
  // access_log_sample (0 < x <= 1), so every operation on it is logged;
  // lines past access_log_max_lines_per_sec are dropped and counted.
  std::string access_log_path;
  double access_log_sample = 0.01;
  uint32_t access_log_max_lines_per_sec = 1000;
  // Logging (MEMKV_LOG_LEVEL): lines below log_level are dropped. Without a
  // callback the rest go to stderr, one line each with a timestamp; with one,
  // only to the callback. The default writes nothing below WARN into the
  // host program's stderr.
  ClientLogLevel log_level = ClientLogLevel::kWarn;
  ClientLogCallback log_callback;
  // What this client's blocks were computed by (memkv/identity.h; the
  // identity_* options). Empty: none, keys are stored as named.
  CacheIdentity identity;
};

// ---- Client options, described once ----
//
// Every ClientOptions field but log_callback is a client option described by
// one row of ClientOptionTable(): its name (also its YAML key in MEMKV_CONFIG,
// its Python keyword, its NIXL backend parameter), its MEMKV_* variable, its
// default, what it allows and a one-line doc. The YAML loader, the MEMKV_*
// environment (CreateFromEnvironment, the memkv CLI), memkv_options_set,
// memkv.Client(**options), the engine adapters, the kv_store backend and the
// NIXL backend all set options through SetClientOption, and Client::Create
// checks them with CheckClientOptions, so a value is read, range-checked and
// reported in the same words wherever it came from. Pure; any thread.
struct ClientOptionInfo {
  std::string_view name;          // "rdma_mtu"
  std::string_view env;           // "MEMKV_RDMA_MTU"
  std::string_view type;          // "list", "string", "integer", "choice", "host:port", "auto or integer"
  std::string_view default_text;  // as SetClientOption takes it; "" for required options and "off"
  std::string_view allowed;       // "256, 512, 1024, 2048, 4096"
  std::string_view doc;           // one line
  bool is_list = false;           // several values: comma-separated as text
  bool required = false;          // servers, auth_key: a client needs them
};

// The rows, in the order the docs list them.
std::span<const ClientOptionInfo> ClientOptionTable();
// The row of `name`, or nullptr.
const ClientOptionInfo* FindClientOption(std::string_view name);

// Sets option `name` from its text (a list option: comma-separated, blanks
// around entries trimmed; "" is the empty list). On a bad value,
// InvalidArgument "<source>: 'x' is not a transport; allowed: auto, tcp, rdma",
// where `source` says where the value came from ("MEMKV_TRANSPORT",
// "transport (NIXL parameter)"; empty: the option's name). An unknown name is
// InvalidArgument listing the options. `options` is unchanged on failure.
Status SetClientOption(ClientOptions* options, std::string_view name, std::string_view value,
                       std::string_view source = {});
// The same with a list's entries given one by one (a YAML or Python list); a
// single-valued option takes exactly one.
Status SetClientOptionList(ClientOptions* options, std::string_view name, std::span<const std::string> values,
                           std::string_view source = {});
// The option's current value as the text SetClientOption takes back
// ("auto", "4096", "a:1,b:2"); "" for an unknown name.
std::string ClientOptionText(const ClientOptions& options, std::string_view name);
// What Client::Create checks: every option against its row (required ones
// present), the first problem as InvalidArgument naming the option.
Status CheckClientOptions(const ClientOptions& options);

using ClientEnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
// Sets each option whose MEMKV_* variable `env` returns non-empty; every bad
// value is reported at once ("; "-joined), each naming its variable. Required
// options are not required here (the caller may have them from elsewhere).
Status SetClientOptionsFromEnvironment(ClientOptions* options, const ClientEnvLookup& env);
// The table as the Markdown docs/configuration.md carries (header included).
std::string ClientOptionsMarkdown();

// Per-key outcome of a batch call.
struct BatchResult {
  std::vector<Status> statuses;  // one per key, in order
  size_t present_prefix = 0;     // leading keys whose status is Ok
};

// One page of a key listing (Client::ListKeys).
struct KeyListPage {
  std::vector<std::string> keys;  // in bytewise order
  // Pass as the cursor of the next ListKeys call; empty when the listing is
  // complete.
  std::string next_cursor;
};

struct ClientStats {
  uint64_t ops = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t checksum_failures = 0;
  uint64_t timeouts = 0;
  uint64_t connections_opened = 0;

  // Per transport. An operation counts under the transport that carried its
  // value bytes: RDMA for a put or get whose bytes moved by RDMA WRITE / READ,
  // TCP for everything that rode inline (including re-issues after a
  // fallback). Exists, Delete and batch exists are control only (TCP).
  std::string transport = "tcp";   // what new operations use now: "rdma" or "tcp"
  uint64_t rdma_ops = 0;
  uint64_t rdma_bytes = 0;         // value bytes moved by RDMA WRITE / READ
  uint64_t rdma_zero_copy_ops = 0; // of rdma_ops: straight from / into registered caller memory
  uint64_t tcp_ops = 0;
  uint64_t tcp_bytes = 0;          // value bytes carried inline over TCP
  uint64_t rdma_reissued = 0;      // operations re-issued over TCP after an RDMA failure
  // Where RDMA stands: "active" (new operations use it), "fallback" (it
  // failed and the client downgraded to TCP for good), "no_device" (auto, and
  // the host has no RDMA device: a normal state, not a fallback) or "off"
  // (transport tcp).
  std::string rdma_state = "off";
  uint64_t fallbacks = 0;          // 0 or 1: the engine downgraded to TCP for good (never for no_device)
  std::string fallback_reason;     // why, as the WARN line said it (or, for no_device, the INFO line)
  // The attributes of the last RDMA connection set up: device, source GID
  // index, traffic class (DSCP), service level, MTU, QPs and server.
  std::string rdma_path;
  // Work completions that came back in error, by ibv_wc_status value
  // (12 = IBV_WC_RETRY_EXC_ERR, 5 = IBV_WC_WR_FLUSH_ERR, ...).
  std::map<int, uint64_t> completion_errors;
  // Puts whose PutOptions were dropped because their server predates them
  // (the value was stored as a plain put; logged once per server).
  uint64_t put_options_dropped = 0;
  // Membership (docs/fleet.md, "What the client shows").
  uint64_t grace_lookups = 0;      // misses asked again of the key's previous owner (grace window, draining owner)
  uint64_t grace_hits = 0;         // of grace_lookups: found there
  uint64_t stores_shed = 0;        // puts shed (answered Busy; not stored) by a busy server or by the client
  uint64_t lookups = 0;            // keys looked up (get, exists, prefix match; a batch of n counts n)
  uint64_t found = 0;              // of those, found
  uint64_t fetched = 0;            // of those found, values fetched (gets)
  uint64_t fetched_in_time = 0;    // restores the engine used (ReportRestores)
  uint64_t fetched_late = 0;       // restores that came too late (ReportRestores)
                                   // (store_shed_latency_ms, store_shed_inflight)
  uint64_t placement_changes = 0;  // new placements published (servers joined, left, changed id or weight)
  uint64_t fallback_reads = 0;     // reads and deletes asked of the next server because the owner was unreachable
  uint64_t fallback_writes = 0;    // puts stored on the next server: the owner down or draining
  uint64_t server_problems = 0;    // duplicate ids and ids that changed behind an address, as logged
  // Of rdma_ops: puts written into a spare slot the server granted ahead
  // (the WRITE and one round trip; docs/rdma.md, "Spare slots").
  uint64_t rdma_spare_puts = 0;
};

// ---- Client statistics, described once ----
//
// Every ClientStats field is one row of ClientStatsTable(): its name (the
// C++ field, the key of Python's memkv.Client.stats(), the memkv_stats_t
// field of the same name), what it holds, and which member to read. The
// client fills ClientStats row by row; memkv_client_stats and Python's
// stats() copy it row by row. Pure; any thread.
enum class ClientStatKind { kCount, kText, kByStatus };

struct ClientStatInfo {
  std::string_view name;  // "timeouts"
  ClientStatKind kind;
  std::string_view doc;   // one line
  // The member, by kind; the other two are null.
  uint64_t ClientStats::*count = nullptr;
  std::string ClientStats::*text = nullptr;
  std::map<int, uint64_t> ClientStats::*by_status = nullptr;
};

// The rows, in ClientStats order.
std::span<const ClientStatInfo> ClientStatsTable();

// One server as a client sees it (Client::Servers).
struct ServerView {
  std::string name;        // "host:port" it is reached at
  std::string source;      // the server-list entry that named it ("dns:memkv:9900")
  std::string id;          // its server id (ServerInfo); empty until known
  uint64_t weight = 0;     // placement weight in use (equal weights: 1)
  double share = 0;        // fraction of the key space it owns now, 0..1
  // "up", "pending" (id not known yet), "down" (backing off after a
  // failure), "draining", "busy", "duplicate" (its id is another server's)
  std::string state;
  std::string detail;      // why, for any state but "up"
  // The largest value it takes (its memory.max_value_size), as it announced
  // at Connect; 0 until the client has been connected to it.
  uint64_t max_value_bytes = 0;
};

class Client {
 public:
  // InvalidArgument naming the bad option (bad address, key not 64 hex, ...).
  // Resolves the server list (each dns:/srv: entry bounded by
  // resolve_timeout_ms) and asks each server its identity (in parallel,
  // bounded by connect_timeout_ms); a server that cannot be
  // reached does not fail Create: it is asked again on its backoff.
  static Result<std::unique_ptr<Client>> Create(const ClientOptions& options);
  // Options from MEMKV_CONFIG, then each option's MEMKV_* variable
  // (ClientOptionTable).
  static Result<std::unique_ptr<Client>> CreateFromEnvironment();

  virtual ~Client() = default;

  virtual Status Put(std::string_view key, std::span<const uint8_t> value) = 0;
  // NotFound on a miss.
  virtual Result<std::vector<uint8_t>> Get(std::string_view key) = 0;
  // Reads the value straight into `buffer` (no intermediate copy) and returns
  // its size. TooLarge, naming both sizes, when the buffer is too small.
  virtual Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer) = 0;
  // NotFound if the key was absent.
  virtual Status Delete(std::string_view key) = 0;
  virtual Result<bool> Exists(std::string_view key) = 0;
  // The size of the value under `key` without its bytes (an index lookup on
  // the server); NotFound on a miss. A server older than this call answers
  // ProtocolError "unknown opcode".
  virtual Result<uint64_t> ValueSize(std::string_view key) = 0;

  // Batches: keys may live on different servers; the call fans out and
  // pipelines. keys.size() == values.size() (== buffers.size()).
  virtual BatchResult BatchPut(std::span<const std::string_view> keys,
                               std::span<const std::span<const uint8_t>> values) = 0;
  // On an Ok status, (*sizes)[i] is the size of the value written into buffers[i].
  virtual BatchResult BatchGetInto(std::span<const std::string_view> keys,
                                   std::span<const std::span<uint8_t>> buffers,
                                   std::vector<size_t>* sizes) = 0;
  virtual BatchResult BatchExists(std::span<const std::string_view> keys) = 0;
  // Ok: deleted; NotFound: was absent. The deletes are pipelined over each
  // server's connections; a key named twice is deleted once (its other item
  // reports NotFound).
  virtual BatchResult BatchDelete(std::span<const std::string_view> keys) = 0;

  // A queue for submitting these batches without waiting (memkv/async.h).
  // It may outlive the client (its submissions then complete as cancelled).
  // Internal when the system refuses its eventfd.
  virtual Result<std::unique_ptr<AsyncQueue>> NewAsyncQueue() = 0;

  // The keys that start with `prefix` (empty: every key), a page at a time
  // in bytewise order: at most `page_size` (1..1024) keys that sort after
  // `cursor` (empty: from the first; then the last page's next_cursor).
  // Every placed server is asked and their pages merged; one that fails the
  // request fails the call (Unavailable, naming it). A server the client
  // has not reached (Servers(): "pending", e.g. down since Create or refusing
  // the key) or backs off from ("down") is not asked, and its keys are not
  // listed: check Servers() for such holes, as `memkv ls` does.
  // A key present for the whole listing appears exactly once; one put or
  // deleted meanwhile may or may not. Each page costs each server a scan of
  // its index (docs/wire-protocol.md, List).
  virtual Result<KeyListPage> ListKeys(std::string_view prefix, std::string_view cursor, size_t page_size) = 0;

  // Index into Servers() (as it is now) of the server that owns `key`.
  virtual size_t ServerFor(std::string_view key) const = 0;
  virtual ClientStats Stats() const = 0;
  // Every server the client knows (the servers its list names, resolved),
  // as it sees each one now (docs/fleet.md, "What the client shows").
  virtual std::vector<ServerView> Servers() const { return {}; }

  // RDMA: registers `region` with the client's RDMA device(s) once, so that
  // puts from it and GetInto / BatchGetInto into it move with no copy (the
  // NIC reads and writes it directly). Buffers of 256 KiB and more are also
  // registered on first use and cached; this makes it explicit and keeps the
  // registration until UnregisterMemory. The region must stay mapped until
  // then. Ok and nothing done when the client does not use RDMA.
  virtual Status RegisterMemory(std::span<uint8_t> region) = 0;
  // NotFound when `base` is not the start of a registered region.
  virtual Status UnregisterMemory(void* base) = 0;

  // ---- Put options and prefix matching ----
  // (Declared last so that the vtable slots of the calls above stay put.)

  // Put with what the value's options say (memkv/put_options.h): TTL,
  // retention class, parent key, block hashes. InvalidArgument naming the
  // field when an option is out of range (parent_key over kMaxKeyBytes, a
  // hash over kMaxBlockHashBytes, an unknown retention); a pin past the
  // server's pinned-bytes cap is ResourceExhausted with the server's message.
  // A server that predates options stores the value as a plain put: the
  // options are dropped, counted in ClientStats::put_options_dropped and
  // logged once per server (docs/client-library.md, "Put options").
  virtual Status PutWith(std::string_view key, std::span<const uint8_t> value, const PutOptions& options) = 0;
  // BatchPut with options: `options` is empty (plain puts) or holds one
  // PutOptions per key (InvalidArgument for every key otherwise).
  virtual BatchResult BatchPutWith(std::span<const std::string_view> keys,
                                   std::span<const std::span<const uint8_t>> values,
                                   std::span<const PutOptions> options) = 0;
  // The length of the longest leading run of `keys` that is stored: keys[0]
  // .. keys[n-1] present and keys[n] absent (keys.size() when all are). Each
  // server is asked once, in parallel, for its keys in chain order and stops
  // at its first miss. A key the client could not ask about (its server
  // unreachable or timed out) counts as a miss, as in BatchExists'
  // present_prefix. A bad key fails the call (InvalidArgument when empty,
  // TooLarge over 1024 bytes), as do more than 1024 keys (InvalidArgument).
  // A server that predates the call is asked with BatchExists instead.
  virtual Result<size_t> MatchPrefix(std::span<const std::string_view> keys) = 0;

  // ---- Cache identity and restores (docs/client-library.md) ----
  // The tag of ClientOptions::identity (CacheIdentity::Tag()); "" without one.
  virtual std::string IdentityTag() const { return ""; }
  // The engine used `in_time` blocks it fetched (it did not recompute them)
  // and got `late` more too late to use. Counted in the client's metrics and
  // sent to a server (Report) at most once a second and when the client is
  // destroyed, so the servers' memkv_identity_fetched_in_time_total and
  // _late_total show them. Never blocks on the network for long: a report
  // that cannot be sent within timeout_ms is kept for the next one.
  virtual void ReportRestores(uint64_t in_time, uint64_t late) {
    (void)in_time;
    (void)late;
  }
};

}  // namespace memkv

#endif  // MEMKV_CLIENT_H_
