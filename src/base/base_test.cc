#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <xxhash.h>

#include "base/json.h"
#include "base/key_page.h"
#include "base/bytes.h"
#include "base/checksum.h"
#include "base/checksum_internal.h"
#include "base/hmac.h"
#include "base/log.h"
#include "base/parse_number.h"
#include "base/repeated_keys.h"
#include "base/temp_dir.h"
#include "base/text_file.h"
#include "base/units.h"
#include "base/utf8.h"
#include "memkv/status.h"

namespace memkv {
namespace {

TEST(Utf8Test, WellFormedSequencesOnly) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("ascii/llama"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a continuation byte alone
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // cut short
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(Utf8Test, PrintableEscapesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(PrintableUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(PrintableUtf8("a\xff\xfe" "b"), "a\\xff\\xfeb");
  EXPECT_EQ(PrintableUtf8("\xe2\x82" "x\xe2\x82\xac"), "\\xe2\\x82x\xe2\x82\xac");
  EXPECT_TRUE(IsValidUtf8(PrintableUtf8("\xed\xa0\x80\xc0\xaf\xf5")));
}

TEST(JsonTest, StringsThatAreNotUtf8AreQuotedWithHexEscapes) {
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonQuote("a\xff\"b"), "\"a\\\\xff\\\"b\"");
  Result<JsonValue> j = ParseJson("[" + JsonQuote("a\xff") + "]");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->array[0].string, "a\\xff");
}

// Each item whose key a later item names again points at the key's last item.
TEST(RepeatedKeysTest, EachEarlierItemOfAKeyGetsItsLastItem) {
  const std::vector<std::string_view> keys = {"a", "b", "a", "c", "b", "a", "d"};
  std::vector<std::pair<size_t, size_t>> scratch;
  std::vector<std::pair<size_t, size_t>> repeats;
  ForEachRepeatedKey(
      keys.size(), [&](size_t i) { return keys[i]; }, &scratch,
      [&](size_t i, size_t last) { repeats.emplace_back(i, last); });
  std::sort(repeats.begin(), repeats.end());
  EXPECT_EQ(repeats, (std::vector<std::pair<size_t, size_t>>{{0, 5}, {1, 4}, {2, 5}}));
  repeats.clear();
  ForEachRepeatedKey(
      3, [&](size_t i) { return keys[i + 1]; }, &scratch, [&](size_t i, size_t last) { repeats.emplace_back(i, last); });
  EXPECT_TRUE(repeats.empty());  // b, a, c: no key twice
}

TEST(StatusTest, OkAndErrorsFormat) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "Ok");
  Status s = NotFound("key 'a'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "NotFound: key 'a'");
  EXPECT_EQ(s.WithContext("get").message(), "get: key 'a'");
}

TEST(StatusTest, CodesAreStable) {
  // The wire, the C API and Python share these numbers; they must never move.
  EXPECT_EQ(static_cast<int>(StatusCode::kNotFound), 1);
  EXPECT_EQ(static_cast<int>(StatusCode::kAuthFailed), 5);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnsupportedVersion), 6);
  EXPECT_EQ(static_cast<int>(StatusCode::kFailedPrecondition), 13);
}

Result<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgument("odd");
  return v / 2;
}

Status UseAssign(int v, int* out) {
  MEMKV_ASSIGN_OR_RETURN(int h, Half(v));
  *out = h;
  return Status::Ok();
}

TEST(ResultTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(UseAssign(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseAssign(3, &out).code(), StatusCode::kInvalidArgument);
}

TEST(UnitsTest, ParsesHumanSizes) {
  EXPECT_EQ(*ParseSize("2 MiB"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("2MiB"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("247 GiB"), 247 * kGiB);
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("1.5 KiB"), 1536u);
  EXPECT_EQ(*ParseSize("10 KB"), 10000u);
  EXPECT_EQ(*ParseSize("3g"), 3 * kGiB);
  EXPECT_FALSE(ParseSize("").ok());
  EXPECT_FALSE(ParseSize("MiB").ok());
  EXPECT_FALSE(ParseSize("2 XB").ok());
  EXPECT_FALSE(ParseSize("2 MiB extra").ok());
  EXPECT_FALSE(ParseSize("0.3 B").ok());
  EXPECT_FALSE(ParseSize("99999999999 TiB").ok());
  EXPECT_NE(ParseSize("2 XB").status().message().find("MiB"), std::string::npos);
}

// The size-string rules of units.h, one behaviour each.

TEST(SizeTest, IecSuffixMiIsAccepted) {
  EXPECT_EQ(*ParseSize("2Mi"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("2 Mi"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("1Ki"), kKiB);
  EXPECT_EQ(*ParseSize("3 Gi"), 3 * kGiB);
  EXPECT_EQ(*ParseSize("1Ti"), kTiB);
}

TEST(SizeTest, EveryIecFormIsAPowerOf1024) {
  const std::pair<const char*, uint64_t> prefixes[] = {{"K", kKiB}, {"M", kMiB}, {"G", kGiB}, {"T", kTiB}};
  for (const auto& [prefix, unit] : prefixes) {
    for (const char* suffix : {"", "i", "iB"}) {
      const std::string text = "7" + std::string(prefix) + suffix;
      Result<uint64_t> r = ParseSize(text);
      ASSERT_TRUE(r.ok()) << text << ": " << r.status().message();
      EXPECT_EQ(*r, 7 * unit) << text;
    }
  }
}

TEST(SizeTest, BareLetterStaysBinarySoExistingConfigsKeepTheirSize) {
  EXPECT_EQ(*ParseSize("2M"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("64K"), 64 * kKiB);
  EXPECT_EQ(*ParseSize("16G"), 16 * kGiB);
  EXPECT_EQ(*ParseSize("1T"), kTiB);
}

TEST(SizeTest, SiSuffixesArePowersOf1000) {
  EXPECT_EQ(*ParseSize("2KB"), 2'000u);
  EXPECT_EQ(*ParseSize("2MB"), 2'000'000u);
  EXPECT_EQ(*ParseSize("2 GB"), 2'000'000'000u);
  EXPECT_EQ(*ParseSize("2 TB"), 2'000'000'000'000u);
}

TEST(SizeTest, UnitsIgnoreCase) {
  EXPECT_EQ(*ParseSize("2mib"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("2MIB"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("2mi"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("2k"), 2 * kKiB);
  EXPECT_EQ(*ParseSize("2kb"), 2'000u);
  EXPECT_EQ(*ParseSize("2b"), 2u);
}

TEST(SizeTest, SpaceBetweenNumberAndUnitIsOptional) {
  EXPECT_EQ(*ParseSize("2MiB"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("2 MiB"), 2 * kMiB);
  EXPECT_EQ(*ParseSize("  2\tMiB  "), 2 * kMiB);
  EXPECT_EQ(*ParseSize("4096 B"), 4096u);
}

TEST(SizeTest, PlainNumberIsBytes) {
  EXPECT_EQ(*ParseSize("1048576"), kMiB);
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("18446744073709551615"), UINT64_MAX);
}

TEST(SizeTest, FractionsAreExactNotFloatingPoint) {
  EXPECT_EQ(*ParseSize("1.5 KiB"), 1536u);
  EXPECT_EQ(*ParseSize("0.1 KB"), 100u);
  EXPECT_EQ(*ParseSize("2.50 GB"), 2'500'000'000u);
  EXPECT_EQ(*ParseSize("0.5Ti"), kTiB / 2);
  EXPECT_EQ(*ParseSize("1.0"), 1u);
  EXPECT_EQ(*ParseSize(".5 KiB"), 512u);
  // Within one byte of the limit, where a double has no precision left.
  EXPECT_EQ(*ParseSize("18446744073.709551615 GB"), UINT64_MAX);
  Result<uint64_t> r = ParseSize("0.3 B");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("whole number of bytes"), std::string::npos) << r.status().message();
  EXPECT_FALSE(ParseSize("1.0000001 KiB").ok());
}

TEST(SizeTest, LoneDotIsNotZeroBytes) {
  EXPECT_FALSE(ParseSize(".").ok());
  EXPECT_FALSE(ParseSize(". MiB").ok());
}

TEST(SizeTest, OverflowIsRefusedNotWrapped) {
  for (const char* text : {"18446744073709551616", "16777216 TiB", "16777216Ti", "99999999999 TiB",
                           "18446744073.709551616 GB", "99999999999999999999999999999999999999999 B",
                           "18446744073709551615.5 KiB"}) {
    Result<uint64_t> r = ParseSize(text);
    ASSERT_FALSE(r.ok()) << text << " = " << *r;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("too large"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(*ParseSize("16777215 TiB"), 16777215 * kTiB);
}

TEST(SizeTest, MalformedTextIsRefused) {
  for (const char* text : {"", "   ", "MiB", "-1", "+1", "1e6", "1,024", "1_000", "0x10", "2 M B", "2 MiB extra",
                           "2 PiB", "2 XB", "2 MiBs", "2..5 MiB", "1.2.3", "2 Mib/s"}) {
    Result<uint64_t> r = ParseSize(text);
    EXPECT_FALSE(r.ok()) << "'" << text << "' = " << *r;
  }
  EXPECT_FALSE(ParseSize("0.0000000000000000000000001 TiB").ok());  // more fraction digits than are kept
}

TEST(SizeTest, ErrorNamesTheTextAndListsTheUnits) {
  const std::string message = ParseSize("2 XB").status().message();
  EXPECT_NE(message.find("'2 XB'"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown unit 'XB'"), std::string::npos) << message;
  for (const char* unit : {"B", "KiB", "MiB", "GiB", "TiB", "Mi", "KB", "MB", "GB", "TB", "1024", "1000"}) {
    EXPECT_NE(message.find(unit), std::string::npos) << unit << " missing from: " << message;
  }
  EXPECT_NE(ParseSize("").status().message().find("empty"), std::string::npos);
}

TEST(UnitsTest, FormatsExactUnits) {
  EXPECT_EQ(FormatSize(2 * kMiB), "2 MiB");
  EXPECT_EQ(FormatSize(1536), "1536 B");
  EXPECT_EQ(FormatSize(3 * kKiB), "3 KiB");
  EXPECT_EQ(FormatSize(0), "0 B");
}

TEST(BytesTest, LittleEndianRoundTrip) {
  uint8_t buf[8];
  StoreLe64(buf, 0x0102030405060708ULL);
  EXPECT_EQ(buf[0], 0x08);
  EXPECT_EQ(LoadLe64(buf), 0x0102030405060708ULL);
  StoreLe32(buf, 0xdeadbeef);
  EXPECT_EQ(LoadLe32(buf), 0xdeadbeefu);
  StoreLe16(buf, 0xbeef);
  EXPECT_EQ(LoadLe16(buf), 0xbeef);
}

TEST(BytesTest, Hex) {
  const uint8_t data[] = {0x00, 0xab, 0xff};
  EXPECT_EQ(HexEncode(data, 3), "00abff");
  auto back = HexDecode("00ABff");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, std::vector<uint8_t>(data, data + 3));
  EXPECT_FALSE(HexDecode("abc").has_value());
  EXPECT_FALSE(HexDecode("zz").has_value());
}

TEST(ChecksumTest, IovMatchesFlat) {
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7);
  iovec parts[3] = {{data.data(), 1}, {data.data() + 1, 4999}, {data.data() + 5000, 5000}};
  EXPECT_EQ(ChecksumIov(parts), Checksum(data.data(), data.size()));
  data[9999] ^= 1;
  EXPECT_NE(ChecksumIov(parts), Checksum(data.data(), data.size() - 1));
}

TEST(ChecksumTest, IsXxh3AsTheLibraryComputesIt) {
  // Blocks stored by one build are verified by another: the value must be
  // plain XXH3-64 whichever code path (AVX2 or portable) computed it.
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i ^ (i >> 9));
  for (size_t size : {0ul, 1ul, 17ul, 240ul, 241ul, 4096ul, data.size()}) {
    EXPECT_EQ(Checksum(data.data(), size), XXH3_64bits(data.data(), size)) << size;
  }
}

TEST(ChecksumTest, StreamMatchesOneShot) {
  std::vector<uint8_t> data(5 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 31 + (i >> 12));
  ChecksumStream stream;
  size_t at = 0;
  for (size_t piece : {0ul, 1ul, 63ul, 4096ul, 100000ul, 2ul << 20}) {
    stream.Update(data.data() + at, piece);
    at += piece;
  }
  stream.Update(data.data() + at, data.size() - at);
  EXPECT_EQ(stream.Digest(), Checksum(data.data(), data.size()));
  stream.Reset();
  EXPECT_EQ(stream.Digest(), Checksum(nullptr, 0));
}

// Each vector build this CPU runs computes plain XXH3-64, one-shot, over
// iovecs and piece by piece, whichever one checksum.cc picks.
TEST(ChecksumTest, EveryVectorBuildTheCpuRunsIsXxh3) {
  struct Variant {
    const char* isa;
    bool cpu_runs;
    uint64_t (*iov)(const iovec*, size_t);
    void (*update)(void*, const void*, size_t);
  };
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 13 ^ (i >> 11));
  __builtin_cpu_init();
  int ran = 0;
  for (const Variant& v :
       {Variant{"avx2", __builtin_cpu_supports("avx2") != 0, &internal::ChecksumIovAvx2, &internal::ChecksumUpdateAvx2},
        Variant{"avx512f", __builtin_cpu_supports("avx512f") != 0, &internal::ChecksumIovAvx512,
                &internal::ChecksumUpdateAvx512}}) {
    if (!v.cpu_runs) continue;
    ++ran;
    SCOPED_TRACE(v.isa);
    for (size_t size : {0ul, 1ul, 17ul, 240ul, 241ul, 4096ul, 65536ul + 3, data.size()}) {
      iovec one{data.data(), size};
      EXPECT_EQ(v.iov(&one, 1), XXH3_64bits(data.data(), size)) << size;
    }
    iovec parts[3] = {{data.data(), 5}, {data.data() + 5, 70000}, {data.data() + 70005, data.size() - 70005}};
    EXPECT_EQ(v.iov(parts, 3), XXH3_64bits(data.data(), data.size()));
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    size_t at = 0;
    for (size_t piece : {1ul, 63ul, 4096ul, 100001ul, 1ul << 20}) {
      v.update(state.get(), data.data() + at, piece);
      at += piece;
    }
    v.update(state.get(), data.data() + at, data.size() - at);
    EXPECT_EQ(XXH3_64bits_digest(state.get()), XXH3_64bits(data.data(), data.size()));
  }
  if (ran == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512F: only the portable build runs";
}

TEST(ParseNumberTest, DecimalTakesDigitsOnlyUpToUint64Max) {
  EXPECT_EQ(ParseDecimal("0"), 0u);
  EXPECT_EQ(ParseDecimal("4096"), 4096u);
  EXPECT_EQ(ParseDecimal("007"), 7u);
  EXPECT_EQ(ParseDecimal("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseDecimal("18446744073709551616").has_value());
  for (std::string_view bad : {"", " 1", "1 ", "+1", "-1", "1.0", "1k", "0x10", "ff"}) {
    EXPECT_FALSE(ParseDecimal(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ParseNumberTest, HexTakesEitherCaseWithoutPrefix) {
  EXPECT_EQ(ParseHex("ff"), 255u);
  EXPECT_EQ(ParseHex("FF"), 255u);
  EXPECT_EQ(ParseHex("ffffffffffffffff"), UINT64_MAX);
  EXPECT_FALSE(ParseHex("10000000000000000").has_value());
  for (std::string_view bad : {"", "0x10", "g", " a", "-1"}) {
    EXPECT_FALSE(ParseHex(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(HmacTest, Rfc4231Case2) {
  // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
  const std::string key = "Jefe";
  const std::string data = "what do ya want for nothing?";
  auto mac = HmacSha256::Create(std::span(reinterpret_cast<const uint8_t*>(key.data()), key.size()));
  ASSERT_TRUE(mac.ok());
  Tag tag = (*mac)->Compute(data.data(), data.size());
  EXPECT_EQ(HexEncode(tag.data(), tag.size()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // The keyed state is reusable.
  EXPECT_TRUE(TagsEqual(tag, (*mac)->Compute(data.data(), data.size())));
}

TEST(HmacTest, Rfc4231Cases1And6AndIncrementalUse) {
  // Case 1: a 20-byte key of 0x0b, "Hi There".
  const std::vector<uint8_t> key1(20, 0x0b);
  auto mac = HmacSha256::Create(key1);
  ASSERT_TRUE(mac.ok());
  const std::string hi = "Hi There";
  Tag tag = (*mac)->Compute(hi.data(), hi.size());
  EXPECT_EQ(HexEncode(tag.data(), tag.size()), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // The same tag fed in pieces.
  (*mac)->Begin();
  (*mac)->Update(hi.data(), 3);
  (*mac)->Update(hi.data() + 3, 0);
  (*mac)->Update(hi.data() + 3, hi.size() - 3);
  EXPECT_TRUE(TagsEqual((*mac)->Finish(), tag));
  // Finish without Begin gives a tag that verifies against nothing real.
  EXPECT_EQ((*mac)->Finish(), Tag{});

  // Case 6: a 131-byte key (longer than a block: hashed first).
  const std::vector<uint8_t> key6(131, 0xaa);
  auto big = HmacSha256::Create(key6);
  ASSERT_TRUE(big.ok());
  const std::string text = "Test Using Larger Than Block-Size Key - Hash Key First";
  Tag t6 = (*big)->Compute(text.data(), text.size());
  EXPECT_EQ(HexEncode(t6.data(), t6.size()), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(RandomTest, FillsBytes) {
  uint8_t a[32] = {}, b[32] = {};
  ASSERT_TRUE(RandomBytes(a, sizeof(a)).ok());
  ASSERT_TRUE(RandomBytes(b, sizeof(b)).ok());
  EXPECT_NE(std::memcmp(a, b, sizeof(a)), 0);
}

// A LogLevel threshold and captured stderr for one test.
class LogCapture {
 public:
  LogCapture() : saved_(GetLogLevel()) {
    SetLogLevel(LogLevel::kInfo);
    ::testing::internal::CaptureStderr();
  }
  ~LogCapture() { SetLogLevel(saved_); }
  std::string Take() { return ::testing::internal::GetCapturedStderr(); }

 private:
  LogLevel saved_;
};

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LogTest, LineCarriesAnOptionalComponent) {
  const int64_t t = 1795341600'123'456'789;  // 2026-11-22T10:00:00.123456789Z
  EXPECT_EQ(FormatLogLine(t, LogLevel::kWarn, "", "disk slow"), "2026-11-22T10:00:00.123Z WARN  disk slow\n");
  EXPECT_EQ(FormatLogLine(t, LogLevel::kWarn, "drive", "disk slow"),
            "2026-11-22T10:00:00.123Z WARN  [drive] disk slow\n");
  EXPECT_EQ(FormatLogLine(t, LogLevel::kError, "server", "x"), "2026-11-22T10:00:00.123Z ERROR [server] x\n");

  LogCapture capture;
  LOG_WARN << "untagged " << 1;
  LOG_INFO_C("drive") << "tagged " << 2;
  LOG_DEBUG_C("drive") << "below the threshold";
  std::string out = capture.Take();
  EXPECT_NE(out.find("Z WARN  untagged 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Z INFO  [drive] tagged 2\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("below the threshold"), std::string::npos) << out;
}

TEST(LogTest, ScopedTargetTakesTheThreadsLinesAtItsOwnLevelAndNests) {
  std::vector<std::string> got;
  LogTarget quiet;  // WARN and up, to a sink
  quiet.sink = [&](LogLevel level, std::string_view component, std::string_view message) {
    got.push_back(std::to_string(static_cast<int>(level)) + "|" + std::string(component) + "|" +
                  std::string(message));
  };
  LogTarget chatty = quiet;
  chatty.level = LogLevel::kDebug;
  LogCapture capture;
  {
    ScopedLogTarget scope(&quiet);
    LOG_INFO_C("client") << "dropped";
    LOG_WARN_C("client") << "kept " << 1;
    {
      ScopedLogTarget inner(&chatty);
      EXPECT_EQ(GetLogLevel(), LogLevel::kDebug);
      LOG_DEBUG << "inner debug";
    }
    EXPECT_EQ(GetLogLevel(), LogLevel::kWarn);
    // Another thread is not under this thread's target.
    std::thread([] { LOG_INFO << "other thread"; }).join();
  }
  LOG_INFO << "after the scope";
  EXPECT_EQ(got, (std::vector<std::string>{"2|client|kept 1", "0||inner debug"}));
  std::string out = capture.Take();
  EXPECT_EQ(out.find("kept"), std::string::npos) << out;
  EXPECT_NE(out.find("INFO  other thread\n"), std::string::npos) << out;
  EXPECT_NE(out.find("INFO  after the scope\n"), std::string::npos) << out;
}

TEST(LogRateLimiterTest, OneLinePerIntervalThenReportsWhatItSuppressed) {
  constexpr Nanos kSecond = 1'000'000'000;
  LogRateLimiter limiter;
  EXPECT_EQ(limiter.Allow(100 * kSecond, 10 * kSecond), 0);  // the first line always goes
  EXPECT_EQ(limiter.Allow(101 * kSecond, 10 * kSecond), LogRateLimiter::kNotAllowed);
  EXPECT_EQ(limiter.Allow(110 * kSecond - 1, 10 * kSecond), LogRateLimiter::kNotAllowed);
  EXPECT_EQ(limiter.Allow(110 * kSecond, 10 * kSecond), 2);  // interval over: 2 were held back
  EXPECT_EQ(limiter.Allow(111 * kSecond, 10 * kSecond), LogRateLimiter::kNotAllowed);
  EXPECT_EQ(limiter.Allow(500 * kSecond, 10 * kSecond), 1);
  EXPECT_EQ(limiter.Allow(600 * kSecond, 10 * kSecond), 0);  // nothing suppressed since
}

TEST(LogRateLimiterTest, MacroLimitsEachCallSiteAndAppendsTheSuppressedCount) {
  LogCapture capture;
  for (int i = 0; i < 5; ++i) {
    LOG_WARN_EVERY(3600) << "site one " << i;
    LOG_WARN_EVERY_C("drive", 3600) << "site two " << i;
  }
  LOG_EVERY_N_SEC(kDebug, 0) << "below the threshold";
  bool else_taken = false;
  if (else_taken) LOG_WARN_EVERY(1) << "never";  // the macro must not swallow this else
  else else_taken = true;
  // What the macro writes once the interval has passed with lines held back.
  internal::LogMessage(LogLevel::kWarn, "drive", 4).stream() << "site two 5";
  std::string out = capture.Take();
  EXPECT_TRUE(else_taken);
  EXPECT_EQ(CountOf(out, "site one"), 1) << out;
  EXPECT_NE(out.find("WARN  site one 0\n"), std::string::npos) << out;
  EXPECT_EQ(CountOf(out, "site two"), 2) << out;
  EXPECT_NE(out.find("WARN  [drive] site two 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("WARN  [drive] site two 5 (4 similar messages suppressed)\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("below the threshold"), std::string::npos) << out;
}

}  // namespace
}  // namespace memkv

namespace memkv {
namespace {

TEST(JsonWriterTest, NestsCommasAndEscapesAndReadsBack) {
  JsonWriter w;
  w.BeginObject()
      .Key("name").String("a\"b\\c\n\x01")
      .Key("n").Number(uint64_t{18446744073709551615ull})
      .Key("neg").Number(int64_t{-3})
      .Key("x").Number(0.1)
      .Key("inf").Number(1.0 / 0.0)
      .Key("list").BeginArray().Bool(true).Null().BeginObject().EndObject().BeginArray().EndArray().EndArray()
      .EndObject();
  EXPECT_EQ(w.text(),
            "{\"name\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":18446744073709551615,\"neg\":-3,\"x\":0.1,\"inf\":null,"
            "\"list\":[true,null,{},[]]}");
  Result<JsonValue> back = ParseJson(w.text());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Find("name")->string, "a\"b\\c\n\x01");
  EXPECT_EQ(back->Find("x")->number, 0.1);
  EXPECT_EQ(back->Find("list")->array.size(), 4u);
}

TEST(TextFileTest, ReplacesTheFileAndNamesAPathItCannotOpen) {
  testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.Write("out.json", "an older and longer text");
  ASSERT_TRUE(WriteTextFile(path, "{\"a\":1}\n").ok());
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"a\":1}\n");
  const Status missing = WriteTextFile(dir.File("no-such-dir/out.json"), "x");
  EXPECT_EQ(missing.code(), StatusCode::kIoError);
  EXPECT_NE(missing.message().find("no-such-dir/out.json"), std::string::npos) << missing.ToString();
}

TEST(KeyPageTest, KeepsTheSmallestKeysUnderThePrefixAfterTheCursorOnce) {
  KeyPage page("m/", "m/b", 3);
  for (const char* k : {"m/e", "x/a", "m/a", "m/c", "m/b", "m/d", "m/c", "m/", "m/f", "m/d"}) page.Offer(k);
  EXPECT_TRUE(page.more());
  EXPECT_EQ(page.Take(), (std::vector<std::string>{"m/c", "m/d", "m/e"}));
}

TEST(KeyPageTest, MoreOnlyWhenAKeyWasLeftOut) {
  KeyPage exact("", "", 2);
  for (const char* k : {"b", "a", "b", "a"}) exact.Offer(k);  // offered twice (two stores)
  EXPECT_FALSE(exact.more());
  EXPECT_EQ(exact.Take(), (std::vector<std::string>{"a", "b"}));
  KeyPage over("", "", 2);
  for (const char* k : {"c", "a", "b"}) over.Offer(k);
  EXPECT_TRUE(over.more());
  EXPECT_EQ(over.Take(), (std::vector<std::string>{"a", "b"}));
  KeyPage none("", "", 0);
  none.Offer("a");
  EXPECT_TRUE(none.more());
  EXPECT_TRUE(none.Take().empty());
}

}  // namespace
}  // namespace memkv
