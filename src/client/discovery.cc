// Placeholder until DNS lookups land: address entries only.
#include "client/discovery.h"

#include <algorithm>

#include "config/client_config.h"

namespace memkv::client {
namespace {

class AddressResolver final : public Resolver {
 public:
  std::vector<ResolvedServer> Resolve(std::span<const config::ServerSource> entries, uint32_t,
                                      std::vector<Status>* errors) override {
    std::vector<ResolvedServer> out;
    for (const config::ServerSource& e : entries) {
      if (e.kind != config::ServerSource::Kind::kAddress) {
        errors->push_back(Unavailable(e.text + ": DNS lookups are not available in this build"));
        continue;
      }
      out.push_back({e.host, e.port, config::ServerAddress{e.host, e.port}.ToString(), e.text});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name == b.name; }),
              out.end());
    return out;
  }
};

}  // namespace

Result<std::unique_ptr<Resolver>> Resolver::Create(const std::string& dns_server) {
  if (!dns_server.empty()) return InvalidArgument("dns_server: DNS lookups are not available in this build");
  return std::unique_ptr<Resolver>(std::make_unique<AddressResolver>());
}

}  // namespace memkv::client
