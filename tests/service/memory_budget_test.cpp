// Admission by memory on the real conveyord: under a small limits.memory_budget_bytes
// small raw sessions are admitted beside each other while a 4K one is refused with
// RESOURCE_EXHAUSTED naming the budget; container input is admitted at its provisional
// size and refused once probing shows a size that does not fit; a reload that raises the
// budget admits both. The metrics show the estimates' sum, the budget and the refusals.
// The estimates are worked out in tests/session/session_memory_test.
#include <signal.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

// Decode threads fixed, so that container input's estimate is the same on every host.
std::string Config(int budget_mib) {
  return "[limits]\nmemory_budget_bytes = " + std::to_string(static_cast<uint64_t>(budget_mib) << 20) +
         "\n[workers]\ndecode_threads = 2\n";
}

e2e::TranscodeCall ContainerCall(const std::string& path) {
  e2e::TranscodeCall call;
  call.spec.mutable_container()->set_format_hint("matroska");
  call.spec.add_renditions()->set_quality(80);
  call.send_input = [path](e2e::TranscodeStream* s) { return e2e::SendFileChunks(s, path); };
  return call;
}

e2e::TranscodeCall Raw4kCall(const std::vector<uint8_t>* frame) {
  e2e::TranscodeCall call;
  call.spec = RawJob(3840, 2160);
  call.send_input = [frame](e2e::TranscodeStream* s) { return frame == nullptr || SendRawFrame(s, *frame, 0); };
  call.half_close = frame != nullptr;
  call.deadline_s = frame == nullptr ? 5 : 60;
  return call;
}

TEST(MemoryBudget, RefusesSessionsPastTheBudgetAndAReloadThatRaisesItAdmitsThem) {
  const std::string dir = e2e::MakeTempDir();
  const std::string config = dir + "/conveyord.toml";
  const std::string log = dir + "/conveyord.log";
  const std::string clip = dir + "/1440p.mkv";
  ASSERT_EQ(e2e::Shell("/usr/bin/ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi -i "
                       "testsrc2=size=2560x1440:rate=25 -frames:v 2 -c:v libx264 -preset ultrafast -pix_fmt yuv420p '" +
                       clip + "'"),
            0);
  WriteText(config, Config(250));
  std::unique_ptr<e2e::DaemonProcess> daemon;
  {
    StderrToFile capture(log);
    daemon = std::make_unique<e2e::DaemonProcess>(
        std::vector<std::string>{"--config", config, "--log-level", "info", "--metrics-listen", "127.0.0.1:0"});
  }
  ASSERT_TRUE(daemon->ready()) << ReadText(log);
  auto stub = v1::Transcoder::NewStub(daemon->Channel());
  const int port = daemon->metrics_port();
  const std::string refusals = "conveyor_sessions_rejected_total{reason=\"memory_budget\"}";
  EXPECT_EQ(ScrapeSample(port, "conveyor_sessions_memory_budget_bytes"), 250 << 20);
  EXPECT_EQ(ScrapeSample(port, "conveyor_sessions_memory_estimate_bytes"), 0);

  {
    // 96x64 RGB: about 72 MiB each, 64 MiB of them the output bound.
    HeldSession first(stub.get(), 96, 64);
    HeldSession second(stub.get(), 96, 64);
    ASSERT_TRUE(WaitForActiveSessions(stub.get(), 2, 10));
    // 10 frames of 96 x 64 x 3, the 64 MiB output bound with 5 JPEGs of 96 x 64 x 1.5 +
    // 4096, and 8 MiB: 75748352 bytes each.
    EXPECT_EQ(ScrapeSample(port, "conveyor_sessions_memory_estimate_bytes"), 2 * 75748352.0);
    const e2e::TranscodeOutcome refused = e2e::RunTranscode(stub.get(), Raw4kCall(nullptr));
    EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.status.error_message();
    const std::string why = refused.status.error_message();
    EXPECT_NE(why.find("limits.memory_budget_bytes: a 3840x2160 session needs about 369 MiB and 105 of 250 MiB"),
              std::string::npos)
        << why;
    EXPECT_FALSE(refused.started);
    EXPECT_EQ(ScrapeSample(port, refusals), 1);
    // A third small one still fits: 217 of 250 MiB.
    HeldSession third(stub.get(), 96, 64);
    ASSERT_TRUE(WaitForActiveSessions(stub.get(), 3, 10));
    for (HeldSession* s : {&first, &second, &third}) {
      const e2e::TranscodeOutcome& out = s->Join();
      EXPECT_TRUE(out.status.ok()) << out.status.error_message();
      EXPECT_EQ(FrameCount(out), 2u);
    }
  }
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 0, 10));

  // Container input is admitted as 1920x1080 (195 MiB) and refused once the decoder has
  // found 2560x1440 (271 MiB), before Started.
  const e2e::TranscodeOutcome probed = e2e::RunTranscode(stub.get(), ContainerCall(clip));
  EXPECT_EQ(probed.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << probed.status.error_message();
  EXPECT_NE(probed.status.error_message().find(
                "limits.memory_budget_bytes: a 2560x1440 session needs about 271 MiB and 250 of 250 MiB are free"),
            std::string::npos)
      << probed.status.error_message();
  EXPECT_FALSE(probed.started);
  EXPECT_EQ(ScrapeSample(port, refusals), 2);
  EXPECT_TRUE(WaitUntil([&] { return ScrapeSample(port, "conveyor_sessions_memory_estimate_bytes") == 0; }, 10));

  WriteText(config, Config(1024));
  ASSERT_EQ(kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string text = ReadText(log);
        return text.find("reload: applied limits.memory_budget_bytes") != std::string::npos;
      },
      10))
      << ReadText(log);
  EXPECT_EQ(ScrapeSample(port, "conveyor_sessions_memory_budget_bytes"), 1024.0 * (1 << 20));

  const std::vector<uint8_t> frame(3840u * 2160 * 3, 128);
  const e2e::TranscodeOutcome large = e2e::RunTranscode(stub.get(), Raw4kCall(&frame));
  ASSERT_TRUE(large.status.ok()) << large.status.error_message();
  EXPECT_EQ(FrameCount(large), 1u);
  const e2e::TranscodeOutcome container = e2e::RunTranscode(stub.get(), ContainerCall(clip));
  ASSERT_TRUE(container.status.ok()) << container.status.error_message();
  EXPECT_EQ(FrameCount(container), 2u);

  EXPECT_EQ(daemon->Stop(), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::service_test
