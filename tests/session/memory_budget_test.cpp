// Admission by memory: MemoryBudget's arithmetic and messages with hand-computed
// estimates, and the session manager over a real scheduler and CPU worker, which refuses
// a session whose estimate does not fit beside the running ones and admits it once room
// is made (a session removed, the budget raised), and reports readiness as it changes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "memory_budget.h"
#include "scheduler.h"
#include "session_manager.h"
#include "session_memory.h"
#include "worker.h"

namespace conveyor {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// An estimate of `bytes` for a session of width x height (the messages name the size).
SessionMemoryEstimate Estimate(uint64_t bytes, int width = 1920, int height = 1080) {
  SessionMemoryEstimate e;
  e.width = width;
  e.height = height;
  e.input_bytes = bytes;
  return e;
}

TEST(MemoryBudget, ReservesWhatFitsAndNamesTheBudgetWhenNot) {
  MemoryBudget budget(300 * kMiB);
  // A 1080p raw session with two renditions under the default bounds: 129221632 bytes
  // (session_memory_test).
  EXPECT_TRUE(budget.Reserve("a", Estimate(129221632)).ok());
  EXPECT_TRUE(budget.Reserve("b", Estimate(129221632)).ok());
  EXPECT_EQ(budget.charged(), 258443264u);
  const Status refused = budget.Reserve("c", Estimate(129221632));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  // 129221632 bytes are 123.2 MiB, rounded up; 314572800 - 258443264 = 56129536 bytes
  // are free, 53.5 MiB, rounded down.
  EXPECT_EQ(refused.message(),
            "limits.memory_budget_bytes: a 1920x1080 session needs about 124 MiB and 53 of 300 MiB are free");
  EXPECT_EQ(budget.charged(), 258443264u) << "a refused session is not charged";
  budget.Release("a");
  EXPECT_EQ(budget.charged(), 129221632u);
  EXPECT_TRUE(budget.Reserve("c", Estimate(129221632)).ok());
  budget.Release("unknown");
  EXPECT_EQ(budget.charged(), 258443264u);
}

TEST(MemoryBudget, AResizeThatGrowsPastTheBudgetKeepsTheOldCharge) {
  MemoryBudget budget(300 * kMiB);
  SessionMemoryEstimate provisional = Estimate(100 * kMiB);
  provisional.provisional = true;
  ASSERT_TRUE(budget.Reserve("container", provisional).ok());
  ASSERT_TRUE(budget.Reserve("raw", Estimate(150 * kMiB)).ok());
  // The session's own 100 MiB count as free to it: 150 MiB in all.
  EXPECT_TRUE(budget.Resize("container", Estimate(140 * kMiB, 3840, 2160)).ok());
  EXPECT_EQ(budget.charged(), 290 * kMiB);
  const Status refused = budget.Resize("container", Estimate(151 * kMiB, 3840, 2160));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "limits.memory_budget_bytes: a 3840x2160 session needs about 151 MiB and 150 of 300 MiB are free");
  EXPECT_EQ(budget.charged(), 290 * kMiB);
  EXPECT_TRUE(budget.Resize("container", Estimate(10 * kMiB, 320, 240)).ok()) << "a smaller size always fits";
  EXPECT_EQ(budget.charged(), 160 * kMiB);
  EXPECT_EQ(budget.Resize("gone", Estimate(1)).code(), StatusCode::kNotFound);
}

TEST(MemoryBudget, ABudgetLoweredBelowTheChargeLeavesNothingFree) {
  MemoryBudget budget(300 * kMiB);
  ASSERT_TRUE(budget.Reserve("a", Estimate(200 * kMiB)).ok());
  budget.SetBudget(100 * kMiB);
  EXPECT_EQ(budget.budget(), 100 * kMiB);
  const Status refused = budget.Reserve("b", Estimate(kMiB, 64, 48));
  EXPECT_EQ(refused.message(),
            "limits.memory_budget_bytes: a 64x48 session needs about 1 MiB and 0 of 100 MiB are free");
  SessionMemoryEstimate container = Estimate(kMiB);
  container.provisional = true;
  EXPECT_NE(budget.Reserve("b", container).message().find("a container input (1920x1080 until probed) session"),
            std::string::npos);
}

// ---- The session manager ----

v1::JobSpec RawSpec(int width, int height) {
  v1::JobSpec spec;
  spec.mutable_raw()->set_pixel_format(v1::PIXEL_FORMAT_YUV420P);
  spec.mutable_raw()->set_width(width);
  spec.mutable_raw()->set_height(height);
  spec.add_renditions();
  return spec;
}

class ManagerWithBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkerOptions wo;
    wo.cpu_threads = 1;
    std::vector<std::unique_ptr<Worker>> workers;
    workers.push_back(MakeCpuWorker(wo));
    scheduler_ = std::make_unique<Scheduler>(std::move(workers));
    options_.queue_frames = 4;
    options_.output_bytes = 64 << 20;
  }
  // What the manager charges a session of `spec` (session_memory_test checks the sums).
  uint64_t Charge(const v1::JobSpec& spec) {
    StatusOr<Job> job = ParseJobSpec(spec, options_.limits);
    EXPECT_TRUE(job.ok());
    return job.ok() ? EstimateAtAdmission(*job, options_).total() : 0;
  }

  SessionOptions options_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(ManagerWithBudget, RefusesASessionThatDoesNotFitAndAdmitsItOnceThereIsRoom) {
  const uint64_t small = Charge(RawSpec(320, 240));
  const uint64_t large = Charge(RawSpec(3840, 2160));
  EXPECT_EQ(large, 262141952u);  // 124416000 frames + 129337344 output + 8388608
  // Room for two small sessions and not for a large one beside them.
  const uint64_t budget = 2 * small + large - 1;
  SessionManager manager(scheduler_.get(), options_, SessionLimits{64, 600, budget});
  StatusOr<std::shared_ptr<Session>> a = manager.Create(RawSpec(320, 240), "");
  StatusOr<std::shared_ptr<Session>> b = manager.Create(RawSpec(320, 240), "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(manager.memory().charged(), 2 * small);
  StatusOr<std::shared_ptr<Session>> refused = manager.Create(RawSpec(3840, 2160), "");
  ASSERT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("limits.memory_budget_bytes: a 3840x2160 session needs about 250 MiB"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(manager.active(), 2);
  EXPECT_EQ(manager.memory().charged(), 2 * small);

  manager.Remove((*a)->id());
  EXPECT_EQ(manager.memory().charged(), small);
  StatusOr<std::shared_ptr<Session>> c = manager.Create(RawSpec(3840, 2160), "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(manager.memory().charged(), small + large);

  // A budget lowered by a reload ends nothing, and refuses the next session...
  manager.SetLimits(SessionLimits{64, 600, small});
  EXPECT_EQ(manager.Create(RawSpec(320, 240), "").status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(manager.active(), 2);
  // ...until one raised admits it. The count limit still holds beside the budget.
  manager.SetLimits(SessionLimits{3, 600, 10 * large});
  EXPECT_TRUE(manager.Create(RawSpec(320, 240), "").ok());
  const Status capped = manager.Create(RawSpec(320, 240), "").status();
  EXPECT_EQ(capped.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(capped.message().find("session limit reached"), std::string::npos) << capped.message();
  for (const std::shared_ptr<Session>& s : manager.List()) manager.Remove(s->id());
  EXPECT_EQ(manager.memory().charged(), 0u);
}

// grpc.health.v1 follows the listener: it must hear of each change as it happens, not
// at the daemon's next tick, so that balancing clients stop picking a full daemon.
TEST_F(ManagerWithBudget, TheReadinessListenerHearsTheCapTheDrainAndNewLimitsAsTheyHappen) {
  SessionManager manager(scheduler_.get(), options_, SessionLimits{2, 600});
  std::vector<bool> heard;
  manager.SetReadinessListener([&](bool ready) { heard.push_back(ready); });
  StatusOr<std::shared_ptr<Session>> a = manager.Create(RawSpec(320, 240), "");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(heard, (std::vector<bool>{true}));
  StatusOr<std::shared_ptr<Session>> b = manager.Create(RawSpec(320, 240), "");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(heard.back(), false) << "at the cap";
  EXPECT_EQ(manager.Create(RawSpec(320, 240), "").status().code(), StatusCode::kResourceExhausted);
  manager.Remove((*a)->id());
  EXPECT_EQ(heard.back(), true) << "room again";
  manager.SetLimits(SessionLimits{1, 600});
  EXPECT_EQ(heard.back(), false) << "a reload lowered the cap to the sessions running";
  manager.SetLimits(SessionLimits{4, 600});
  EXPECT_EQ(heard.back(), true);
  manager.StartDrain();
  EXPECT_EQ(heard.back(), false) << "draining";
  manager.Remove((*b)->id());
  EXPECT_EQ(heard.back(), false) << "still draining with no session left";
  EXPECT_EQ(heard.size(), 7u);
  manager.SetReadinessListener(nullptr);
}

TEST_F(ManagerWithBudget, ContainerInputIsChargedAtTheProvisionalSize) {
  v1::JobSpec spec;
  spec.mutable_container();
  spec.add_renditions();
  options_.decode_threads = 2;
  const uint64_t provisional = Charge(spec);
  EXPECT_EQ(provisional, 204247872u);  // 28 frames of 1920x1080 with 2 decode threads
  SessionManager manager(scheduler_.get(), options_, SessionLimits{64, 600, provisional});
  StatusOr<std::shared_ptr<Session>> first = manager.Create(spec, "");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(manager.memory().charged(), provisional);
  const Status second = manager.Create(spec, "").status();
  EXPECT_NE(second.message().find("a container input (1920x1080 until probed) session needs about 195 MiB"),
            std::string::npos)
      << second.message();
  manager.Remove((*first)->id());
}

}  // namespace
}  // namespace conveyor
