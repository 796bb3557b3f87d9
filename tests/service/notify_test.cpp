// The real conveyord under a NOTIFY_SOCKET the test owns, as systemd would run it with
// Type=notify and WatchdogSec: READY=1 only once the gRPC socket accepts connections,
// WATCHDOG=1 at half the interval, STATUS= lines with sessions and frames/s, STOPPING=1
// on SIGTERM, and exit 0. Without NOTIFY_SOCKET nothing is sent and nothing breaks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "daemon_process.h"
#include "service_test_util.h"
#include "synthetic_frame.h"
#include "text_match.h"

namespace conveyor::service_test {
namespace {

size_t FirstIndexOf(const std::vector<NotifySocket::Message>& m, const std::string& text, size_t from = 0) {
  for (size_t i = from; i < m.size(); ++i) {
    if (m[i].text.find(text) != std::string::npos) return i;
  }
  return m.size();
}

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The frames/s of the first STATUS= line of the expected form, or -1 when there is none.
double StatusFps(const std::string& message) {
  const std::string fps =
      testing::FirstCapture(message, R"(^STATUS=(?:draining, )?\d+ sessions?, (\d+\.\d) frames/s)");
  return fps.empty() ? -1 : std::stod(fps);
}

TEST(Notify, ReadyAfterListenWatchdogAtHalfIntervalStatusAndStoppingOnSigterm) {
  const std::string dir = e2e::MakeTempDir();
  const std::string notify_path = dir + "/notify.sock";
  // A listener of the test's own naming, so the receiving thread knows where to connect.
  const std::string grpc_path = dir + "/grpc.sock";
  std::atomic<bool> ready_seen{false}, connect_at_ready{false};
  NotifySocket notify(notify_path, [&](const std::string& text) {
    if (text.find("READY=1") != std::string::npos && !ready_seen.exchange(true)) {
      connect_at_ready = CanConnectUnix(grpc_path);
    }
  });
  ASSERT_TRUE(notify.ok());

  std::unique_ptr<e2e::DaemonProcess> daemon;
  {
    NotifyEnvironment env(notify_path, "400000");
    daemon = std::make_unique<e2e::DaemonProcess>(std::vector<std::string>{"--listen", "unix:" + grpc_path});
  }
  ASSERT_TRUE(daemon->ready());
  ASSERT_TRUE(notify.WaitFor("READY=1", 10));
  EXPECT_TRUE(connect_at_ready) << "READY=1 came before the gRPC socket accepted connections";

  // Some frames, so a STATUS= line has a rate above zero.
  auto stub = v1::Transcoder::NewStub(grpc::CreateChannel("unix:" + grpc_path, grpc::InsecureChannelCredentials()));
  const std::vector<uint8_t> frame = testing::MakeSyntheticFrame(320, 240, PixelFormat::kRgb24, 5).bytes;
  e2e::TranscodeCall call;
  call.spec = RawJob(320, 240);
  call.send_input = [&](e2e::TranscodeStream* s) {
    for (int i = 0; i < 30; ++i) {
      if (!SendRawFrame(s, frame, i)) return false;
    }
    return true;
  };
  const e2e::TranscodeOutcome out = e2e::RunTranscode(stub.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (const auto& m : notify.messages()) {
          if (StatusFps(m.text) > 0) return true;
        }
        return false;
      },
      6))
      << "no STATUS= line with a frame rate above 0 after 30 frames";

  EXPECT_EQ(daemon->Stop(), 0);
  EXPECT_TRUE(notify.WaitFor("STOPPING=1", 2));

  const std::vector<NotifySocket::Message> m = notify.messages();
  const size_t ready = FirstIndexOf(m, "READY=1");
  const size_t first_ping = FirstIndexOf(m, "WATCHDOG=1");
  const size_t stopping = FirstIndexOf(m, "STOPPING=1");
  ASSERT_LT(ready, m.size());
  ASSERT_LT(first_ping, m.size()) << "no WATCHDOG=1";
  ASSERT_LT(stopping, m.size()) << "no STOPPING=1";
  EXPECT_LT(ready, first_ping) << "a watchdog ping before READY=1";
  EXPECT_LT(first_ping, stopping);

  // Pings between READY and STOPPING: WATCHDOG_USEC=400000, so one every ~200 ms.
  std::vector<std::chrono::steady_clock::time_point> pings;
  for (size_t i = ready; i < stopping; ++i) {
    if (m[i].text == "WATCHDOG=1") pings.push_back(m[i].at);
  }
  ASSERT_GE(pings.size(), 5u) << "the daemon ran for over a second";
  for (size_t i = 1; i < pings.size(); ++i) {
    const double gap = Ms(pings[i] - pings[i - 1]);
    EXPECT_GE(gap, 100) << "ping " << i;
    EXPECT_LE(gap, 350) << "ping " << i;
  }
  // The whole run: no gap near the interval, where systemd would kill us.
  EXPECT_LT(Ms(m[stopping].at - pings.back()), 400);

  int status_lines = 0;
  for (const auto& msg : m) {
    if (msg.text.find("STATUS=") != std::string::npos) {
      ++status_lines;
      EXPECT_GE(StatusFps(msg.text), 0) << "unexpected status line: " << msg.text;
    }
  }
  EXPECT_GE(status_lines, 3);  // with READY=1, every 2 s after, with STOPPING=1
  EXPECT_NE(m[stopping].text.find("STATUS=draining"), std::string::npos) << m[stopping].text;
  e2e::Shell("rm -rf '" + dir + "'");
}

TEST(Notify, WithoutNotifySocketTheDaemonRunsAndStops) {
  unsetenv("NOTIFY_SOCKET");
  e2e::DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace conveyor::service_test
