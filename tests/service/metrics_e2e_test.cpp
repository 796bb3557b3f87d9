// The daemon's metrics and probes as their real consumers see them: a real Prometheus
// server scrapes a real conveyord on loopback and finds the frames a transcode just
// moved, the live exposition passes promtool, and /readyz turns 503 while the daemon
// drains while /healthz stays 200, and the families an SRE reaches for first (process_*,
// sessions ended by code and their durations, ready, draining, the cap) read true.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "metrics_scrape.h"
#include "prometheus_server.h"
#include "service_test_util.h"
#include "synthetic_frame.h"
#include "transcode_client.h"

namespace conveyor::service_test {
namespace {


using testing::HttpGet;
using testing::HttpReply;
using testing::SampleValue;

// Runs `frames` raw 64x48 frames through one session; returns the frames that came back.
size_t Transcode(v1::Transcoder::Stub* stub, int frames) {
  const testing::SyntheticFrame frame = testing::MakeSyntheticFrame(64, 48, PixelFormat::kRgb24, 5);
  e2e::TranscodeCall call;
  call.spec = RawJob(64, 48);
  call.send_input = [&](e2e::TranscodeStream* s) {
    for (int i = 0; i < frames; ++i) {
      if (!SendRawFrame(s, frame.bytes, i)) return false;
    }
    return true;
  };
  const e2e::TranscodeOutcome out = e2e::RunTranscode(stub, call);
  EXPECT_TRUE(out.status.ok()) << out.status.error_message();
  return FrameCount(out);
}

TEST(DaemonMetrics, ProcessSessionOutcomeAndReadinessFamiliesReadTrue) {
  const double started = static_cast<double>(std::time(nullptr));
  e2e::DaemonProcess daemon({"--metrics-listen", "127.0.0.1:0", "--max-sessions", "3"});
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start";
  const int port = daemon.metrics_port();
  ASSERT_GT(port, 0);
  HttpReply m = HttpGet(port, "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_GT(SampleValue(m.body, "process_resident_memory_bytes"), 1 << 20) << m.body;
  EXPECT_GE(SampleValue(m.body, "process_virtual_memory_bytes"), SampleValue(m.body, "process_resident_memory_bytes"));
  EXPECT_GE(SampleValue(m.body, "process_cpu_seconds_total"), 0) << m.body;
  EXPECT_NEAR(SampleValue(m.body, "process_start_time_seconds"), started, 60) << m.body;
  EXPECT_GT(SampleValue(m.body, "process_open_fds"), 3) << m.body;
  EXPECT_GE(SampleValue(m.body, "process_max_fds"), SampleValue(m.body, "process_open_fds")) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_ready"), 1) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_draining"), 0) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_sessions_max"), 3) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_sessions_ended_total{code=\"OK\"}"), 0) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_session_duration_seconds_count"), 0) << m.body;

  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  ASSERT_EQ(Transcode(stub.get(), 3), 3u);
  m = HttpGet(port, "/metrics");
  EXPECT_EQ(SampleValue(m.body, "conveyor_sessions_ended_total{code=\"OK\"}"), 1) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_session_duration_seconds_count"), 1) << m.body;
  EXPECT_GT(SampleValue(m.body, "conveyor_session_duration_seconds_sum"), 0) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_session_duration_seconds_bucket{le=\"+Inf\"}"), 1) << m.body;

  e2e::TranscodeCall bad;
  bad.spec = RawJob(0, 48);  // no width: refused before a session exists
  bad.send_input = [](e2e::TranscodeStream*) { return true; };
  ASSERT_EQ(e2e::RunTranscode(stub.get(), bad).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  m = HttpGet(port, "/metrics");
  EXPECT_EQ(SampleValue(m.body, "conveyor_sessions_ended_total{code=\"INVALID_ARGUMENT\"}"), 1) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_sessions_ended_total{code=\"OK\"}"), 1) << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_session_duration_seconds_count"), 1) << "a refusal is no session: " << m.body;
  EXPECT_EQ(SampleValue(m.body, "conveyor_sessions_rejected_total{reason=\"invalid_spec\"}"), 1) << m.body;

  const std::string file = daemon.dir() + "/metrics.txt";
  WriteText(file, m.body);
  EXPECT_EQ(e2e::Shell("promtool check metrics < " + file), 0) << "promtool found problems in " << file;
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(DaemonMetrics, PrometheusScrapesTheFramesATranscodeMoved) {
  e2e::DaemonProcess daemon({"--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start";
  const int port = daemon.metrics_port();
  ASSERT_GT(port, 0);
  testing::PrometheusServer::Options po;
  po.targets = {"127.0.0.1:" + std::to_string(port)};
  auto prometheus = testing::PrometheusServer::Start(po);
  ASSERT_TRUE(prometheus.ok()) << prometheus.status().ToString();
  // Scraped before any frame: the series exist at zero.
  EXPECT_TRUE((*prometheus)->WaitForValue("sum(conveyor_frames_in_total)", 0, std::chrono::seconds(30)).ok());

  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  ASSERT_EQ(Transcode(stub.get(), 7), 7u);
  const Status seen =
      (*prometheus)->WaitForValue("sum(conveyor_frames_out_total{rendition=\"64x48\"})", 7, std::chrono::seconds(30));
  EXPECT_TRUE(seen.ok()) << seen.ToString();
  EXPECT_TRUE((*prometheus)->WaitForValue("conveyor_frames_in_total{device=\"cpu\"}", 7, std::chrono::seconds(10)).ok());
  EXPECT_TRUE((*prometheus)->WaitForValue("conveyor_sessions_started_total", 1, std::chrono::seconds(10)).ok());
  EXPECT_TRUE((*prometheus)
                  ->WaitForValue("conveyor_frame_latency_seconds_count{device=\"cpu\"}", 7, std::chrono::seconds(10))
                  .ok());
  EXPECT_TRUE((*prometheus)
                  ->WaitForValue("conveyor_stage_duration_seconds_count{device=\"cpu\",stage=\"encode\"}", 7,
                                 std::chrono::seconds(10))
                  .ok());
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(DaemonMetrics, LiveExpositionPassesPromtoolAndCountsRejections) {
  e2e::DaemonProcess daemon({"--metrics-listen", "127.0.0.1:0", "--max-sessions", "1"});
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start";
  const int port = daemon.metrics_port();
  ASSERT_GT(port, 0);
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  ASSERT_EQ(Transcode(stub.get(), 3), 3u);
  // The client has its summary a moment before the daemon lets the session go; under
  // load the held session below met the cap of one (RESOURCE_EXHAUSTED) otherwise.
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 0, 10));
  {
    HeldSession held(stub.get(), 64, 48);  // takes the only session
    ASSERT_TRUE(WaitForActiveSessions(stub.get(), 1, 10));
    EXPECT_EQ(TryOneMoreSession(stub.get()), grpc::StatusCode::RESOURCE_EXHAUSTED);
    const HttpReply busy = HttpGet(port, "/readyz");
    EXPECT_EQ(busy.status, 503) << "at the session cap: " << busy.body;
    EXPECT_NE(busy.body.find("session cap"), std::string::npos) << busy.body;
    EXPECT_EQ(SampleValue(HttpGet(port, "/metrics").body, "conveyor_ready"), 0) << "the same condition as /readyz";
    EXPECT_EQ(held.Join().status.error_code(), grpc::StatusCode::OK);
  }
  const HttpReply metrics = HttpGet(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("conveyor_sessions_rejected_total{reason=\"session_cap\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_EQ(SampleValue(metrics.body, "conveyor_sessions_ended_total{code=\"RESOURCE_EXHAUSTED\"}"), 1) << metrics.body;
  EXPECT_NE(metrics.body.find("conveyor_frames_out_total{device=\"cpu\",rendition=\"64x48\"} 5"), std::string::npos);
  const std::string file = daemon.dir() + "/metrics.txt";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(metrics.body.data(), 1, metrics.body.size(), f);
  std::fclose(f);
  EXPECT_EQ(e2e::Shell("promtool check metrics < " + file), 0) << "promtool found problems in " << file;
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(DaemonMetrics, ReadyzIs503WhileDrainingAndHealthzStays200) {
  e2e::DaemonProcess daemon({"--metrics-listen", "127.0.0.1:0", "--drain-timeout", "20"});
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start";
  const int port = daemon.metrics_port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(HttpGet(port, "/readyz").status, 200);
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  HeldSession held(stub.get(), 64, 48);  // keeps the drain going until released
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 1, 10));
  ASSERT_EQ(kill(daemon.pid(), SIGTERM), 0);
  HttpReply ready;
  EXPECT_TRUE(WaitUntil([&] { return (ready = HttpGet(port, "/readyz")).status == 503; }, 10))
      << "readyz answered " << ready.status << ": " << ready.body;
  EXPECT_NE(ready.body.find("draining"), std::string::npos) << ready.body;
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  const HttpReply draining = HttpGet(port, "/metrics");
  EXPECT_EQ(SampleValue(draining.body, "conveyor_draining"), 1) << draining.body;
  EXPECT_EQ(SampleValue(draining.body, "conveyor_ready"), 0) << draining.body;
  EXPECT_EQ(held.Join().status.error_code(), grpc::StatusCode::OK);  // the held session finishes
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace conveyor::service_test
