// DecoderLifecycle without a GPU: frames and "decoders" here are plain allocations whose
// frees are recorded, so the order the class promises can be checked: frames freed off
// the caller's thread and only then given back; a retired decoder torn down after its
// frames, after the grace, never while a creation runs, never overlapping one; the oldest
// torn down at once past max_retired; everything freed at destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "decoder_lifecycle.h"

extern "C" {
#include <libavutil/buffer.h>
#include <libavutil/frame.h>
}

namespace conveyor::media {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// When (and on which thread) something was freed.
struct Freed {
  std::mutex mu;
  bool done = false;
  Clock::time_point at;
  std::thread::id thread;
  void Mark() {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    at = Clock::now();
    thread = std::this_thread::get_id();
  }
  bool WaitDone(milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (done) return true;
      }
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
  }
  bool IsDone() {
    std::lock_guard<std::mutex> lock(mu);
    return done;
  }
};

FramePtr FrameThatMarks(Freed* freed) {
  FramePtr f(av_frame_alloc());
  static uint8_t byte = 0;
  f->buf[0] = av_buffer_create(&byte, 1, [](void* opaque, uint8_t*) { static_cast<Freed*>(opaque)->Mark(); }, freed, 0);
  return f;
}

std::shared_ptr<void> DecoderThatMarks(Freed* freed) {
  return std::shared_ptr<void>(freed, [](void* p) { static_cast<Freed*>(p)->Mark(); });
}

DecoderLifecycle::Policy Policy(milliseconds grace, std::size_t max_retired = 4, milliseconds max_wait = milliseconds(60000)) {
  DecoderLifecycle::Policy p;
  p.grace = grace;
  p.max_retired = max_retired;
  p.max_wait = max_wait;
  return p;
}

TEST(DecoderLifecycle, FramesAreFreedOffTheCallersThreadBeforeTheirSurfaceGoesBack) {
  Freed freed;
  auto gate = std::make_shared<SurfaceGate>(2);
  DecoderLifecycle lifecycle;
  lifecycle.Hold(3000, gate.get());
  EXPECT_EQ(gate->held(), 1);
  EXPECT_EQ(lifecycle.held_bytes(), 3000u);
  lifecycle.Free(FrameThatMarks(&freed), gate, 3000);
  // Given back only once freed: wait for the give, then the free must have happened.
  for (int i = 0; i < 5000 && gate->held() != 0; ++i) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_EQ(gate->held(), 0);
  EXPECT_TRUE(freed.IsDone());
  EXPECT_NE(freed.thread, std::this_thread::get_id());
  EXPECT_EQ(lifecycle.held_bytes(), 0u);
}

TEST(DecoderLifecycle, ARetiredDecoderWaitsForItsFramesAndThenTheGrace) {
  const milliseconds grace(60);
  Freed frame, decoder;
  auto gate = std::make_shared<SurfaceGate>(4);
  DecoderLifecycle lifecycle(Policy(grace));
  lifecycle.Hold(1, gate.get());
  lifecycle.Retire(DecoderThatMarks(&decoder), gate);
  EXPECT_EQ(lifecycle.retired(), 1u);
  // Its frame is still held: no teardown, however long past the grace.
  EXPECT_FALSE(decoder.WaitDone(grace * 4));
  const auto frame_freed = Clock::now();
  lifecycle.Free(FrameThatMarks(&frame), gate, 1);
  ASSERT_TRUE(decoder.WaitDone(milliseconds(10000)));
  EXPECT_TRUE(frame.IsDone());
  EXPECT_LT(frame.at, decoder.at);
  EXPECT_GE(decoder.at, frame_freed);
  EXPECT_NE(decoder.thread, std::this_thread::get_id());
  EXPECT_EQ(lifecycle.retired(), 0u);
  EXPECT_EQ(lifecycle.teardowns(), 1u);
}

TEST(DecoderLifecycle, NoTeardownStartsWhileACreationRunsNorWithinTheGraceAfterIt) {
  const milliseconds grace(80);
  Freed decoder;
  DecoderLifecycle lifecycle(Policy(grace));
  DecoderLifecycle::Creation creation = lifecycle.BeginCreation();
  ASSERT_TRUE(creation);
  const auto retired = Clock::now();
  lifecycle.Retire(DecoderThatMarks(&decoder), nullptr);
  EXPECT_FALSE(decoder.WaitDone(grace * 4));  // the creation holds it back
  creation = DecoderLifecycle::Creation();      // ends it
  EXPECT_FALSE(creation);
  const auto ended = Clock::now();
  ASSERT_TRUE(decoder.WaitDone(milliseconds(10000)));
  EXPECT_GE(decoder.at - ended, grace);
  EXPECT_GE(decoder.at - retired, grace * 5);
}

TEST(DecoderLifecycle, PastMaxRetiredTheOldestGoesAtOnce) {
  Freed a, b, c;
  DecoderLifecycle lifecycle(Policy(milliseconds(60000), 2));
  lifecycle.Retire(DecoderThatMarks(&a), nullptr);
  lifecycle.Retire(DecoderThatMarks(&b), nullptr);
  lifecycle.Retire(DecoderThatMarks(&c), nullptr);
  ASSERT_TRUE(a.WaitDone(milliseconds(10000)));
  EXPECT_FALSE(b.WaitDone(milliseconds(100)));
  EXPECT_FALSE(c.IsDone());
  EXPECT_EQ(lifecycle.retired(), 2u);
}

TEST(DecoderLifecycle, AFrameHeldPastMaxWaitNoLongerHoldsTheTeardownBack) {
  Freed decoder;
  auto gate = std::make_shared<SurfaceGate>(4);
  DecoderLifecycle lifecycle(Policy(milliseconds(10), 4, milliseconds(150)));
  lifecycle.Hold(1, gate.get());  // never freed
  const auto retired = Clock::now();
  lifecycle.Retire(DecoderThatMarks(&decoder), gate);
  ASSERT_TRUE(decoder.WaitDone(milliseconds(10000)));
  EXPECT_GE(decoder.at - retired, milliseconds(150));
}

TEST(DecoderLifecycle, DestructionFreesEveryFrameAndDecoder) {
  Freed frame, decoder;
  auto gate = std::make_shared<SurfaceGate>(4);
  {
    DecoderLifecycle lifecycle(Policy(milliseconds(60000)));
    lifecycle.Hold(1, gate.get());
    lifecycle.Retire(DecoderThatMarks(&decoder), gate);
    lifecycle.Free(FrameThatMarks(&frame), gate, 1);
  }
  EXPECT_TRUE(frame.IsDone());
  EXPECT_TRUE(decoder.IsDone());
  EXPECT_EQ(gate->held(), 0);
}

// Creations on four threads and teardowns on the lifecycle's thread, with no grace and a
// bound of one so that teardowns come as often as they can: never two at once.
TEST(DecoderLifecycle, CreationsAndTeardownsNeverOverlap) {
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  auto step = [&] {
    if (inside.fetch_add(1) != 0) overlaps++;
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    inside.fetch_sub(1);
  };
  std::atomic<int> torn{0};
  DecoderLifecycle lifecycle(Policy(milliseconds(0), 1));  // after what its teardowns use
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i) {
        {
          DecoderLifecycle::Creation c = lifecycle.BeginCreation();
          step();
        }
        lifecycle.Retire(std::shared_ptr<void>(new int(0),
                                               [&](void* p) {
                                                 step();
                                                 torn++;
                                                 delete static_cast<int*>(p);
                                               }),
                         nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 10000 && torn.load() < 159; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GE(torn.load(), 159);  // all but the one the bound lets wait
  EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
}  // namespace conveyor::media
