// `memkv stats` and `memkv ls --by-identity` as a user runs them against two
// real server processes that two deployments (cache identities) share: the
// per (tenant, identity) counts summed over the servers, as a table and as
// JSON; a server that cannot be read; the keys counted per identity segment.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "memkv/client.h"
#include "memkv/identity.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

CacheIdentity Llama(const std::string& kv_dtype, uint32_t tp_rank) {
  CacheIdentity id;
  id.model = "meta-llama/Llama-3.1-8B";
  id.revision = "0e9e39f";
  id.kv_dtype = kv_dtype;
  id.layout = "NHD";
  id.block_tokens = 16;
  id.tp_rank = tp_rank;
  id.tp_size = 2;
  id.engine = "vllm";
  id.engine_version = "0.11.0";
  return id;
}

std::unique_ptr<Client> ClientAs(const std::vector<const ServerProcess*>& servers, const CacheIdentity* identity) {
  ClientOptions o = OptionsFor(servers);
  if (identity != nullptr) o.identity = *identity;
  Result<std::unique_ptr<Client>> client = Client::Create(o);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

// The --json row of (tenant "", tag); null when absent.
const JsonValue* RowOf(const JsonValue& doc, const std::string& tag) {
  for (const JsonValue& row : doc.array) {
    const JsonValue* tenant = row.Find("tenant");
    const JsonValue* identity = row.Find("identity");
    if (tenant != nullptr && tenant->string.empty() && identity != nullptr && identity->string == tag) return &row;
  }
  return nullptr;
}

double Field(const JsonValue* row, std::string_view key) {
  const JsonValue* v = row == nullptr ? nullptr : row->Find(key);
  return v == nullptr ? -1 : v->NumberOr(-1);
}

// The whitespace-separated cells of the text table's line for `tag`.
std::vector<std::string> CellsOf(const std::string& table, const std::string& tag) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string w; words >> w;) cells.push_back(w);
    if (cells.size() > 1 && cells[1] == tag) return cells;
  }
  return {};
}

class CliStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(a_.Start().ok());
    ASSERT_TRUE(b_.Start().ok());
  }
  std::vector<const ServerProcess*> Servers() const { return {&a_, &b_}; }
  // The admin endpoint's URL: servers on port 0 have theirs on any free port.
  static std::string AdminUrl(const ServerProcess& s) { return "http://127.0.0.1:" + std::to_string(s.AdminPort()); }

  ServerProcess a_;
  ServerProcess b_;
};

TEST_F(CliStatsTest, StatsSumsEachIdentityOverTheServersAndLsCountsItsKeys) {
  const CacheIdentity bf16 = Llama("bfloat16", 0);
  const CacheIdentity fp8 = Llama("float8_e4m3fn", 1);
  {
    std::unique_ptr<Client> one = ClientAs(Servers(), &bf16);
    std::unique_ptr<Client> two = ClientAs(Servers(), &fp8);
    ASSERT_TRUE(one && two);
    // bf16: 6 stores; 4 gets found, 2 missing; 3 restores in time, 1 late.
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(one->Put("k" + std::to_string(i), Bytes("v")).ok());
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(one->Get("k" + std::to_string(i)).ok());
    for (const char* k : {"x0", "x1"}) EXPECT_EQ(one->Get(k).status().code(), StatusCode::kNotFound);
    one->ReportRestores(3, 1);
    // fp8: 2 stores; 1 get found (its own k0, not bf16's), 1 missing.
    ASSERT_TRUE(two->Put("k0", Bytes("w")).ok());
    ASSERT_TRUE(two->Put("k9", Bytes("w")).ok());
    EXPECT_TRUE(two->Get("k0").ok());
    EXPECT_EQ(two->Get("k5").status().code(), StatusCode::kNotFound);
    // A key of no identity, from the administrator's plain client.
    std::unique_ptr<Client> plain = ClientAs(Servers(), nullptr);
    ASSERT_TRUE(plain);
    ASSERT_TRUE(plain->Put("plain", Bytes("p")).ok());
  }  // closed: the clients' unsent restore reports go now

  const std::vector<std::string> servers = {"--server", AdminUrl(a_), "--server", AdminUrl(b_)};
  std::vector<std::string> json_args = {"stats", "--json"};
  json_args.insert(json_args.end(), servers.begin(), servers.end());
  CommandResult json;
  JsonValue doc;
  // The report arrives with the connection's close; poll until it is counted.
  const bool counted = PollUntil(
      [&] {
        json = RunMemkv(json_args, {});
        Result<JsonValue> parsed = ParseJson(json.out);
        if (json.exit_code != 0 || !parsed.ok()) return false;
        doc = std::move(parsed).value();
        return Field(RowOf(doc, bf16.Tag()), "fetched_in_time") == 3;
      },
      20000);
  ASSERT_TRUE(counted) << json.exit_code << "\n" << json.out << json.err;
  ASSERT_EQ(doc.type, JsonValue::Type::kArray);

  const JsonValue* row = RowOf(doc, bf16.Tag());
  ASSERT_NE(row, nullptr) << json.out;
  EXPECT_EQ(row->Find("model")->string, "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(row->Find("kv_dtype")->string, "bfloat16");
  EXPECT_EQ(Field(row, "block_tokens"), 16);
  EXPECT_EQ(Field(row, "tp_rank"), 0);
  EXPECT_EQ(Field(row, "tp_size"), 2);
  EXPECT_EQ(Field(row, "lookups"), 6);
  EXPECT_EQ(Field(row, "found"), 4);
  EXPECT_EQ(Field(row, "fetched"), 4);
  EXPECT_EQ(Field(row, "fetched_in_time"), 3);
  EXPECT_EQ(Field(row, "fetched_late"), 1);
  EXPECT_EQ(Field(row, "stores"), 6);
  EXPECT_EQ(Field(row, "stores_shed"), 0);
  EXPECT_EQ(Field(row, "evictions"), 0);
  EXPECT_NEAR(Field(row, "hit_ratio"), 4.0 / 6, 1e-9);
  EXPECT_NEAR(Field(row, "in_time_ratio"), 3.0 / 6, 1e-9);

  row = RowOf(doc, fp8.Tag());
  ASSERT_NE(row, nullptr) << json.out;
  EXPECT_EQ(row->Find("kv_dtype")->string, "float8_e4m3fn");
  EXPECT_EQ(Field(row, "tp_rank"), 1);
  EXPECT_EQ(Field(row, "lookups"), 2);
  EXPECT_EQ(Field(row, "found"), 1);
  EXPECT_EQ(Field(row, "fetched"), 1);
  EXPECT_EQ(Field(row, "stores"), 2);
  EXPECT_NEAR(Field(row, "hit_ratio"), 0.5, 1e-9);
  // The plain client's store counts under "none".
  EXPECT_EQ(Field(RowOf(doc, "none"), "stores"), 1) << json.out;

  // The table: the same counts, one row per (tenant, identity).
  std::vector<std::string> text_args = {"stats"};
  text_args.insert(text_args.end(), servers.begin(), servers.end());
  const CommandResult text = RunMemkv(text_args, {});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("TENANT", 0), 0u) << text.out;
  EXPECT_EQ(CellsOf(text.out, bf16.Tag()),
            (std::vector<std::string>{"-", bf16.Tag(), "meta-llama/Llama-3.1-8B", "bfloat16", "16", "0/2", "6", "4",
                                      "4", "3", "1", "66.7%", "50.0%", "6", "0", "0"}))
      << text.out;
  EXPECT_EQ(CellsOf(text.out, fp8.Tag()),
            (std::vector<std::string>{"-", fp8.Tag(), "meta-llama/Llama-3.1-8B", "float8_e4m3fn", "16", "1/2", "2",
                                      "1", "1", "0", "0", "50.0%", "0.0%", "2", "0", "0"}))
      << text.out;

  // ls --by-identity, with the administrator's key: the keys as stored, per segment.
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", a_.address() + "," + b_.address()},
                                                  {"MEMKV_AUTH_KEY", kTestKeyHex}};
  const CommandResult ls = RunMemkv({"ls", "--by-identity"}, env);
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  std::vector<std::string> expected = {"@" + bf16.Tag() + "/ 6", "@" + fp8.Tag() + "/ 2"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ls.out, expected[0] + "\n" + expected[1] + "\nnone 1\n");
  // Under a prefix: only that identity's keys.
  const CommandResult one = RunMemkv({"ls", "--by-identity", "@" + fp8.Tag() + "/"}, env);
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "@" + fp8.Tag() + "/ 2\n");
  // Plain ls is unchanged: every key as stored.
  const CommandResult all = RunMemkv({"ls"}, env);
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), '\n'), 9) << all.out;
  EXPECT_NE(all.out.find("@" + bf16.Tag() + "/k5\n"), std::string::npos) << all.out;
  // --by-identity is ls's alone.
  EXPECT_EQ(RunMemkv({"get", "--by-identity", "k0"}, env).exit_code, 2);
}

// A server that cannot be read is named on stderr, exit 4; the others'
// rows are still printed.
TEST_F(CliStatsTest, UnreadableServerIsNamedAndExits4) {
  const CacheIdentity id = Llama("bfloat16", 0);
  std::unique_ptr<Client> c = ClientAs({&a_}, &id);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Put("k", Bytes("v")).ok());
  const uint16_t closed = FreeServerPort();
  ASSERT_NE(closed, 0);
  const std::string gone = "127.0.0.1:" + std::to_string(closed);
  const CommandResult r = RunMemkv({"stats", AdminUrl(a_), gone}, {});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find(gone), std::string::npos) << r.err;
  const std::vector<std::string> cells = CellsOf(r.out, id.Tag());
  ASSERT_EQ(cells.size(), 16u) << r.out;
  EXPECT_EQ(cells[13], "1") << r.out;  // STORES

  EXPECT_EQ(RunMemkv({"stats", "--bogus"}, {}).exit_code, 2);
  EXPECT_EQ(RunMemkv({"stats", "not an address"}, {}).exit_code, 2);
  const CommandResult help = RunMemkv({"stats", "--help"}, {});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Usage: memkv stats"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace memkv::testing
