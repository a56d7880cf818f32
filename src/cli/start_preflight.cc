#include "cli/start_preflight.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "base/log.h"
#include "base/units.h"
#include "http/tls_context.h"
#include "io/socket.h"
#include "server/key_file.h"
#include "server/open_drives.h"
#include "storage/hugepages.h"

namespace memkv::cli {
namespace {

Status CheckTls(const config::NetworkConfig& n) {
  if (n.tls_cert.empty() && n.tls_key.empty()) return Status::Ok();
  Result<http::TlsContext> tls = http::TlsContext::Create(n.tls_cert, n.tls_key);
  if (!tls.ok()) return InvalidArgument("network.tls_cert/tls_key (the admin endpoint's HTTPS): " + tls.status().message());
  return Status::Ok();
}

// The pool is one mapping of memory.max_size: larger than the host's memory
// it cannot be backed (mmap refuses, or the OOM killer ends it later).
Status CheckMemory(const config::MemoryConfig& m, const PreflightOptions& options) {
  const uint64_t physical = PhysicalMemoryBytes();
  if (physical != 0 && m.max_size_bytes > physical) {
    return FailedPrecondition("memory.max_size " + FormatSize(m.max_size_bytes) + " is more than this host's memory (" +
                              FormatSize(physical) + "); lower memory.max_size (default: one eighth of memory)");
  }
  const uint64_t chunks = m.block_size_bytes == 0 ? 0 : m.max_size_bytes / m.block_size_bytes;
  if (chunks > UINT32_MAX) {
    return InvalidArgument("memory.max_size " + FormatSize(m.max_size_bytes) + " is more than " +
                           std::to_string(UINT32_MAX) + " blocks of memory.block_size " +
                           FormatSize(m.block_size_bytes) + "; raise memory.block_size");
  }
  if (options.pin_reason.empty() || !options.check_only) return Status::Ok();
  const std::string pinned = "the memory pool is pinned (" + options.pin_reason + "), so it must be 2 MiB hugepages";
  Result<storage::HugePageCounts> counts = storage::HugePageReader().Read2MiB();
  if (!counts.ok()) return FailedPrecondition(pinned + ", but their counts cannot be read: " + counts.status().message());
  const uint64_t needed = storage::HugePagesFor(m.max_size_bytes);
  if (counts->available() >= needed) return Status::Ok();
  Status short_status = storage::NotEnoughHugePages(m.max_size_bytes, *counts);
  if (options.check_only && counts->total >= needed) {
    LOG_WARN_C("start") << pinned << ": " << short_status.message()
                        << "; a running server may hold them, and they come free when it stops";
    return Status::Ok();
  }
  return FailedPrecondition(pinned + ": " + short_status.message());
}

// Without network.auth_key: an existing key file must be one start accepts.
Status CheckKeyFile(const config::NetworkConfig& n, const std::string& data_dir) {
  if (n.auth_key) return Status::Ok();
  const std::string path = data_dir + "/auth.key";
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();  // generated on first start
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", st.st_mode & 0777);
    return FailedPrecondition("auth key file " + path + " has mode " + mode +
                              ", readable by group or others; run: chmod 600 " + path);
  }
  return server::ReadAuthKeyFile(path).status();
}

}  // namespace

Status CheckPortsFree(const config::NetworkConfig& network) {
  if (network.port == 0) return Status::Ok();  // any free port: nothing to collide with
  const uint16_t ports[] = {network.port, static_cast<uint16_t>(network.port + 1)};
  const char* what[] = {"network.address", "the admin endpoint (network.address port + 1)"};
  for (size_t i = 0; i < 2; ++i) {
    // Bound and closed again at once; the server binds it for good later.
    Result<UniqueFd> probe = io::ListenTcp(network.host, ports[i], 1);
    if (!probe.ok()) {
      return Unavailable(std::string(what[i]) + " " + network.host + ":" + std::to_string(ports[i]) +
                         " cannot be bound: " + probe.status().message() +
                         " (another memkv start, or another program, holds it); nothing was created");
    }
  }
  return Status::Ok();
}

uint64_t PhysicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
}

Status Preflight(const config::ServerConfig& config, const PreflightOptions& options) {
  // Every problem at once, one line each, as the config loader reports them.
  Status first = Status::Ok();
  std::string lines;
  for (const Status& s : {CheckTls(config.network), CheckMemory(config.memory, options),
                          CheckKeyFile(config.network, options.data_dir),
                          server::CheckDrivesBeforeOpen(config.storage)}) {
    if (s.ok()) continue;
    if (first.ok()) first = s;
    lines += (lines.empty() ? "" : "\n") + s.message();
  }
  return first.ok() ? first : Status(first.code(), lines);
}

}  // namespace memkv::cli
