// SIGTERM under load on the real conveyord: sessions streaming at a steady pace when the
// drain starts either finish with every frame (the short ones, inside the drain timeout)
// or end UNAVAILABLE (the long ones, cut at the timeout); none ends OK with frames
// missing. New streams during the drain get UNAVAILABLE, and the daemon exits 0. Under a
// notify socket a drain longer than the unit's TimeoutStopSec keeps extending systemd's
// stop timeout, and a second SIGTERM or SIGINT ends the drain at once.
#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "daemon_process.h"
#include "service_test_util.h"
#include "synthetic_frame.h"

namespace conveyor::service_test {
namespace {

struct PacedSession {
  int frames = 0;  // frames sent
  e2e::TranscodeOutcome out;
  std::chrono::steady_clock::time_point ended;
};

TEST(Drain, SigtermMidStreamFinishesOrRefusesEverySessionAndExitsZero) {
  const double drain_timeout_s = 2;
  e2e::DaemonProcess daemon({"--drain-timeout", "2"});
  ASSERT_TRUE(daemon.ready());
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  const std::vector<uint8_t> frame = testing::MakeSyntheticFrame(160, 120, PixelFormat::kRgb24, 9).bytes;
  const auto pace = std::chrono::milliseconds(30);

  // Two short sessions (~0.6 s) end inside the drain timeout; two long ones (~6 s) do not.
  std::vector<PacedSession> sessions(4);
  sessions[0].frames = sessions[1].frames = 20;
  sessions[2].frames = sessions[3].frames = 200;
  std::vector<std::thread> clients;
  for (PacedSession& s : sessions) {
    clients.emplace_back([&, session = &s] {
      e2e::TranscodeCall call;
      call.spec = RawJob(160, 120);
      call.deadline_s = 30;
      call.send_input = [&](e2e::TranscodeStream* stream) {
        for (int i = 0; i < session->frames; ++i) {
          if (!SendRawFrame(stream, frame, i)) return false;
          std::this_thread::sleep_for(pace);
        }
        return true;
      };
      session->out = e2e::RunTranscode(stub.get(), call);
      session->ended = std::chrono::steady_clock::now();
    });
  }
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 4, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // mid-stream: some frames are out

  const auto sigterm_at = std::chrono::steady_clock::now();
  std::atomic<int> exit_code{-100};
  std::thread stopper([&] { exit_code = daemon.Stop(drain_timeout_s + 15); });
  // New streams are refused while the drain runs.
  grpc::StatusCode refused = grpc::StatusCode::OK;
  for (int i = 0; i < 100 && refused != grpc::StatusCode::UNAVAILABLE; ++i) {
    refused = TryOneMoreSession(stub.get(), 1);
  }
  EXPECT_EQ(refused, grpc::StatusCode::UNAVAILABLE);
  for (std::thread& t : clients) t.join();
  stopper.join();
  EXPECT_EQ(exit_code, 0);

  int finished = 0, cut = 0;
  for (size_t i = 0; i < sessions.size(); ++i) {
    const PacedSession& s = sessions[i];
    SCOPED_TRACE("session " + std::to_string(i));
    if (s.out.status.ok()) {
      ++finished;
      EXPECT_EQ(FrameCount(s.out), static_cast<size_t>(s.frames)) << "ended OK with frames missing";
      ASSERT_TRUE(s.out.summary_seen);
      EXPECT_EQ(s.out.summary.frames_out(), static_cast<uint64_t>(s.frames));
      EXPECT_GT(s.ended, sigterm_at) << "finished before the drain began: the test did not test the drain";
    } else {
      ++cut;
      EXPECT_EQ(s.out.status.error_code(), grpc::StatusCode::UNAVAILABLE) << s.out.status.error_message();
      EXPECT_LT(FrameCount(s.out), static_cast<size_t>(s.frames));
    }
  }
  EXPECT_EQ(finished, 2) << "the short sessions should finish inside the drain timeout";
  EXPECT_EQ(cut, 2) << "the long sessions should be cut at the drain timeout";
}

double SecondsBetween(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

TEST(Drain, ExtendsTheStopTimeoutWhileADrainOutlastsTimeoutStopSec) {
  const double stop_timeout_s = SpanSeconds(ServiceKeys(ReadText(kUnitPath))["TimeoutStopSec"]);
  ASSERT_GT(stop_timeout_s, 0) << kUnitPath;
  const double drain_timeout_s = stop_timeout_s + 120;
  const std::string dir = e2e::MakeTempDir();
  NotifySocket notify(dir + "/notify.sock");
  ASSERT_TRUE(notify.ok());
  std::unique_ptr<e2e::DaemonProcess> daemon;
  {
    NotifyEnvironment env(dir + "/notify.sock");
    daemon = std::make_unique<e2e::DaemonProcess>(
        std::vector<std::string>{"--drain-timeout", std::to_string(drain_timeout_s)});
  }
  ASSERT_TRUE(daemon->ready());
  auto stub = v1::Transcoder::NewStub(daemon->Channel());
  HeldSession held(stub.get(), 96, 64);
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 1, 10));

  const auto sigterm_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(daemon->pid(), SIGTERM), 0);
  ASSERT_TRUE(notify.WaitFor("STOPPING=1", 5));
  EXPECT_TRUE(WaitUntil([&] { return MessagesWith(notify, "EXTEND_TIMEOUT_USEC=").size() >= 3; }, 15))
      << "fewer than 3 EXTEND_TIMEOUT_USEC= messages while a drain of " << drain_timeout_s
      << " s runs under TimeoutStopSec=" << stop_timeout_s;
  const std::vector<NotifySocket::Message> extends = MessagesWith(notify, "EXTEND_TIMEOUT_USEC=");
  ASSERT_FALSE(extends.empty());
  EXPECT_LT(SecondsBetween(sigterm_at, extends.front().at), 2) << "the first extension comes with the drain's start";
  for (size_t i = 0; i < extends.size(); ++i) {
    SCOPED_TRACE("extension " + std::to_string(i) + ": " + extends[i].text);
    const double extend_s = std::stod(NotifyValue(extends[i].text, "EXTEND_TIMEOUT_USEC")) / 1e6;
    // systemd's deadline becomes now + extend_s: past the drain's end, not forever past it.
    const double drain_left = drain_timeout_s - SecondsBetween(sigterm_at, extends[i].at);
    EXPECT_GE(extend_s, drain_left);
    EXPECT_LE(extend_s, drain_left + 60);
    // Each says what the drain waits for.
    const std::string status = NotifyValue(extends[i].text, "STATUS");
    EXPECT_NE(status.find("draining, 1 session"), std::string::npos) << status;
    EXPECT_NE(status.find("s left"), std::string::npos) << status;
    // The next comes well before the last one lapses.
    if (i > 0) {
      EXPECT_LT(SecondsBetween(extends[i - 1].at, extends[i].at), 10);
    }
  }

  // The session finishes whole, and with it the drain.
  const e2e::TranscodeOutcome& out = held.Join();
  EXPECT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(FrameCount(out), 2u);
  EXPECT_TRUE(ExitedWithin(daemon->pid(), 10));
  EXPECT_EQ(daemon->Stop(5), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

// SIGTERM starts a long drain with two sessions held open; `second` comes once the drain
// runs, and must end it at once.
void SecondSignalEndsTheDrain(int second) {
  const std::string dir = e2e::MakeTempDir();
  NotifySocket notify(dir + "/notify.sock");
  ASSERT_TRUE(notify.ok());
  std::unique_ptr<e2e::DaemonProcess> daemon;
  {
    NotifyEnvironment env(dir + "/notify.sock");
    daemon = std::make_unique<e2e::DaemonProcess>(std::vector<std::string>{"--drain-timeout", "600"});
  }
  ASSERT_TRUE(daemon->ready());
  auto stub = v1::Transcoder::NewStub(daemon->Channel());
  HeldSession first(stub.get(), 96, 64);
  HeldSession second_session(stub.get(), 96, 64);
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 2, 10));

  ASSERT_EQ(kill(daemon->pid(), SIGTERM), 0);
  ASSERT_TRUE(notify.WaitFor("STOPPING=1", 5));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the drain is under way
  const auto second_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(daemon->pid(), second), 0);
  EXPECT_TRUE(ExitedWithin(daemon->pid(), 5)) << "still draining 5 s after a second signal";
  EXPECT_LT(SecondsBetween(second_at, std::chrono::steady_clock::now()), 5);
  for (HeldSession* s : {&first, &second_session}) {
    const e2e::TranscodeOutcome& out = s->Join();
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::UNAVAILABLE) << out.status.error_message();
    EXPECT_NE(out.status.error_message().find("draining ended by a second signal"), std::string::npos)
        << out.status.error_message();
  }
  EXPECT_EQ(daemon->Stop(5), 0);
  const std::vector<NotifySocket::Message> ended = MessagesWith(notify, "second signal");
  EXPECT_FALSE(ended.empty()) << "no STATUS= says why the drain ended";
  e2e::Shell("rm -rf '" + dir + "'");
}

TEST(Drain, ASecondSigtermEndsTheDrainAtOnceWithUnavailable) { SecondSignalEndsTheDrain(SIGTERM); }

TEST(Drain, SigintDuringTheDrainEndsItAtOnceWithUnavailable) { SecondSignalEndsTheDrain(SIGINT); }

}  // namespace
}  // namespace conveyor::service_test
