// The `memkv` command's help as a user reads it: --version and --help, every
// command, action and option the dispatcher knows named in it, and what the
// start help says about SIGHUP. No server needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

size_t CountLines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

TEST(CliHelpTest, VersionAndHelp) {
  CommandResult r = RunMemkv({"--version"}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("memkv ", 0), 0u) << r.out;
  EXPECT_EQ(CountLines(r.out), 1u) << r.out;
  EXPECT_EQ(RunMemkv({"-V"}, {}).out, r.out);

  r = RunMemkv({"--help"}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* verb : {"start", "put", "get", "del", "exists", "Exit codes"}) {
    EXPECT_NE(r.out.find(verb), std::string::npos) << verb << " missing from:\n" << r.out;
  }
  for (const char* verb : {"start", "put", "get", "del", "exists"}) {
    CommandResult sub = RunMemkv({verb, "--help"}, {});
    EXPECT_EQ(sub.exit_code, 0) << verb << ": " << sub.err;
    EXPECT_NE(sub.out.find("Usage"), std::string::npos) << verb << ":\n" << sub.out;
  }
  // No command at all: usage on stderr, exit 2.
  r = RunMemkv({}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("Usage"), std::string::npos) << r.err;
}

// Every run of blanks and newlines as one space, so a phrase is found
// however the help text wraps it.
std::string OneLine(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\n';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out.push_back(blank ? ' ' : c);
  }
  return out;
}

// `memkv start --help` says what SIGHUP does, in the words start logs: it
// applies the config file's credentials alone, every other setting waits for
// a restart, and a reload that fails (or has no file to read) changes
// nothing. `memkv --help`'s entry for start says the same in short.
TEST(CliHelpTest, StartHelpSaysWhatSighupReloadsAndWhatItCannot) {
  const CommandResult r = RunMemkv({"start", "--help"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string help = OneLine(r.out);
  for (const char* phrase :
       {"SIGHUP re-reads the config file the server started with (--config, else /etc/memkv/config.yaml)",
        "applies its credentials alone", "network.auth_key and tenants (keys, prefixes, read_only, rdma, quotas)",
        "Connections whose key is gone are closed", "applies only on a restart",
        "\"received SIGHUP: reloaded the config: ...\" names each one that changed",
        "A file with problems, one that drops network.auth_key, or a server started without a config file changes "
        "nothing: \"received SIGHUP: reload failed, nothing changed: ...\" says why",
        "Either way the server serves on", "The options below are read at start only"}) {
    EXPECT_NE(help.find(phrase), std::string::npos) << "missing: " << phrase << "\nin:\n" << r.out;
  }
  // The sections a reload reports as needing a restart (src/server/daemon.cc).
  const size_t restart = help.find("Every other setting (");
  ASSERT_NE(restart, std::string::npos) << r.out;
  const std::string listed = help.substr(restart, help.find(')', restart) - restart);
  for (const char* section : {"network", "memory", "storage", "rdma", "log", "metrics", "events", "fleet",
                              "events_publish"}) {
    EXPECT_NE(listed.find(section), std::string::npos) << section << " missing from: " << listed;
  }
  const CommandResult top = RunMemkv({"--help"}, {});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(OneLine(top.out).find("SIGHUP re-reads the config file and applies only its credentials "
                                  "(network.auth_key, tenants); other settings need a restart"),
            std::string::npos)
      << top.out;
}

// Every command the dispatcher knows (cli::kCommands) is named in `memkv
// --help`, with each of its actions (admin reload, drain, undrain, ...) and
// each option it takes (its OptionTable, hidden ones aside) within its own
// entry; and `memkv COMMAND --help` reaches the command (exit 0, a usage).
TEST(CliHelpTest, HelpNamesEveryCommandActionAndOptionTheDispatcherKnows) {
  const CommandResult help = RunMemkv({"--help"}, {});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  std::vector<std::string> lines;
  std::istringstream in(help.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // A command's entry begins at the first line "  NAME" or "  NAME ..." and
  // runs to the next command's first line.
  auto first_line = [&](std::string_view name) {
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string head = "  " + std::string(name);
      if (lines[i] == head || lines[i].starts_with(head + " ")) return i;
    }
    return lines.size();
  };
  std::vector<size_t> starts;
  for (const cli::Command& c : cli::kCommands) starts.push_back(first_line(c.name));
  for (size_t k = 0; k < std::size(cli::kCommands); ++k) {
    const cli::Command& c = cli::kCommands[k];
    const std::string name(c.name);
    ASSERT_LT(starts[k], lines.size()) << "'" << name << "' has no entry in memkv --help:\n" << help.out;
    size_t end = lines.size();
    for (size_t s : starts) {
      if (s > starts[k] && s < end) end = s;
    }
    std::string entry;
    for (size_t i = starts[k]; i < end; ++i) entry += lines[i] + "\n";
    for (std::string_view action : c.actions) {
      bool named = false;
      for (size_t i = starts[k]; i < end; ++i) {
        const std::string& l = lines[i];
        if (!l.starts_with("  " + name + " ")) continue;
        const std::string words = l.substr(name.size() + 3);
        const std::string first = words.substr(0, words.find(' '));
        // "admin reload ..." or "drive list|inspect|verify ..."
        named |= ("|" + first + "|").find("|" + std::string(action) + "|") != std::string::npos;
      }
      EXPECT_TRUE(named) << "memkv " << name << " " << action << " missing from memkv --help:\n" << entry;
    }
    for (const auto* list : {&c.options.switches, &c.options.valued, &c.options.lists}) {
      for (std::string_view option : *list) {
        // The option as a word: "--port" is not found in "--peer-port".
        bool found = false;
        for (size_t at = entry.find(option); at != std::string::npos && !found; at = entry.find(option, at + 1)) {
          const char before = at == 0 ? ' ' : entry[at - 1];
          const char after = at + option.size() < entry.size() ? entry[at + option.size()] : ' ';
          found = (before == ' ' || before == '[' || before == '|') &&
                  !(std::isalnum(static_cast<unsigned char>(after)) || after == '-' || after == '_');
        }
        EXPECT_TRUE(found) << name << "'s option " << option << " missing from its entry in memkv --help:\n" << entry;
      }
    }
    const CommandResult sub = RunMemkv({name, "--help"}, {});
    EXPECT_EQ(sub.exit_code, 0) << name << ": " << sub.err;
    EXPECT_NE(sub.out.find("Usage"), std::string::npos) << name << ":\n" << sub.out;
  }
}

}  // namespace
}  // namespace memkv::testing
