// The scheduler: placement (GPUs first, then the fewest sessions) and round-robin
// dispatch between the sessions of one worker, against a fake worker that records the
// order frames reach it.
#include "scheduler.h"

#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

namespace conveyor {
namespace {

WorkerInfo GpuInfo(int device, const std::string& name) {
  return WorkerInfo{WorkerKind::kGpu, "hip-nvidia", device, name, 1};
}

// Records request ids in submission order. While `gate` is closed, Submit blocks, as a
// real worker does when every slot is busy. A CPU worker unless given a GPU's info.
class RecordingWorker : public Worker {
 public:
  explicit RecordingWorker(WorkerInfo info = {}) : info_(std::move(info)) {}
  std::string Describe() const override { return "recording"; }
  WorkerInfo Info() const override { return info_; }
  Status Submit(FrameRequest request) override {
    std::unique_lock<std::mutex> lock(mu_);
    entered_++;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    order_.push_back(request.id);
    lock.unlock();
    FrameResult r;
    r.id = request.id;
    if (request.on_done) request.on_done(std::move(r));
    return OkStatus();
  }
  void Flush() override {}
  StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void*, size_t) override {
    return std::make_unique<HostMemoryRegistration>();
  }
  WorkerStats Stats() const override { return {}; }
  StatusOr<std::shared_ptr<Sprite>> NewSprite(PixelFormat, int, int, ColorMatrix, ColorRange) override {
    return Unimplemented("recording worker: no sprites");
  }

  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }
  std::vector<uint64_t> order() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }

 private:
  const WorkerInfo info_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int entered_ = 0;
  std::vector<uint64_t> order_;
};

FrameRequest Frame(uint64_t id) {
  FrameRequest f;
  f.id = id;
  return f;
}

TEST(Scheduler, SessionsOfOneWorkerTakeTurnsFrameByFrame) {
  auto worker = std::make_unique<RecordingWorker>();
  RecordingWorker* w = worker.get();
  std::vector<std::unique_ptr<Worker>> slots;
  slots.push_back(std::move(worker));
  Scheduler scheduler(std::move(slots));
  auto heavy = scheduler.Attach(8);
  auto light = scheduler.Attach(8);
  // The first heavy frame reaches the worker and blocks there; then both lanes fill.
  ASSERT_TRUE(heavy->Submit(Frame(100)).ok());
  w->WaitEntered(1);
  for (uint64_t i = 1; i <= 6; ++i) ASSERT_TRUE(heavy->Submit(Frame(100 + i)).ok());
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(light->Submit(Frame(200 + i)).ok());
  w->Open();
  for (int i = 0; i < 1000 && w->order().size() < 10; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const std::vector<uint64_t> want = {100, 200, 101, 201, 102, 202, 103, 104, 105, 106};
  EXPECT_EQ(w->order(), want);
}

TEST(Scheduler, PlacesOnGpusFirstThenOnTheLeastLoaded) {
  std::vector<std::unique_ptr<Worker>> slots;
  slots.push_back(std::make_unique<RecordingWorker>());
  slots.push_back(std::make_unique<RecordingWorker>(GpuInfo(0, "gpu a")));
  slots.push_back(std::make_unique<RecordingWorker>(GpuInfo(1, "gpu b")));
  Scheduler scheduler(std::move(slots));
  auto a = scheduler.Attach(2);
  auto b = scheduler.Attach(2);
  auto c = scheduler.Attach(2);
  EXPECT_EQ(a->worker_index(), 1);
  EXPECT_EQ(b->worker_index(), 2);
  EXPECT_EQ(c->worker_index(), 1);
  b.reset();  // a detached session frees its place
  EXPECT_EQ(scheduler.Attach(2)->worker_index(), 2);
  EXPECT_EQ(scheduler.Load(1).lanes, 2);
}

TEST(Scheduler, ALaneBlocksAtItsCapacityAndCancelReleasesIt) {
  auto worker = std::make_unique<RecordingWorker>();
  RecordingWorker* w = worker.get();
  std::vector<std::unique_ptr<Worker>> slots;
  slots.push_back(std::move(worker));
  Scheduler scheduler(std::move(slots));
  auto lane = scheduler.Attach(2);
  ASSERT_TRUE(lane->Submit(Frame(1)).ok());
  w->WaitEntered(1);  // frame 1 is in the (blocked) worker; the lane holds the next two
  ASSERT_TRUE(lane->Submit(Frame(2)).ok());
  ASSERT_TRUE(lane->Submit(Frame(3)).ok());
  std::atomic<bool> returned{false};
  Status blocked_status;
  std::thread t([&] {
    blocked_status = lane->Submit(Frame(4));
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "a full lane must block its producer";
  EXPECT_EQ(lane->queued(), 2);
  lane->Cancel();
  t.join();
  EXPECT_EQ(blocked_status.code(), StatusCode::kCancelled);
  EXPECT_EQ(lane->queued(), 0);
  w->Open();
  for (int i = 0; i < 100 && w->order().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(w->order(), std::vector<uint64_t>{1}) << "cancelled frames never reach the worker";
}

}  // namespace
}  // namespace conveyor
