#include "doctor/test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace memkv::doctor::testing {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<Json> Document() {
    std::optional<Json> v = Value(0);
    Skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  std::optional<std::string> String() {
    if (!Eat('"')) return std::nullopt;
    std::string out;
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return std::nullopt;
      char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) return std::nullopt;
          unsigned v = std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16);
          i_ += 4;
          if (v >= 0x80) return std::nullopt;  // the renderer only escapes control characters
          out += static_cast<char>(v);
          break;
        }
        default: return std::nullopt;
      }
    }
    return std::nullopt;
  }

  std::optional<Json> Value(int depth) {
    if (depth > 32) return std::nullopt;
    Skip();
    if (i_ >= s_.size()) return std::nullopt;
    Json v;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Json::Kind::kObject;
      if (Eat('}')) return v;
      do {
        std::optional<std::string> key = String();
        if (!key || !Eat(':')) return std::nullopt;
        std::optional<Json> member = Value(depth + 1);
        if (!member) return std::nullopt;
        v.object.emplace_back(std::move(*key), std::move(*member));
      } while (Eat(','));
      return Eat('}') ? std::optional<Json>(std::move(v)) : std::nullopt;
    }
    if (c == '[') {
      ++i_;
      v.kind = Json::Kind::kArray;
      if (Eat(']')) return v;
      do {
        std::optional<Json> e = Value(depth + 1);
        if (!e) return std::nullopt;
        v.array.push_back(std::move(*e));
      } while (Eat(','));
      return Eat(']') ? std::optional<Json>(std::move(v)) : std::nullopt;
    }
    if (c == '"') {
      std::optional<std::string> s = String();
      if (!s) return std::nullopt;
      v.kind = Json::Kind::kString;
      v.string = std::move(*s);
      return v;
    }
    if (Literal("null")) return v;
    if (Literal("true")) {
      v.kind = Json::Kind::kBool;
      v.boolean = true;
      return v;
    }
    if (Literal("false")) {
      v.kind = Json::Kind::kBool;
      return v;
    }
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' ||
                              s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
    }
    if (i_ == start) return std::nullopt;
    v.kind = Json::Kind::kNumber;
    v.number = std::strtod(std::string(s_.substr(start, i_ - start)).c_str(), nullptr);
    return v;
  }

  std::string_view s_;
  size_t i_ = 0;
};

const Json& NullJson() {
  static const Json kNull;
  return kNull;
}

void Drain(int fd, std::string* into, bool* open) {
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    into->append(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    *open = false;
  }
}

}  // namespace

bool Json::has(const std::string& key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return true;
  }
  return false;
}

const Json& Json::operator[](const std::string& key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return v;
  }
  return NullJson();
}

const Json& Json::operator[](size_t index) const { return index < array.size() ? array[index] : NullJson(); }

std::optional<Json> ParseJson(std::string_view text) { return Parser(text).Document(); }

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "MEMKV_", 6) != 0) env_strings.emplace_back(*e);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  ProcessResult r;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    r.err = std::string("posix_spawn: ") + std::strerror(rc);
    return r;
  }
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) Drain(out[0], &r.out, &out_open);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) Drain(err[0], &r.err, &err_open);
  }
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string ScratchDir::CopyFixture(const std::string& from, const std::string& name) const {
  std::string to = File(name);
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  return to;
}

void ScratchDir::Write(const std::string& dir, const std::string& rel, const std::string& content) {
  std::filesystem::path p = std::filesystem::path(dir + rel);
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
}

}  // namespace memkv::doctor::testing
