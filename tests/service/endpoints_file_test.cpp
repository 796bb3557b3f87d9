// server.endpoints_file with the real conveyord: listeners on port 0 are listed with the
// ports they bound (the gRPC TCP listener and the HTTP endpoint answer there), the file is
// whole by READY=1, it is gone after a clean stop, and a file that cannot be written stops
// the daemon with an error naming the option.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <httplib.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

// The file's lines as (kind, address) pairs.
std::vector<std::pair<std::string, std::string>> ReadEndpoints(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::pair<std::string, std::string>> lines;
  for (std::string kind, address; in >> kind >> address;) lines.emplace_back(kind, address);
  return lines;
}

int PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? -1 : std::atoi(address.c_str() + colon + 1);
}

TEST(EndpointsFile, ListsThePortsThatPortZeroBoundAndIsWholeByReady) {
  const std::string dir = e2e::MakeTempDir();
  const std::string notify_path = dir + "/notify.sock";
  // The daemon's directory is made under TMPDIR=dir, so the receiving thread finds its
  // endpoints file there before the DaemonProcess constructor has returned.
  std::atomic<bool> ready_seen{false};
  std::atomic<int> lines_at_ready{-1};
  NotifySocket notify(notify_path, [&](const std::string& text) {
    if (text.find("READY=1") == std::string::npos || ready_seen.exchange(true)) return;
    std::error_code ec;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
      if (entry.path().filename() == "endpoints") {
        lines_at_ready = static_cast<int>(ReadEndpoints(entry.path().string()).size());
      }
    }
  });
  ASSERT_TRUE(notify.ok());
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved_tmpdir = old_tmpdir != nullptr ? old_tmpdir : "";
  setenv("TMPDIR", dir.c_str(), 1);
  setenv("NOTIFY_SOCKET", notify_path.c_str(), 1);
  e2e::DaemonProcess daemon({"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"});
  unsetenv("NOTIFY_SOCKET");
  if (old_tmpdir != nullptr) {
    setenv("TMPDIR", saved_tmpdir.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start";
  ASSERT_EQ(daemon.dir().rfind(dir + "/", 0), 0u) << daemon.dir();
  const std::string endpoints_path = daemon.dir() + "/endpoints";

  const auto lines = ReadEndpoints(endpoints_path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], std::make_pair(std::string("grpc"), daemon.target()));
  EXPECT_EQ(lines[1].first, "grpc");
  EXPECT_EQ(lines[1].second.rfind("127.0.0.1:", 0), 0u) << lines[1].second;
  EXPECT_EQ(lines[2].first, "metrics");
  EXPECT_EQ(lines[2].second.rfind("127.0.0.1:", 0), 0u) << lines[2].second;
  const int grpc_port = PortOf(lines[1].second), metrics_port = PortOf(lines[2].second);
  ASSERT_GT(grpc_port, 0);
  ASSERT_GT(metrics_port, 0);
  EXPECT_EQ(daemon.tcp_port(), grpc_port);
  EXPECT_EQ(daemon.metrics_port(), metrics_port);

  // Both answer on the ports listed.
  auto stub = v1::Transcoder::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ServerStatus status;
  const grpc::Status st = stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &status);
  EXPECT_TRUE(st.ok()) << st.error_message();
  httplib::Client http("127.0.0.1", metrics_port);
  const auto healthz = http.Get("/healthz");
  ASSERT_TRUE(healthz) << "no answer on the metrics port " << metrics_port;
  EXPECT_EQ(healthz->status, 200);

  // The file was whole when systemd heard READY=1.
  ASSERT_TRUE(notify.WaitFor("READY=1", 5));
  EXPECT_EQ(lines_at_ready.load(), 3);

  EXPECT_EQ(daemon.Stop(), 0);
  EXPECT_NE(access(endpoints_path.c_str(), F_OK), 0) << endpoints_path << " outlived the daemon";
  EXPECT_NE(access((endpoints_path + ".tmp").c_str(), F_OK), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

TEST(EndpointsFile, AFileThatCannotBeWrittenStopsTheDaemonNamingTheOption) {
  const std::string dir = e2e::MakeTempDir();
  const int rc = e2e::Shell("timeout 20 " CONVEYORD_PATH " --config '' --workers cpu --cpu-threads 1 --listen unix:" +
                            dir + "/s.sock --metrics-listen '' --endpoints-file " + dir +
                            "/no-such-dir/endpoints 2>" + dir + "/err >/dev/null");
  const std::string err = ReadText(dir + "/err");
  EXPECT_EQ(rc, 1) << err;
  EXPECT_NE(err.find("server.endpoints_file"), std::string::npos) << err;
  EXPECT_NE(err.find(dir + "/no-such-dir/endpoints"), std::string::npos) << err;
  e2e::Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::service_test
