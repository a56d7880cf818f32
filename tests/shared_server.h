// SharedServerTest: a gtest fixture whose tests share one default server
// (memory mode on loopback, tests/harness.h), started once for the suite and
// stopped after its last test.
#ifndef MEMKV_TESTS_SHARED_SERVER_H_
#define MEMKV_TESTS_SHARED_SERVER_H_

#include <gtest/gtest.h>

#include "tests/harness.h"

namespace memkv::testing {

class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static inline ServerProcess* server_ = nullptr;
};

}  // namespace memkv::testing

#endif  // MEMKV_TESTS_SHARED_SERVER_H_
