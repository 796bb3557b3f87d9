// SIGTERM under load on the real conveyord: sessions streaming at a steady pace when the
// drain starts either finish with every frame (the short ones, inside the drain timeout)
// or end UNAVAILABLE (the long ones, cut at the timeout); none ends OK with frames
// missing. New streams during the drain get UNAVAILABLE, and the daemon exits 0.
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

}  // namespace
}  // namespace conveyor::service_test
