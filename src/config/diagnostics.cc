#include "config/diagnostics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <system_error>

#include "base/bytes.h"
#include "base/errno_text.h"
#include "base/unique_fd.h"

namespace memkv::config::internal {
namespace {

// Config files are a few KiB; the cap keeps a mistaken path such as
// /dev/zero from reading forever.
constexpr size_t kMaxConfigFileBytes = 16u << 20;

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

void Diagnostics::NoteLocation(const std::string& field, int line, int column) {
  // yaml-cpp reports -1 for nodes it could not place.
  if (line < 0 || column < 0) return;
  locations_[field] = Location{line, column};
}

void Diagnostics::Fail(const std::string& field, std::string text) {
  failed_.insert(field);
  Add({field}, std::move(text));
}

void Diagnostics::Violation(const std::vector<std::string>& fields, std::string text) {
  for (const std::string& field : fields) {
    if (IsFailed(field)) return;
  }
  Add(fields, std::move(text));
}

void Diagnostics::Add(const std::vector<std::string>& fields, std::string text) {
  problems_.push_back(Problem{Locate(fields), std::move(text)});
}

bool Diagnostics::IsFailed(std::string_view field) const {
  while (true) {
    if (failed_.find(field) != failed_.end()) return true;
    if (field.empty()) return false;
    field = ParentPath(field);
  }
}

std::optional<Diagnostics::Location> Diagnostics::Locate(
    const std::vector<std::string>& fields) const {
  // Exact fields first: a rule on (storage.mode, storage.drives) should point
  // at drives when mode is absent, not at the enclosing "storage:" line.
  for (const std::string& field : fields) {
    auto it = locations_.find(field);
    if (it != locations_.end()) return it->second;
  }
  for (const std::string& field : fields) {
    for (std::string_view p = ParentPath(field); !p.empty(); p = ParentPath(p)) {
      auto it = locations_.find(p);
      if (it != locations_.end()) return it->second;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Diagnostics::lines() const {
  std::vector<const Problem*> order;
  for (const Problem& p : problems_) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Problem* a, const Problem* b) {
    if (!a->location || !b->location) return a->location.has_value() && !b->location;
    return *a->location < *b->location;
  });
  std::vector<std::string> out;
  for (const Problem* p : order) {
    std::string line;
    if (!source_.empty()) {
      line = source_;
      if (p->location) {
        line += ":" + std::to_string(p->location->line + 1) + ":" +
                std::to_string(p->location->column + 1);
      }
      line += ": ";
    }
    out.push_back(line + p->text);
  }
  return out;
}

Status Diagnostics::ToStatus() const { return JoinProblems(lines()); }

Status JoinProblems(const std::vector<std::string>& lines) {
  if (lines.empty()) return Status::Ok();
  std::string message;
  for (const std::string& line : lines) {
    if (!message.empty()) message += '\n';
    message += line;
  }
  return InvalidArgument(std::move(message));
}

std::string_view ParentPath(std::string_view path) {
  size_t cut = path.find_last_of(".[");
  return cut == std::string_view::npos ? std::string_view() : path.substr(0, cut);
}

std::optional<std::string_view> ClosestName(std::string_view name,
                                            std::span<const std::string_view> allowed) {
  std::optional<std::string_view> best;
  size_t best_distance = 0;
  for (std::string_view candidate : allowed) {
    size_t d = EditDistance(name, candidate);
    if (!best || d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  // Beyond about a third of the word the "suggestion" is a different word.
  size_t limit = std::max<size_t>(2, name.size() / 3);
  if (!best || best_distance > limit || best_distance >= name.size()) return std::nullopt;
  return best;
}

std::string JoinNames(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

Result<std::vector<uint8_t>> ParseAuthKeyHex(std::string_view text) {
  constexpr std::string_view kAllowed =
      "; allowed: exactly 64 hex characters (a 32-byte key, e.g. from `openssl rand -hex 32`)";
  if (text.size() != 2 * kAuthKeyBytes) {
    return InvalidArgument("a key of " + std::to_string(text.size()) + " characters" +
                           std::string(kAllowed));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(text[i]))) {
      return InvalidArgument("not hex at character " + std::to_string(i + 1) +
                             std::string(kAllowed));
    }
  }
  std::optional<std::vector<uint8_t>> key = HexDecode(text);
  if (!key) return InvalidArgument("not hex" + std::string(kAllowed));
  return std::move(*key);
}

Result<std::string> ReadConfigFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return IoError("open '" + path + "': " + ErrnoMessage(errno));
  std::string text;
  char buffer[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError("read '" + path + "': " + ErrnoMessage(errno));
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxConfigFileBytes) {
      return IoError("read '" + path + "': larger than 16 MiB; not a config file");
    }
  }
}

}  // namespace memkv::config::internal
