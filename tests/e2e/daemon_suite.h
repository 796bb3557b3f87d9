// A test suite that shares one conveyord (DaemonProcess with its default flags) among
// its tests: started before the suite's first test, stopped after its last, where it
// must exit cleanly. Each test gets a fresh stub.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"

namespace conveyor::e2e {

class DaemonSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new DaemonProcess(); }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Stop(), 0);
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(daemon_->ready()) << "conveyord did not start";
    stub_ = v1::Transcoder::NewStub(daemon_->Channel());
  }
  static inline DaemonProcess* daemon_ = nullptr;
  std::unique_ptr<v1::Transcoder::Stub> stub_;
};

}  // namespace conveyor::e2e
