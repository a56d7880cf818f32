// memkv-drive-bench's reading of fio: the arguments it passes and the JSON
// report it parses, checked against reports that fio 3.33 actually wrote
// (bench/testdata/), so a change in fio's format shows up here and not as a
// silent zero in a benchmark table.
#include "bench/fio_reference.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/json.h"

namespace memkv::bench {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(MEMKV_BENCH_TESTDATA) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_TRUE(in.good() || in.eof()) << name;
  return s.str();
}

TEST(FioReport, ReadsWriteFiguresAndSyncLatency) {
  Result<FioResult> r = ParseFioReport(ReadTestdata("fio-3.33-write-fdatasync.json"), /*write=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->bytes_per_s, 515852673);
  EXPECT_NEAR(r->iops, 7871.29, 0.01);
  EXPECT_EQ(r->io_bytes, 52101120u);
  EXPECT_DOUBLE_EQ(r->runtime_s, 0.101);
  EXPECT_DOUBLE_EQ(r->clat_p50_us, 62.208);
  EXPECT_DOUBLE_EQ(r->clat_p99_us, 1515.52);
  EXPECT_DOUBLE_EQ(r->sync_p50_us, 104.96);
  EXPECT_DOUBLE_EQ(r->sync_p99_us, 264.192);
}

TEST(FioReport, ReadsReadFigures) {
  Result<FioResult> r = ParseFioReport(ReadTestdata("fio-3.33-read.json"), /*write=*/false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->bytes_per_s, 1131631524);
  EXPECT_EQ(r->io_bytes, 114294784u);
  EXPECT_DOUBLE_EQ(r->clat_p50_us, 839.68);
  EXPECT_DOUBLE_EQ(r->clat_p999_us, 1794.048);
  EXPECT_EQ(r->sync_p50_us, 0);
}

TEST(FioReport, SkipsAWarningBeforeTheDocument) {
  std::string text = "fio: something to say\n" + ReadTestdata("fio-3.33-read.json");
  EXPECT_TRUE(ParseFioReport(text, /*write=*/false).ok());
}

TEST(FioReport, RejectsAFailedJob) {
  std::string text = ReadTestdata("fio-3.33-read.json");
  const size_t at = text.find("\"error\" : 0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "\"error\" : 5");
  Result<FioResult> r = ParseFioReport(text, /*write=*/false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("error 5"), std::string::npos) << r.status().ToString();
}

TEST(FioReport, RejectsTruncatedAndEmptyReports) {
  const std::string text = ReadTestdata("fio-3.33-read.json");
  EXPECT_FALSE(ParseFioReport(text.substr(0, text.size() / 2), false).ok());
  EXPECT_FALSE(ParseFioReport("", false).ok());
  EXPECT_FALSE(ParseFioReport("{\"jobs\": []}", false).ok());
  EXPECT_FALSE(ParseFioReport("{\"jobs\": [{\"read\": {}}]}", false).ok());
}

TEST(JsonLite, ParsesValuesAndRejectsGarbage) {
  Result<JsonValue> v = ParseJson(R"({"a": [1, -2.5e3, true, null, "x\"y\u0041"], "b": {"c": {}}})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const JsonValue* a = v->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->array.size(), 5u);
  EXPECT_EQ(a->array[1].number, -2500);
  EXPECT_TRUE(a->array[2].boolean);
  EXPECT_EQ(a->array[3].type, JsonValue::Type::kNull);
  EXPECT_EQ(a->array[4].string, "x\"yA");
  EXPECT_NE(v->Path({"b", "c"}), nullptr);
  EXPECT_EQ(v->Path({"b", "d"}), nullptr);
  for (const char* bad : {"{", "[1,]", "{\"a\" 1}", "{\"a\": tru}", "[1] x", "{\"a\": \"open}"}) {
    EXPECT_FALSE(ParseJson(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseJson(std::string(1000, '[')).ok());  // deeper than kMaxJsonDepth
}

TEST(FioArgs, NameTheSameFileSizeAndDepth) {
  FioJob job{.fio_path = "fio",
             .filename = "/d/drive0",
             .file_size_bytes = 1 << 30,
             .block_size_bytes = 1 << 20,
             .iodepth = 4,
             .seconds = 0.25,
             .write = true,
             .fdatasync = true,
             .output_path = "/d/out.json"};
  const std::string command = ShellCommand(FioArgs(job));
  for (const char* want :
       {"--filename=/d/drive0", "--size=1073741824", "--ioengine=io_uring", "--direct=1", "--rw=write", "--bs=1048576",
        "--iodepth=4", "--time_based=1", "--runtime=250ms", "--fixedbufs=1", "--registerfiles=1", "--fdatasync=1",
        "--output-format=json", "--output=/d/out.json"}) {
    EXPECT_NE(command.find(want), std::string::npos) << want << " in " << command;
  }
  job.write = false;
  job.fdatasync = false;
  job.registered = false;
  job.filename = "/my dir/it's";
  const std::string read = ShellCommand(FioArgs(job));
  EXPECT_NE(read.find("--rw=read"), std::string::npos);
  EXPECT_EQ(read.find("fdatasync"), std::string::npos);
  EXPECT_EQ(read.find("fixedbufs"), std::string::npos);
  EXPECT_NE(read.find("'--filename=/my dir/it'\\''s'"), std::string::npos) << read;
}

}  // namespace
}  // namespace memkv::bench
