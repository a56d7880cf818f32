// The commands of `memkv` and the options each takes: main() dispatches
// through kCommands (a word that is not in it is an unknown command), each
// command's parser checks its words against its OptionTable, and
// tests/cli_test.cc checks that `memkv --help` names every command, action
// and option listed here. A new command or option goes here first.
// Pure data (initialized before main, read-only after); any thread.
#ifndef MEMKV_CLI_COMMANDS_H_
#define MEMKV_CLI_COMMANDS_H_

#include <initializer_list>
#include <string_view>

#include "cli/args.h"

namespace memkv::cli {

inline const OptionTable kStartOptions{
    .switches = {"--check"},
    .valued = {"--config", "--data-dir", "--log-level", "--workers", "--handshake-timeout-ms",
               "--write-stall-timeout-ms", "--address", "--port"}};
inline const OptionTable kSetupOptions{
    .switches = {"--force", "--idempotent"},
    .valued = {"--address", "--rdma", "--block-size", "--file-size", "--journal-size", "--encryption-key-file"},
    .lists = {"--drives"},
    .operand = "drive path"};
inline const OptionTable kDriveOptions{.switches = {"--json", "--allow-degraded"},
                                           .valued = {"--config"},
                                           .lists = {"--drives"},
                                           .operand = "drive path"};
inline const OptionTable kAdminOptions{.switches = {"--json", "--insecure"},
                                           .valued = {"--cacert", "--timeout-ms", "--key-file", "--server"},
                                           .operand = "address"};
inline const OptionTable kStatsOptions{.switches = {"--json", "--insecure"},
                                       .valued = {"--cacert", "--timeout-ms", "--server"},
                                       .operand = "address"};
inline const OptionTable kDoctorOptions{
    .switches = {"--json"},
    .valued = {"--config", "--device", "--netdev", "--port", "--interval-ms", "--peer", "--peer-blocks"},
    .hidden = {"--fixture"}};
inline const OptionTable kPutOptions{.valued = {"--ttl", "--retention", "--parent"}, .operand = "key"};
inline const OptionTable kGetOptions{.valued = {"-o", "--output"}, .operand = "key"};
inline const OptionTable kKeyOperandsOnly{.operand = "key"};
inline const OptionTable kLsOptions{.switches = {"--by-identity"}, .operand = "key"};

// One command: its name, the actions it takes as its first word (admin
// status, drive list; none for most), and its options.
struct Command {
  std::string_view name;
  std::initializer_list<std::string_view> actions;
  const OptionTable& options;
};

inline const Command kCommands[] = {
    {"start", {}, kStartOptions},
    {"setup", {}, kSetupOptions},
    {"drive", {"list", "inspect", "verify"}, kDriveOptions},
    {"admin", {"status", "reload", "drain", "undrain"}, kAdminOptions},
    {"stats", {}, kStatsOptions},
    {"doctor", {}, kDoctorOptions},
    {"put", {}, kPutOptions},
    {"get", {}, kGetOptions},
    {"del", {}, kKeyOperandsOnly},
    {"exists", {}, kKeyOperandsOnly},
    {"match-prefix", {}, kKeyOperandsOnly},
    {"ls", {}, kLsOptions},
};

// The command named `name`; null when there is none.
inline const Command* FindCommand(std::string_view name) {
  for (const Command& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace memkv::cli

#endif  // MEMKV_CLI_COMMANDS_H_
