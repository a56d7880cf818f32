#include "bench/drive_options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/units.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kMinFileBytes = 16 * kMiB;
constexpr uint64_t kMaxQueueDepth = 256;

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

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

bool ParseQueueDepths(const std::string& text, DriveBenchOptions* o, std::string* error) {
  o->queue_depths.clear();
  for (const std::string& item : SplitComma(text)) {
    uint32_t n = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || ptr != item.data() + item.size() || n == 0 || n > kMaxQueueDepth) {
      *error = "--qd: '" + item + "' is not a depth between 1 and " + std::to_string(kMaxQueueDepth);
      return false;
    }
    o->queue_depths.push_back(n);
  }
  if (o->queue_depths.empty()) *error = "--qd: empty list";
  return !o->queue_depths.empty();
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

bool ParseRepeat(const std::string& text, DriveBenchOptions* o, std::string* error) {
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n == 0 || n > 100) {
    *error = "--repeat: '" + text + "' is not a count between 1 and 100";
    return false;
  }
  o->repeat = n;
  return true;
}

bool ParseOps(const std::string& text, DriveBenchOptions* o, std::string* error) {
  o->put = o->get = false;
  for (const std::string& item : SplitComma(text)) {
    if (item == "put") {
      o->put = true;
    } else if (item == "get") {
      o->get = true;
    } else {
      *error = "--ops: '" + item + "' is not put or get";
      return false;
    }
  }
  if (!o->put && !o->get) *error = "--ops: empty list";
  return o->put || o->get;
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
  if (flag == "--qd") return ParseQueueDepths(value, o, error);
  if (flag == "--seconds") return ParseSeconds(value, o, error);
  if (flag == "--repeat") return ParseRepeat(value, o, error);
  if (flag == "--ops") return ParseOps(value, o, error);
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
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return o;
    }
    if (flag == "--no-fio") {
      o.fio = false;
      continue;
    }
    if (flag == "--fio-random") {
      o.fio_random = true;
      continue;
    }
    if (flag == "--fio-unregistered") {
      o.fio_registered = false;
      continue;
    }
    if (size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      *error = IsKnownFlag(flag) ? flag + " needs a value" : "unknown option '" + flag + "'";
      return std::nullopt;
    }
    if (!ApplyFlag(flag, value, &o, error)) return std::nullopt;
  }
  return o;
}

}  // namespace memkv::bench
