// Building a Client from the config layer's ClientConfig (MEMKV_CONFIG and
// MEMKV_* resolved by LoadClientConfig). Used by Client::CreateFromEnvironment
// and by the CLI, which resolves the environment with local defaults first.
#ifndef MEMKV_CLIENT_CLIENT_FROM_CONFIG_H_
#define MEMKV_CLIENT_CLIENT_FROM_CONFIG_H_

#include <memory>

#include "client/membership.h"
#include "config/client_config.h"
#include "memkv/client.h"
#include "verbs/verbs.h"

namespace memkv::client {

Result<std::unique_ptr<Client>> CreateClient(const config::ClientConfig& config);

// Client::Create with the verbs implementation to use (tests pass a
// verbs::FakeFabric; Client::Create uses verbs::SystemProvider()) and,
// for tests that add and remove servers, the resolver to use (empty:
// Resolver::Create(options.dns_server)).
Result<std::unique_ptr<Client>> CreateClientWithVerbs(const ClientOptions& options, verbs::Provider& provider,
                                                      const ResolverFactory& resolvers = {});

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_CLIENT_FROM_CONFIG_H_
