#include "bench/drive_options.h"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/units.h"
#include "bench/flags.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kMinFileBytes = 16 * kMiB;
constexpr uint32_t kMaxQueueDepth = 256;

// Sizes that O_DIRECT and fio's --bs take as they are: multiples of 4 KiB.
bool ParseSizeList(const std::string& text, DriveBenchOptions* o, std::string* error) {
  o->sizes_bytes.clear();
  for (const std::string& item : SplitComma(text)) {
    Result<uint64_t> size = ParseSize(item);
    if (!size.ok() || *size == 0 || *size % (4 * kKiB) != 0 || *size > kGiB) {
      *error = "--sizes: '" + item + "' is not a multiple of 4 KiB between 4 KiB and 1 GiB";
      return false;
    }
    o->sizes_bytes.push_back(*size);
  }
  if (o->sizes_bytes.empty()) *error = "--sizes: empty list";
  return !o->sizes_bytes.empty();
}

bool ParseSeconds(const std::string& text, DriveBenchOptions* o, std::string* error) {
  char* end = nullptr;
  double s = std::strtod(text.c_str(), &end);
  // fio's --runtime is given in whole milliseconds.
  if (text.empty() || *end != '\0' || !std::isfinite(s) || s < 0.01 || s > 3600) {
    *error = "--seconds: '" + text + "' is not a number of seconds in [0.01, 3600]";
    return false;
  }
  o->seconds = s;
  return true;
}

bool ParseOneSize(const std::string& flag, const std::string& text, uint64_t min_bytes, uint64_t* out,
                  std::string* error) {
  Result<uint64_t> size = ParseSize(text);
  if (!size.ok() || *size < min_bytes || *size % (4 * kKiB) != 0) {
    *error = flag + ": '" + text + "' is not a multiple of 4 KiB of at least " + FormatSize(min_bytes);
    return false;
  }
  *out = *size;
  return true;
}

bool IsKnownFlag(std::string_view flag) {
  for (std::string_view known : {"--dir", "--file-size", "--block-size", "--sizes", "--qd", "--seconds", "--repeat",
                                 "--ops", "--json", "--fio"}) {
    if (flag == known) return true;
  }
  return false;
}

bool ApplyFlag(const std::string& flag, const std::string& value, DriveBenchOptions* o, std::string* error) {
  if (flag == "--sizes") return ParseSizeList(value, o, error);
  if (flag == "--qd") return ParseCountList(flag, value, kMaxQueueDepth, "depth", &o->queue_depths, error);
  if (flag == "--seconds") return ParseSeconds(value, o, error);
  if (flag == "--repeat") return ParseCount(flag, value, 100, "count", &o->repeat, error);
  if (flag == "--ops") return ParseOpList(value, &o->put, &o->get, error);
  if (flag == "--file-size") return ParseOneSize(flag, value, kMinFileBytes, &o->file_size_bytes, error);
  if (flag == "--block-size") return ParseOneSize(flag, value, 4 * kKiB, &o->block_size_bytes, error);
  if (flag == "--dir") {
    o->dir = value;
  } else if (flag == "--json") {
    o->json_path = value;
  } else if (flag == "--fio") {
    o->fio_path = value;
  } else {
    *error = "unknown option '" + flag + "'";
    return false;
  }
  if (value.empty()) *error = flag + ": empty value";
  return !value.empty();
}

}  // namespace

std::optional<DriveBenchOptions> ParseDriveOptions(const std::vector<std::string>& args, bool* help,
                                                   std::string* error) {
  DriveBenchOptions o;
  o.sizes_bytes = {64 * kKiB, 256 * kKiB, kMiB, 4 * kMiB, 16 * kMiB};
  o.queue_depths = {1, 4, 16};
  auto toggle = [&o](const std::string& flag) {
    if (flag == "--no-fio") o.fio = false;
    else if (flag == "--fio-random") o.fio_random = true;
    else if (flag == "--fio-unregistered") o.fio_registered = false;
    else if (flag == "--each-sync") o.each_sync = true;
    else return false;
    return true;
  };
  auto apply = [&o](const std::string& flag, const std::string& value, std::string* err) {
    return ApplyFlag(flag, value, &o, err);
  };
  if (!WalkFlags(args, toggle, IsKnownFlag, apply, help, error)) return std::nullopt;
  return o;
}

}  // namespace memkv::bench
