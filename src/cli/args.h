// Command-line conventions shared by every `memkv` sub-command (docs/cli.md,
// "Options"):
// - "--name=value" means "--name value";
// - an option's value is the next word unless that word looks like an
//   option (LooksLikeOption): "--data-dir --check" is refused, as is
//   "-o --help"; such a value is written "--data-dir=--check";
// - "--" ends the options, so what follows it (a key or file that begins
//   with '-', a file named --help) is never read as an option.
// Pure; any thread.
#ifndef MEMKV_CLI_ARGS_H_
#define MEMKV_CLI_ARGS_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::cli {

inline constexpr std::string_view kEndOfOptions = "--";

// The options one sub-command takes; "-h" and "--help" are always switches.
struct OptionTable {
  std::initializer_list<std::string_view> switches = {};  // take no value (--json)
  std::initializer_list<std::string_view> valued = {};    // take exactly one (--config PATH)
  std::initializer_list<std::string_view> lists = {};     // take one or more (--drives PATH...)
  // Take exactly one, as `valued`, but are for tests and left out of the
  // usage (doctor's --fixture).
  std::initializer_list<std::string_view> hidden = {};
  // What the command's operands are called ("key", "drive path"), for the
  // hint of an unknown option; empty when it takes none.
  std::string_view operand = {};
};

// A word in option position that is an option: it begins with '-' and is
// neither "-" alone (standard input or output) nor a negative number ("-5",
// which no option takes but which is then refused for its value, naming
// the option).
bool LooksLikeOption(std::string_view word);

// Checks the words before the first "--" against `table` and splits each
// "--name=value" into "--name" and "value"; "--" itself and everything after
// it are kept as given, for the parser to take as operands. InvalidArgument,
// naming the word alone, for: an unknown option; a switch given a value
// ("--json=yes"); a valued option that is last or is followed by a word that
// looks like an option ("--data-dir --check"); a list option followed by no
// value. A value written "--name=value" is taken as it is, even "-x". After
// it succeeds, a valued option is always followed by its value and a list
// option by at least one word that does not look like an option.
Result<std::vector<std::string>> ExpandOptions(const std::vector<std::string>& args, const OptionTable& table);

// "-h" or "--help" (in option position: the caller has not yet passed "--").
bool IsHelp(std::string_view arg);

}  // namespace memkv::cli

#endif  // MEMKV_CLI_ARGS_H_
