// Command-line pieces shared by memkv-bench and memkv-drive-bench: comma
// lists, bounded counts, the put/get op list, and the walk over the
// arguments ("--flag value" or "--flag=value"). Pure functions.
#ifndef MEMKV_BENCH_FLAGS_H_
#define MEMKV_BENCH_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_FLAGS_H_
