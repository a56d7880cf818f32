// Command-line pieces shared by memkv-bench and memkv-drive-bench: comma
// lists, bounded counts, value sizes, the put/get op list, and the walk over
// the arguments ("--flag value" or "--flag=value"). Pure functions.
#ifndef MEMKV_BENCH_FLAGS_H_
#define MEMKV_BENCH_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::bench {

// The non-empty items of "a,b,,c" -> {a, b, c}.
std::vector<std::string> SplitComma(const std::string& text);

// A whole number in [1, max]. On failure `*error` names `flag`, the text and
// the range, calling the number a `what` ("count", "depth").
bool ParseCount(std::string_view flag, const std::string& text, uint32_t max, std::string_view what, uint32_t* out,
                std::string* error);
// A non-empty comma list of such numbers.
bool ParseCountList(std::string_view flag, const std::string& text, uint32_t max, std::string_view what,
                    std::vector<uint32_t>* out, std::string* error);
// A number of seconds in (0, max] ("0.5", "3"). On failure `*error` names
// `flag`, the text and the range.
bool ParseSeconds(std::string_view flag, const std::string& text, double max, double* out, std::string* error);
// A value size: a size as base/units.h reads it ("64KiB", "4096"), optionally
// plus more sizes ("2MiB+1", "1MiB+4KiB"), so sizes just past a power of two
// can be named. InvalidArgument naming the text; past 2^64-1 is refused.
Result<uint64_t> ParseValueSize(std::string_view text);
// The inverse for tables: FormatSize's exact unit form where there is one
// ("2 MiB"), else the largest exact KiB multiple below plus the rest in bytes
// ("2 MiB+1"), else bytes ("1000 B").
std::string FormatValueSize(uint64_t bytes);

// --ops: "put", "get" or both.
bool ParseOpList(const std::string& text, bool* put, bool* get, std::string* error);

// Walks `args`: --help/-h sets *help and stops; a flag for which `toggle`
// returns true takes no value; every other flag gets its value (the next
// argument, or after '=') through `apply`, which reports problems in
// `*error`. `is_known` tells "needs a value" from "unknown option" for a
// flag left without one. False on the first problem.
bool WalkFlags(const std::vector<std::string>& args, const std::function<bool(const std::string&)>& toggle,
               const std::function<bool(std::string_view)>& is_known,
               const std::function<bool(const std::string&, const std::string&, std::string*)>& apply, bool* help,
               std::string* error);

// WalkFlags for a program's options, none of them a switch: on a problem
// prints "<program>: <error>" and `usage` on standard error and exits 2; on
// --help prints `usage` on standard output and exits 0.
void WalkFlagsOrExit(const char* program, const char* usage, const std::vector<std::string>& args,
                     const std::function<bool(std::string_view)>& is_known,
                     const std::function<bool(const std::string&, const std::string&, std::string*)>& apply);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_FLAGS_H_
