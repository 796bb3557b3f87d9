// Worker liveness: idle queue waits still beat, a thread that stops beating shows up as
// stale, and a real CPU worker keeps its thread fresh while it has nothing to do.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "frame_queue.h"
#include "heartbeat.h"
#include "scheduler.h"
#include "worker.h"

namespace conveyor {
namespace {

using std::chrono::milliseconds;

TEST(Heartbeat, IdlePopTicksEveryPeriodAndStillReturnsItems) {
  FrameQueue<int> q;
  std::atomic<int> ticks{0};
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(260));
    q.Push(7);
  });
  auto item = q.PopTicking([&] { ticks.fetch_add(1); }, milliseconds(50));
  producer.join();
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(*item, 7);
  // One tick on entry, one per 50 ms period while waiting ~260 ms, one on return.
  EXPECT_GE(ticks.load(), 4);
  EXPECT_LE(ticks.load(), 9);
  q.Close();
  EXPECT_FALSE(q.PopTicking([] {}, milliseconds(50)).has_value());
}

TEST(Heartbeat, StalestThreadIsTheOneThatStoppedBeating) {
  Heartbeats beats(2);
  for (int i = 0; i < 6; ++i) {
    beats.Beat(0);
    std::this_thread::sleep_for(milliseconds(50));
  }
  beats.Beat(0);
  // Thread 1 last beat at construction, about 300 ms ago; thread 0 just now.
  EXPECT_GE(beats.StalestSeconds(), 0.25);
  beats.Beat(1);
  EXPECT_LT(beats.StalestSeconds(), 0.1);
}

TEST(Heartbeat, IdleCpuWorkerStaysFresh) {
  std::unique_ptr<Worker> worker = MakeCpuWorker(WorkerOptions{});
  std::this_thread::sleep_for(milliseconds(2500));  // idle for 2.5 heartbeat periods
  EXPECT_LT(worker->Stats().stalest_thread_s, 1.5);
}

// A worker whose thread is stuck in a frame fails the scheduler's liveness check, by name.
// The bound is above kHeartbeatPeriod: an idle thread (the CPU worker's encode thread
// while its delivery thread is held) beats only that often.
TEST(Heartbeat, SchedulerNamesAStuckWorker) {
  const double max_stale_s = std::chrono::duration<double>(kHeartbeatPeriod).count() + 0.5;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::unique_ptr<Worker>> slots;
  slots.push_back(MakeCpuWorker(WorkerOptions{}));
  Worker* worker = slots[0].get();
  Scheduler scheduler(std::move(slots));
  EXPECT_TRUE(scheduler.CheckWorkersAlive(max_stale_s).ok());
  std::vector<uint8_t> pixels(16 * 16 * 3 / 2, 128);
  FrameRequest req;
  req.frame.width = req.frame.height = 16;
  req.frame.plane[0] = pixels.data();
  req.frame.plane[1] = pixels.data() + 256;
  req.frame.plane[2] = pixels.data() + 320;
  req.frame.stride[0] = 16;
  req.frame.stride[1] = req.frame.stride[2] = 8;
  req.renditions = {Rendition{}};
  req.on_done = [released](FrameResult&&) { released.wait(); };  // holds the worker's thread
  ASSERT_TRUE(worker->Submit(std::move(req)).ok());
  std::this_thread::sleep_for(kHeartbeatPeriod + milliseconds(1000));
  const Status stuck = scheduler.CheckWorkersAlive(max_stale_s);
  EXPECT_EQ(stuck.code(), StatusCode::kUnavailable);
  EXPECT_NE(stuck.message().find("cpu"), std::string::npos) << stuck.ToString();
  release.set_value();
  worker->Flush();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(scheduler.CheckWorkersAlive(max_stale_s).ok());
}

}  // namespace
}  // namespace conveyor
