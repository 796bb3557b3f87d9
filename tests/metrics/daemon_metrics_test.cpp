// conveyord's catalogue: every family registered with its labels, handles that update
// the right series (session ends by gRPC code among them), and `promtool check metrics`
// clean on a fully populated scrape.
#include "daemon_metrics.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "exposition.h"
#include "test_process.h"

namespace conveyor::metrics {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";

struct PromtoolResult {
  int rc = -1;
  std::string output;
};

// Pipes `text` into `promtool check metrics`: rc 0 clean, 3 lint problems, 1 parse error.
PromtoolResult CheckMetrics(const std::string& text) {
  PromtoolResult r;
  const std::string dir = testing::MakeTempDir("conveyor-promtool");
  if (dir.empty()) return r;
  const std::string file = dir + "/metrics.txt";
  std::ofstream(file) << text;
  const std::string cmd = std::string(kPromtool) + " check metrics < " + file + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::remove(file.c_str());
  rmdir(dir.c_str());
  return r;
}

// Renders a catalogue with every series present: two devices, renditions, all reasons,
// every gauge set or bound and every histogram observed.
std::string PopulatedScrape(Registry& r) {
  StatusOr<DaemonMetrics> m = DaemonMetrics::Create(r, {"0.3.0", "hip-nvidia"});
  if (!m.ok()) return "create: " + m.status().ToString();
  std::vector<ScopedCallback> keep;
  ScopedCallback sessions = std::move(m->BindSessionsActive([] { return 3.0; }).value());
  ScopedCallback heap_in_use = std::move(m->BindHeapInUse([] { return 12582912.0; }).value());
  ScopedCallback heap_free = std::move(m->BindHeapFree([] { return 4194304.0; }).value());
  ScopedCallback pinned_in_use = std::move(m->BindPinnedInput("in_use", [] { return 32505856.0; }).value());
  ScopedCallback pinned_idle = std::move(m->BindPinnedInput("idle", [] { return 65011712.0; }).value());
  ScopedCallback surfaces = std::move(m->BindDecoderSurfaces("gpu0", [] { return 6266880.0; }).value());
  ScopedCallback retired = std::move(m->BindRetiredDecoders("gpu0", [] { return 2.0; }).value());
  ScopedCallback engines = std::move(m->BindVideoEngines("gpu0", [] { return 7.0; }).value());
  ScopedCallback ready = std::move(m->BindReady([] { return 1.0; }).value());
  ScopedCallback draining = std::move(m->BindDraining([] { return 0.0; }).value());
  ScopedCallback sessions_max = std::move(m->BindSessionsMax([] { return 64.0; }).value());
  ScopedCallback memory_estimate = std::move(m->BindSessionsMemoryEstimate([] { return 151496704.0; }).value());
  ScopedCallback memory_budget = std::move(m->BindSessionsMemoryBudget([] { return 262144000.0; }).value());
  ScopedCallback tls_server = std::move(m->BindTlsCertificateExpiry("server", [] { return 1798761600.0; }).value());
  ScopedCallback tls_ca = std::move(m->BindTlsCertificateExpiry("client_ca", [] { return 1893456000.0; }).value());
  for (const char* device : {"cpu", "gpu0"}) {
    DeviceMetrics d = m->ForDevice(device).value();
    d.frames_in->Inc(10);
    d.bytes_in->Inc(1 << 20);
    d.bytes_out->Inc(1 << 18);
    d.worker_restarts->Inc();
    d.stream_overlap_ratio->Set(0.75);
    d.pinned_memory_allocated_bytes->Set(64.0 * 1024 * 1024);
    d.pinned_memory_in_use_bytes->Set(8.0 * 1024 * 1024);
    d.device_memory_used_bytes->Set(512.0 * 1024 * 1024);
    d.frame_latency_seconds->Observe(0.02);
    for (size_t s = 0; s < kStageCount; ++s) d.stage_seconds[s]->Observe(1e-4 * (s + 1));
    m->FramesOut(device, "1920x1080").value()->Inc(10);
    m->FramesOut(device, "640x360").value()->Inc(10);
    StatusOr<ScopedCallback> bound = m->BindQueueDepth(device, [] { return 2.0; });
    if (!bound.ok()) return "bind: " + bound.status().ToString();
    keep.push_back(std::move(bound).value());
  }
  for (size_t i = 0; i < kFrameFailureCount; ++i) m->FramesFailed(static_cast<FrameFailure>(i)).Inc();
  m->SessionsStarted().Inc(5);
  m->IdleHeapReleases().Inc(2);
  m->SessionsRejected(SessionRejection::kDraining).Inc();
  m->SessionsRejected(SessionRejection::kMemoryBudget).Inc(2);
  m->SessionsEnded(StatusCode::kOk).Inc(4);
  m->SessionsEnded(StatusCode::kInvalidArgument).Inc();
  m->SessionDuration().Observe(0.3);
  m->SessionDuration().Observe(7200);
  m->RpcRequests(RpcMethod::kTranscode, StatusCode::kOk).Inc(4);
  m->RpcRequests(RpcMethod::kCancelSession, StatusCode::kNotFound).Inc();
  m->AuthFailures(AuthFailure::kUnknownToken).Inc(2);
  return RenderText(r);
}

TEST(DaemonMetrics, PromtoolAcceptsAFullScrape) {
  ASSERT_EQ(access(kPromtool, X_OK), 0)
      << kPromtool << " is missing: apt-get install prometheus (deploy/install-deps.sh --test)";
  Registry r;
  const std::string text = PopulatedScrape(r);
  const PromtoolResult result = CheckMetrics(text);
  EXPECT_EQ(result.rc, 0) << "promtool says:\n" << result.output << "\non:\n" << text;
}

TEST(DaemonMetrics, PromtoolCatchesBadText) {
  // The check above can fail: promtool does flag a counter without _total and bad syntax.
  ASSERT_EQ(access(kPromtool, X_OK), 0) << kPromtool << " is missing";
  EXPECT_EQ(CheckMetrics("# HELP frames Frames.\n# TYPE frames counter\nframes 1\n").rc, 3);
  EXPECT_EQ(CheckMetrics("frames{ 1\n").rc, 1);
}

TEST(DaemonMetrics, FullScrapeHasEveryFamily) {
  Registry r;
  const std::string text = PopulatedScrape(r);
  for (const char* line : {
           "conveyor_build_info{version=\"0.3.0\",gpu_backend=\"hip-nvidia\"} 1\n",
           "conveyor_frames_in_total{device=\"gpu0\"} 10\n",
           "conveyor_frames_out_total{device=\"cpu\",rendition=\"1920x1080\"} 10\n",
           "conveyor_frames_out_total{device=\"cpu\",rendition=\"other\"} 0\n",
           "conveyor_bytes_in_total{device=\"cpu\"} 1048576\n",
           "conveyor_bytes_out_total{device=\"gpu0\"} 262144\n",
           "conveyor_frames_failed_total{reason=\"gpu_error\"} 1\n",
           "conveyor_sessions_active 3\n",
           "conveyor_sessions_started_total 5\n",
           "conveyor_idle_heap_releases_total 2\n",
           "conveyor_heap_in_use_bytes 12582912\n",
           "conveyor_heap_free_bytes 4194304\n",
           "conveyor_pinned_input_bytes{state=\"in_use\"} 32505856\n",
           "conveyor_pinned_input_bytes{state=\"idle\"} 65011712\n",
           "conveyor_sessions_rejected_total{reason=\"draining\"} 1\n",
           "conveyor_sessions_rejected_total{reason=\"session_cap\"} 0\n",
           "conveyor_queue_depth{device=\"gpu0\"} 2\n",
           "conveyor_stage_duration_seconds_bucket{stage=\"encode\",device=\"gpu0\",le=\"0.00025\"} 1\n",
           "conveyor_stage_duration_seconds_count{stage=\"mux\",device=\"cpu\"} 1\n",
           "conveyor_frame_latency_seconds_bucket{device=\"cpu\",le=\"0.025\"} 1\n",
           "conveyor_stream_overlap_ratio{device=\"gpu0\"} 0.75\n",
           "conveyor_pinned_memory_allocated_bytes{device=\"cpu\"} 67108864\n",
           "conveyor_pinned_memory_in_use_bytes{device=\"cpu\"} 8388608\n",
           "conveyor_device_memory_used_bytes{device=\"gpu0\"} 536870912\n",
           "conveyor_worker_restarts_total{device=\"cpu\"} 1\n",
           "conveyor_decoder_surface_bytes{device=\"gpu0\"} 6266880\n",
           "conveyor_decoders_retired{device=\"gpu0\"} 2\n",
           "conveyor_video_engines{device=\"gpu0\"} 7\n",
           "conveyor_sessions_ended_total{code=\"OK\"} 4\n",
           "conveyor_sessions_ended_total{code=\"INVALID_ARGUMENT\"} 1\n",
           "conveyor_sessions_ended_total{code=\"UNAUTHENTICATED\"} 0\n",
           "conveyor_session_duration_seconds_bucket{le=\"0.5\"} 1\n",
           "conveyor_session_duration_seconds_bucket{le=\"3600\"} 1\n",
           "conveyor_session_duration_seconds_bucket{le=\"+Inf\"} 2\n",
           "conveyor_session_duration_seconds_count 2\n",
           "conveyor_ready 1\n",
           "conveyor_draining 0\n",
           "conveyor_sessions_max 64\n",
           "conveyor_sessions_memory_estimate_bytes 151496704\n",
           "conveyor_sessions_memory_budget_bytes 262144000\n",
           "conveyor_sessions_rejected_total{reason=\"memory_budget\"} 2\n",
           "conveyor_rpc_requests_total{method=\"Transcode\",code=\"OK\"} 4\n",
           "conveyor_rpc_requests_total{method=\"CancelSession\",code=\"NOT_FOUND\"} 1\n",
           "conveyor_rpc_requests_total{method=\"GetServerStatus\",code=\"UNAUTHENTICATED\"} 0\n",
           "conveyor_auth_failures_total{reason=\"unknown_token\"} 2\n",
           "conveyor_auth_failures_total{reason=\"missing\"} 0\n",
           "conveyor_auth_failures_total{reason=\"malformed\"} 0\n",
           "conveyor_tls_certificate_expiry_timestamp_seconds{role=\"server\"} 1798761600\n",
           "conveyor_tls_certificate_expiry_timestamp_seconds{role=\"client_ca\"} 1893456000\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
}

TEST(DaemonMetrics, SessionEndsCountUnderGrpcCodeNames) {
  Registry r;
  DaemonMetrics m = DaemonMetrics::Create(r, {"v", "off"}).value();
  m.SessionsEnded(StatusCode::kCancelled).Inc();
  m.SessionsEnded(StatusCode::kDeadlineExceeded).Inc();
  m.SessionsEnded(static_cast<StatusCode>(99)).Inc();  // no such code: UNKNOWN, not a new series
  const std::string text = RenderText(r);
  for (const char* line : {"conveyor_sessions_ended_total{code=\"CANCELLED\"} 1\n",
                           "conveyor_sessions_ended_total{code=\"DEADLINE_EXCEEDED\"} 1\n",
                           "conveyor_sessions_ended_total{code=\"UNKNOWN\"} 1\n",
                           "conveyor_sessions_ended_total{code=\"RESOURCE_EXHAUSTED\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  size_t series = 0;
  for (size_t at = text.find("\nconveyor_sessions_ended_total{"); at != std::string::npos;
       at = text.find("\nconveyor_sessions_ended_total{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, static_cast<size_t>(kGrpcCodeCount)) << "one series per gRPC code, no more";
  // The names are base/status.h's for the codes it has.
  for (StatusCode c : {StatusCode::kOk, StatusCode::kInvalidArgument, StatusCode::kResourceExhausted,
                       StatusCode::kFailedPrecondition, StatusCode::kUnavailable, StatusCode::kUnauthenticated}) {
    EXPECT_STREQ(GrpcCodeName(static_cast<int>(c)), StatusCodeName(c));
  }
}

size_t CountSeries(const std::string& text, const std::string& family) {
  const std::string start = "\n" + family + "{";
  size_t n = 0;
  for (size_t at = text.find(start); at != std::string::npos; at = text.find(start, at + 1)) ++n;
  return n;
}

TEST(DaemonMetrics, RpcCallsCountByMethodAndGrpcCodeName) {
  Registry r;
  DaemonMetrics m = DaemonMetrics::Create(r, {"v", "off"}).value();
  m.RpcRequests(RpcMethod::kListSessions, StatusCode::kUnauthenticated).Inc();
  m.RpcRequests(RpcMethod::kTranscode, StatusCode::kResourceExhausted).Inc(2);
  m.RpcRequests(RpcMethod::kGetServerStatus, static_cast<StatusCode>(99)).Inc();  // UNKNOWN, not a new series
  const std::string text = RenderText(r);
  for (const char* line : {"conveyor_rpc_requests_total{method=\"ListSessions\",code=\"UNAUTHENTICATED\"} 1\n",
                           "conveyor_rpc_requests_total{method=\"Transcode\",code=\"RESOURCE_EXHAUSTED\"} 2\n",
                           "conveyor_rpc_requests_total{method=\"GetServerStatus\",code=\"UNKNOWN\"} 1\n",
                           "conveyor_rpc_requests_total{method=\"CancelSession\",code=\"OK\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  EXPECT_EQ(CountSeries(text, "conveyor_rpc_requests_total"), kRpcMethodCount * kGrpcCodeCount)
      << "one series per method and gRPC code, no more";
  EXPECT_EQ(CountSeries(text, "conveyor_auth_failures_total"), kAuthFailureCount);
}

TEST(DaemonMetrics, CreatingTwiceInOneRegistryIsAnError) {
  Registry r;
  ASSERT_TRUE(DaemonMetrics::Create(r, {"v", "off"}).ok());
  const StatusOr<DaemonMetrics> again = DaemonMetrics::Create(r, {"v", "off"});
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
}

TEST(DaemonMetrics, RenditionsPastTheCapCountAsOther) {
  Registry r;
  DaemonMetrics m = DaemonMetrics::Create(r, {"v", "off"}).value();
  ASSERT_TRUE(m.ForDevice("cpu").ok());
  // "other" already holds one of the slots.
  for (size_t i = 1; i < DaemonMetrics::kMaxRenditionsPerFamily; ++i) {
    ASSERT_TRUE(m.FramesOut("cpu", std::to_string(i) + "x16").ok()) << i;
  }
  Counter* overflow = m.FramesOut("cpu", "9999x9999").value();
  EXPECT_EQ(overflow, m.FramesOut("cpu", "other").value());
  EXPECT_NE(overflow, m.FramesOut("cpu", "1x16").value());
}

TEST(DaemonMetrics, QueueDepthUnbindsWithItsBinding) {
  Registry r;
  DaemonMetrics m = DaemonMetrics::Create(r, {"v", "off"}).value();
  {
    StatusOr<ScopedCallback> b = m.BindQueueDepth("cpu", [] { return 1.0; });
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    const std::string text = RenderText(r);
    EXPECT_NE(text.find("conveyor_queue_depth{device=\"cpu\"} 1\n"), std::string::npos) << text;
    // The memory gauges are ForDevice's children, not bindings: none here.
    EXPECT_EQ(text.find("conveyor_pinned_memory_in_use_bytes"), std::string::npos) << text;
  }
  EXPECT_EQ(RenderText(r).find("conveyor_queue_depth"), std::string::npos);
}

TEST(DaemonMetrics, MemoryGaugesExistAtZeroFromForDevice) {
  // Set once a second by the daemon; until the first update they read 0, not nothing.
  Registry r;
  DaemonMetrics m = DaemonMetrics::Create(r, {"v", "off"}).value();
  DeviceMetrics d = m.ForDevice("gpu1").value();
  std::string text = RenderText(r);
  for (const char* line : {"conveyor_pinned_memory_allocated_bytes{device=\"gpu1\"} 0\n",
                           "conveyor_pinned_memory_in_use_bytes{device=\"gpu1\"} 0\n",
                           "conveyor_device_memory_used_bytes{device=\"gpu1\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  d.device_memory_used_bytes->Set(4096);
  text = RenderText(r);
  EXPECT_NE(text.find("conveyor_device_memory_used_bytes{device=\"gpu1\"} 4096\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace conveyor::metrics
