// Command-line conventions shared by every `memkv` sub-command (docs/cli.md,
// "Options"): "--name=value" means "--name value", and "--" ends the
// options, so what follows it (a key or file that begins with '-', a file
// named --help) is never read as an option. Pure; any thread.
#ifndef MEMKV_CLI_ARGS_H_
#define MEMKV_CLI_ARGS_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::cli {

inline constexpr std::string_view kEndOfOptions = "--";

// Splits each "--name=value" before the first "--" into "--name" and
// "value"; "--" itself and everything after it are kept as given, for the
// parser to take as operands. `switches` are the options that take no value
// ("--help" is always one): "--json=yes" is InvalidArgument naming it.
Result<std::vector<std::string>> ExpandOptions(const std::vector<std::string>& args,
                                               std::initializer_list<std::string_view> switches);

// "-h" or "--help" (in option position: the caller has not yet passed "--").
bool IsHelp(std::string_view arg);

}  // namespace memkv::cli

#endif  // MEMKV_CLI_ARGS_H_
