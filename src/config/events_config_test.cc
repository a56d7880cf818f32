// events.*: defaults, parsing and the rules, through ParseServerConfig.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config_test_util.h"
#include "config/server_config.h"

namespace memkv::config {
namespace {

using testing::HasLineWith;
using testing::ProblemLines;

Result<ServerConfig> ParseEvents(const std::string& body) {
  return ParseServerConfig("storage:\n  mode: memory\nevents:\n" + body, "test.yaml");
}

TEST(EventsConfigTest, OffByDefault) {
  Result<ServerConfig> c = ParseServerConfig("storage:\n  mode: memory\n", "test.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->events.enabled());
  EXPECT_EQ(c->events.topic, "");
  EXPECT_EQ(c->events.encoding, EventsEncoding::kMap);
  EXPECT_EQ(c->events.queue_size, 100000u);
  EXPECT_EQ(c->events.replay_buffer, 10000u);
}

TEST(EventsConfigTest, EveryFieldParses) {
  Result<ServerConfig> c = ParseEvents(
      "  publish: tcp://*:5557\n  replay: tcp://127.0.0.1:5558\n  topic: kv-events\n  encoding: array\n"
      "  queue_size: 1000\n  replay_buffer: 50\n  replay_buffer_size: 1 MiB\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->events.enabled());
  EXPECT_EQ(c->events.publish, "tcp://*:5557");
  EXPECT_EQ(c->events.replay, "tcp://127.0.0.1:5558");
  EXPECT_EQ(c->events.topic, "kv-events");
  EXPECT_EQ(c->events.encoding, EventsEncoding::kArray);
  EXPECT_EQ(c->events.queue_size, 1000u);
  EXPECT_EQ(c->events.replay_buffer, 50u);
  EXPECT_EQ(c->events.replay_buffer_size_bytes, 1u << 20);
}

TEST(EventsConfigTest, EndpointsMustBeTcpHostPort) {
  EXPECT_TRUE(ParseEvents("  publish: tcp://[::1]:5557\n").ok());
  EXPECT_TRUE(ParseEvents("  publish: tcp://node1.example:0\n").ok());
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  publish: 127.0.0.1:5557\n")),
                          {"events.publish", "'127.0.0.1:5557'", "does not start with tcp://", "tcp://HOST:PORT"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  publish: ipc:///tmp/x\n")), {"events.publish", "tcp://"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  publish: tcp://127.0.0.1\n")),
                          {"events.publish", "tcp://HOST:PORT"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  publish: tcp://127.0.0.1:70000\n")),
                          {"events.publish", "70000", "out of range"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  replay: tcp://127.0.0.1:5558\n")),
                          {"events.replay", "events.publish is not"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  publish: tcp://127.0.0.1:5557\n  replay: tcp://127.0.0.1:5557\n")),
                          {"events.replay", "its own port"}));
  EXPECT_TRUE(ParseEvents("  publish: tcp://127.0.0.1:0\n  replay: tcp://127.0.0.1:0\n").ok());
}

TEST(EventsConfigTest, SizesAndEncodingAreChecked) {
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  queue_size: 0\n")), {"events.queue_size", "1..10000000"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  replay_buffer: 1000001\n")),
                          {"events.replay_buffer", "0..1000000"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  encoding: json\n")), {"events.encoding", "'json'", "map, array"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseEvents("  publsh: tcp://127.0.0.1:1\n")), {"events.publsh"}));
}

}  // namespace
}  // namespace memkv::config
