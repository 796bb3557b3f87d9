// conveyorctl with a balanced target (ipv4:, dns:) against the fake Transcoder: a call
// whose daemon fails before any output is made once more, and only then; targets that
// name no address are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "channel.h"
#include "ctl_test_fixture.h"

namespace conveyor::ctl {
namespace {

class ConveyorctlBalancingTest : public ConveyorctlTest {
 protected:
  std::string Balanced() const { return "ipv4:127.0.0.1:" + std::to_string(server_->tcp_port()); }
  // How many calls the fake saw (each begins with its spec).
  int Calls() const {
    int n = 0;
    for (const v1::TranscodeRequest& r : fake_.Requests()) n += r.has_spec() ? 1 : 0;
    return n;
  }
};

TEST_F(ConveyorctlBalancingTest, ACallThatFailedBeforeAnyOutputIsMadeOnceMore) {
  WriteWholeFile(Path("in.mkv"), Pattern(100000, 1));
  fake_.failures = 1;
  fake_.failure = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is draining; retry on another instance");
  fake_.failure_responses = {Started()};  // admitted, then gone: still no output
  fake_.responses = {Started(), Packet(0, 0, "jpeg", true), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mkv"), "-o", Path("frames")}, Balanced()), 0) << err_;
  EXPECT_EQ(Calls(), 2);
  EXPECT_NE(err_.find("conveyorctl: UNAVAILABLE: the server is draining; retry on another instance; no output had "
                      "come, so the call is made once more"),
            std::string::npos)
      << err_;
  EXPECT_EQ(ReadWholeFile(Path("frames/0-000000.jpg")), "jpeg");
  // The second call sent the whole input again, from its start.
  const std::vector<v1::TranscodeRequest> requests = fake_.Requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_TRUE(requests.back().has_container_range() || requests.back().has_container_chunk());
}

TEST_F(ConveyorctlBalancingTest, ARefusalAtAdmissionIsMadeOnceMoreButNotTwice) {
  WriteWholeFile(Path("in.mkv"), Pattern(1000, 2));
  fake_.failures = 2;
  fake_.failure = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "session limit reached (64 active)");
  fake_.responses = {Started(), Summary()};
  EXPECT_EQ(Run({"transcode", Path("in.mkv"), "-o", Path("frames")}, Balanced()), kExitFailed);
  EXPECT_EQ(Calls(), 2) << "one more call, not more";
  EXPECT_NE(err_.find("conveyorctl: RESOURCE_EXHAUSTED: session limit reached (64 active)\n"), std::string::npos)
      << err_;
}

TEST_F(ConveyorctlBalancingTest, NoSecondCallOnceOutputHasCome) {
  WriteWholeFile(Path("in.mkv"), Pattern(1000, 3));
  fake_.failures = 1;
  fake_.failure = grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed");
  fake_.failure_responses = {Started(), Packet(0, 0, "jp", false)};
  fake_.responses = {Started(), Packet(0, 0, "jpeg", true), Summary()};
  EXPECT_EQ(Run({"transcode", Path("in.mkv"), "-o", Path("frames")}, Balanced()), kExitFailed);
  EXPECT_EQ(Calls(), 1);
  EXPECT_NE(err_.find("conveyorctl: UNAVAILABLE: Socket closed"), std::string::npos) << err_;
  EXPECT_FALSE(std::filesystem::exists(Path("frames"))) << "partial output is removed, not kept as if whole";
  // Nor after a refusal that came once the session had started.
  fake_.failures = 2;
  fake_.failure = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "limits.memory_budget_bytes: ...");
  fake_.failure_responses = {Started()};
  EXPECT_EQ(Run({"transcode", Path("in.mkv"), "-o", Path("frames")}, Balanced()), kExitFailed);
  EXPECT_EQ(Calls(), 2);
}

TEST_F(ConveyorctlBalancingTest, OnlyABalancedTargetAndAFileInputAreMadeAgain) {
  WriteWholeFile(Path("in.mkv"), Pattern(1000, 4));
  fake_.failures = 1;
  fake_.failure = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is draining; retry on another instance");
  fake_.responses = {Started(), Summary()};
  EXPECT_EQ(Run({"transcode", Path("in.mkv"), "-o", Path("frames")}), kExitFailed) << "one daemon: no other";
  EXPECT_EQ(Calls(), 1);

  // stdin: its bytes are gone once sent.
  fake_.failures = 2;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "container", 9), 9);
  close(fds[1]);
  const int saved = dup(STDIN_FILENO);
  dup2(fds[0], STDIN_FILENO);
  close(fds[0]);
  const int rc = Run({"transcode", "-", "-o", Path("frames")}, Balanced());
  dup2(saved, STDIN_FILENO);
  close(saved);
  EXPECT_EQ(rc, kExitFailed);
  EXPECT_EQ(Calls(), 2);
}

TEST(ClientTarget, BalancedTargetsAreGrpcResolverNamesAndOthersListenAddresses) {
  ClientOptions client;
  ASSERT_TRUE(ParseTarget("dns:///conveyor.example:50051", &client).ok());
  EXPECT_TRUE(client.balanced());
  EXPECT_EQ(TargetText(client), "dns:///conveyor.example:50051");
  ASSERT_TRUE(ParseTarget("ipv4:10.0.0.1:50051,10.0.0.2:50051", &client).ok());
  EXPECT_EQ(client.balanced_target, "ipv4:10.0.0.1:50051,10.0.0.2:50051");
  ASSERT_TRUE(ParseTarget("127.0.0.1:50051", &client).ok());
  EXPECT_FALSE(client.balanced()) << "a plain address goes to one daemon";
  EXPECT_EQ(TargetText(client), "127.0.0.1:50051");
  for (const char* bad : {"dns:", "dns:///", "ipv4:", "ipv6:"}) {
    EXPECT_EQ(ParseTarget(bad, &client).code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace conveyor::ctl
