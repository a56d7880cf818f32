// A C++ user of the installed libmemkv (tests/install/install_test.sh): built
// with find_package(memkv) and memkv::memkv outside the source tree.
// Usage: app HOST:PORT AUTH_KEY_HEX; exit 0 when every check holds.
#include <memkv/client.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

void Check(bool ok, const char* what, const memkv::Status& status = {}) {
  if (ok) return;
  std::fprintf(stderr, "app.cc: %s failed: %s\n", what, status.ToString().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: app HOST:PORT AUTH_KEY_HEX\n");
    return 2;
  }
  memkv::ClientOptions options;
  options.servers = {argv[1]};
  options.auth_key_hex = argv[2];
  options.transport = "tcp";
  auto client = memkv::Client::Create(options);
  Check(client.ok(), "Client::Create", client.status());

  std::vector<uint8_t> value(1 << 20);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<uint8_t>(i * 31);
  memkv::Status put = (*client)->Put("cxx-key", value);
  Check(put.ok(), "Put", put);
  std::vector<uint8_t> buffer(value.size());
  auto size = (*client)->GetInto("cxx-key", buffer);
  Check(size.ok() && *size == value.size() && buffer == value, "GetInto", size.status());
  auto miss = (*client)->Get("absent");
  Check(miss.status().code() == memkv::StatusCode::kNotFound, "Get of an absent key", miss.status());

  const std::string_view keys[] = {"cxx-key", "absent"};
  memkv::BatchResult exists = (*client)->BatchExists(keys);
  Check(exists.present_prefix == 1 && exists.statuses[1].code() == memkv::StatusCode::kNotFound, "BatchExists");
  Check(memkv::StatusCodeName(memkv::StatusCode::kTooLarge) == "TooLarge", "StatusCodeName");
  Check(!memkv::LibraryVersion().empty(), "LibraryVersion");
  std::printf("c++ app ok (libmemkv %.*s)\n", static_cast<int>(memkv::LibraryVersion().size()),
              memkv::LibraryVersion().data());
  return 0;
}
