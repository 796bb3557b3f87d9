// A daemon owns its addresses: a second conveyord on the gRPC port or the metrics port of a
// running one must fail to start, saying which address and why, rather than share the port
// (SO_REUSEPORT would let the kernel split new connections between the two). The metrics
// port is bound before gRPC serves, so a daemon that fails on it never takes a call.
#include <gtest/gtest.h>

#include <string>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

// Runs a second conveyord with `listen_flags` for at most 20 s; its exit status and stderr.
std::pair<int, std::string> SecondDaemon(const std::string& dir, const std::string& listen_flags) {
  const int rc = e2e::Shell("timeout 20 " CONVEYORD_PATH " --config '' --workers cpu --cpu-threads 1 " + listen_flags +
                            " 2>" + dir + "/err >/dev/null");
  return {rc, ReadText(dir + "/err")};
}

TEST(Listen, ASecondDaemonOnTheSameGrpcPortFailsToStartNamingTheAddress) {
  e2e::DaemonProcess first({"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(first.ready()) << "conveyord did not start";
  ASSERT_GT(first.tcp_port(), 0);
  const std::string address = "127.0.0.1:" + std::to_string(first.tcp_port());
  const std::string dir = e2e::MakeTempDir();
  const auto [rc, err] = SecondDaemon(dir, "--listen " + address + " --metrics-listen ''");
  EXPECT_NE(rc, 0) << "a second conveyord started on " << address << ":\n" << err;
  EXPECT_NE(rc, 124) << "the second conveyord was still running after 20 s";
  EXPECT_NE(err.find("could not bind " + address), std::string::npos) << err;
  EXPECT_NE(err.find("Address already in use"), std::string::npos) << err;
  // The first daemon still answers on its port.
  auto stub = v1::Transcoder::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ServerStatus status;
  const grpc::Status st = stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &status);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(first.Stop(), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

TEST(Listen, ASecondDaemonOnTheSameMetricsPortFailsToStart) {
  e2e::DaemonProcess first({"--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(first.ready()) << "conveyord did not start";
  ASSERT_GT(first.metrics_port(), 0);
  const std::string address = "127.0.0.1:" + std::to_string(first.metrics_port());
  const std::string dir = e2e::MakeTempDir();
  const auto [rc, err] =
      SecondDaemon(dir, "--log-level info --listen unix:" + dir + "/s.sock --metrics-listen " + address);
  EXPECT_NE(rc, 0) << "a second conveyord started with its metrics on " << address << ":\n" << err;
  EXPECT_NE(rc, 124) << "the second conveyord was still running after 20 s";
  EXPECT_NE(err.find(address), std::string::npos) << err;
  // The metrics port is bound first: the daemon stops before gRPC serves a client.
  EXPECT_EQ(err.find("listening on"), std::string::npos) << err;
  EXPECT_EQ(first.Stop(), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::service_test
