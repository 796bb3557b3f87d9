// Sessions driven directly, several at once, through the rpc reactor's call pattern
// (FakeReactor) over a real scheduler, CPU worker and session manager: raw and container
// input, Cancel from another thread mid-stream, a failed session's end, and sessions
// sharing one worker. No gRPC server or client, so the tsan stage runs these and TSan sees
// the session layer's own threads (pipeline, dispatcher, delivery, writer). The helpers are
// in session_test_util.h; shared-memory slots, registered input buffers and output
// back-pressure are in session_buffers_test.cpp.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "session_test_util.h"

namespace conveyor::session_test {
namespace {

// The clip, rendered once for the whole executable.
[[maybe_unused]] ::testing::Environment* const clip_environment =
    ::testing::AddGlobalTestEnvironment(new ClipEnvironment);

TEST_F(SessionTest, RawFramesComeBackOnceInPtsOrder64x48) { RunRawStream(engine_, 64, 48, 24); }
TEST_F(SessionTest, RawFramesComeBackOnceInPtsOrder160x120) { RunRawStream(engine_, 160, 120, 24); }

TEST_F(SessionTest, ContainerInputGivesEveryFrame) { RunContainerStream(engine_); }

// Four raw sizes and the clip at once on the one CPU worker, each from its own producer.
TEST_F(SessionTest, SessionsShareOneWorker) {
  const std::pair<int, int> sizes[] = {{64, 48}, {96, 72}, {128, 96}, {160, 120}};
  std::vector<std::thread> streams;
  for (const auto& [w, h] : sizes) {
    streams.emplace_back([this, w = w, h = h] { RunRawStream(engine_, w, h, 20); });
  }
  streams.emplace_back([this] { RunContainerStream(engine_); });
  for (std::thread& t : streams) t.join();
}

// Cancel from a third thread while the producer still pushes and the writer still
// writes, at several points (before any output, after a few frames, later), on raw and
// container sessions at once. Each ends with the cancel status and leaves no frame in
// its lane, the scheduler or the worker.
TEST_F(SessionTest, CancelMidStreamEndsWithTheCancelStatus) {
  struct Case {
    bool container;
    uint64_t cancel_after_frames;  // frames out before the cancel
    bool via_manager;              // CancelSession's path, else the reactor's OnCancel
  };
  const Case cases[] = {{false, 0, true}, {false, 1, false}, {false, 6, true}, {false, 15, false}, {true, 3, true}};
  std::vector<std::thread> streams;
  for (const Case& c : cases) {
    streams.emplace_back([this, c] {
      SCOPED_TRACE(std::string(c.container ? "container" : "raw") + ", cancel after " +
                   std::to_string(c.cancel_after_frames) + " frames");
      const int frames = 400;  // far more than get through before the cancel
      std::shared_ptr<Session> session = CreateSession(engine_, c.container ? ContainerSpec() : RawSpec(160, 120));
      ASSERT_NE(session, nullptr);
      std::weak_ptr<Session> weak = session;
      const Status cancel = c.via_manager ? Status(StatusCode::kCancelled, "cancelled by CancelSession")
                                          : Status(StatusCode::kCancelled, "cancelled by the client");
      {
        FakeReactor reactor(session, &engine_.manager());
        reactor.Start();
        std::atomic<bool> input_done{false}, cancelled{false};
        std::thread producer([&] {
          if (c.container) {
            // The clip in small chunks, and no half-close before the cancel: the clip is
            // short, and the session must not be able to finish before the cancel.
            const std::vector<uint8_t>& clip = ClipEnvironment::clip();
            for (size_t offset = 0; offset < clip.size(); offset += 1024) {
              v1::TranscodeRequest request;
              request.set_container_chunk(clip.data() + offset, std::min<size_t>(1024, clip.size() - offset));
              if (!reactor.Read(std::move(request))) return;
            }
            while (!cancelled.load()) std::this_thread::sleep_for(milliseconds(1));
            reactor.HalfClose();
          } else {
            FeedRaw(reactor, MakeRawInput(160, 120, frames));
            input_done = true;
          }
        });
        std::thread canceller([&] {
          while (session->frames_out() < c.cancel_after_frames && !session->finished()) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
          EXPECT_FALSE(input_done.load()) << "input ended before the cancel";
          if (c.via_manager) {
            EXPECT_TRUE(engine_.manager().Cancel(session->id()).ok());
          } else {
            session->Cancel(cancel);
          }
          cancelled = true;
        });
        const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
        canceller.join();
        producer.join();
        ASSERT_TRUE(closed.has_value()) << "the stream did not end";
        EXPECT_EQ(closed->code(), StatusCode::kCancelled) << closed->ToString();
        EXPECT_EQ(closed->message(), cancel.message());
        EXPECT_LT(session->frames_out(), static_cast<uint64_t>(frames));
        EXPECT_EQ(session->queue_depth(), 0);
        const StreamOutput out = Reassemble(reactor.Written(), c.container ? 1 : 2);
        // Well formed to the end: the close waits for a frame the worker is delivering.
        EXPECT_EQ(out.problems, "");
        EXPECT_FALSE(out.ends_inside_frame);
        EXPECT_FALSE(out.has_summary);
      }
      session.reset();
      ExpectReleased(weak);
    });
  }
  for (std::thread& t : streams) t.join();
}

// A session that fails while the worker holds its frames ends only once the worker has
// given them back, so that its end (the client's status, the session count) means its
// slots are free. The CPU worker's per-frame test hook holds the frames at a gate.
TEST(SessionEnd, AFailedSessionEndsOnlyOnceTheWorkerHasReturnedItsFrames) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    int held = 0;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  EngineOptions options{4, TestSessionOptions(), nullptr};
  options.worker_fault = [gate](const std::string&) {
    std::unique_lock<std::mutex> lock(gate->mu);
    ++gate->held;
    gate->cv.notify_all();
    gate->cv.wait(lock, [&] { return gate->open; });
    return OkStatus();
  };
  Engine engine(options);
  std::shared_ptr<Session> session = CreateSession(engine, RawSpec(64, 48));
  ASSERT_NE(session, nullptr);
  std::weak_ptr<Session> weak = session;
  {
    FakeReactor reactor(session, &engine.manager());
    reactor.Start();
    std::thread producer([&] { FeedRaw(reactor, MakeRawInput(64, 48, 12)); });
    {
      std::unique_lock<std::mutex> lock(gate->mu);
      ASSERT_TRUE(gate->cv.wait_for(lock, kStreamTimeout, [&] { return gate->held > 0; }))
          << "no frame reached the worker";
    }
    session->Cancel(Status(StatusCode::kCancelled, "cancelled by the test"));
    EXPECT_FALSE(reactor.WaitClosed(milliseconds(300)).has_value())
        << "the stream ended while the worker held a frame of it";
    EXPECT_FALSE(session->finished());
    {
      std::lock_guard<std::mutex> lock(gate->mu);
      gate->open = true;
    }
    gate->cv.notify_all();
    const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
    producer.join();
    ASSERT_TRUE(closed.has_value()) << "the stream did not end once the worker let go";
    EXPECT_EQ(closed->code(), StatusCode::kCancelled) << closed->ToString();
    EXPECT_EQ(closed->message(), "cancelled by the test");
    const StreamOutput out = Reassemble(reactor.Written(), 2);
    EXPECT_EQ(out.problems, "");
    EXPECT_FALSE(out.ends_inside_frame);
  }
  session.reset();
  ExpectReleased(weak);
  engine.ExpectNothingHeld();
}

}  // namespace
}  // namespace conveyor::session_test
