// FrameAssemblyRing and PinnedInputBudget: buffers taken and given back, the budget held
// for the ring's life, and the registration kept until the last frame from it is dropped.
#include "frame_assembly_ring.h"

#include <unistd.h>

#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "registration_counting_worker.h"

namespace conveyor {
namespace {

constexpr auto TestWorker = session_test::SmallCountingWorker;

TEST(PinnedInputBudget, ReservesUpToItsLimit) {
  PinnedInputBudget budget(100);
  EXPECT_TRUE(budget.TryReserve(60));
  EXPECT_FALSE(budget.TryReserve(41));
  EXPECT_TRUE(budget.TryReserve(40));
  EXPECT_EQ(budget.in_use(), 100u);
  budget.Give(60);
  EXPECT_EQ(budget.in_use(), 40u);
  EXPECT_FALSE(PinnedInputBudget(10).TryReserve(UINT64_MAX));  // no wrap-around
}

TEST(FrameAssemblyRing, BuffersAreDistinctPageAlignedAndComeBack) {
  auto worker = TestWorker();
  auto budget = std::make_shared<PinnedInputBudget>(1 << 30);
  const size_t frame_bytes = 160 * 120 * 3 / 2;
  StatusOr<std::shared_ptr<FrameAssemblyRing>> ring = FrameAssemblyRing::Create(*worker, 3, frame_bytes, budget);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(budget->in_use(), (*ring)->bytes());
  EXPECT_EQ((*ring)->bytes(), 3 * ((frame_bytes + page - 1) / page * page));
  EXPECT_EQ(worker->live_registrations(), 1);

  std::vector<std::shared_ptr<uint8_t>> leases;
  std::set<uint8_t*> seen;
  for (int i = 0; i < 3; ++i) {
    leases.push_back((*ring)->TryTake());
    ASSERT_NE(leases.back(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(leases.back().get()) % page, 0u);
    std::memset(leases.back().get(), i, frame_bytes);  // writable, the whole frame
    seen.insert(leases.back().get());
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ((*ring)->in_use(), 3);
  EXPECT_EQ((*ring)->TryTake(), nullptr) << "a fourth buffer from a ring of three";

  uint8_t* const freed = leases[1].get();
  leases[1].reset();  // the worker is done with that frame
  EXPECT_EQ((*ring)->in_use(), 2);
  std::shared_ptr<uint8_t> again = (*ring)->TryTake();
  EXPECT_EQ(again.get(), freed);
  EXPECT_EQ(leases[0].get()[0], 0);  // the others untouched
  EXPECT_EQ(leases[2].get()[frame_bytes - 1], 2);
}

// The session drops its ring when it ends, while the worker may still hold frames from
// it: the registration and the budget stay until the last of them goes.
TEST(FrameAssemblyRing, TheLastFrameOutGivesBackTheRegistrationAndTheBudget) {
  auto worker = TestWorker();
  auto budget = std::make_shared<PinnedInputBudget>(1 << 30);
  StatusOr<std::shared_ptr<FrameAssemblyRing>> ring = FrameAssemblyRing::Create(*worker, 2, 4096, budget);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  std::shared_ptr<uint8_t> held = (*ring)->TryTake();
  ring->reset();
  EXPECT_EQ(worker->live_registrations(), 1);
  EXPECT_GT(budget->in_use(), 0u);
  held.get()[4095] = 1;  // still mapped
  held.reset();
  EXPECT_EQ(worker->live_registrations(), 0);
  EXPECT_EQ(budget->in_use(), 0u);
}

TEST(FrameAssemblyRing, NoRingPastTheBudgetOrWithoutARegistration) {
  auto worker = TestWorker();
  auto budget = std::make_shared<PinnedInputBudget>(3 * 4096);
  StatusOr<std::shared_ptr<FrameAssemblyRing>> big = FrameAssemblyRing::Create(*worker, 4, 4096, budget);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("workers.pinned_input_bytes"), std::string::npos) << big.status().message();
  EXPECT_EQ(budget->in_use(), 0u);
  EXPECT_EQ(worker->registrations(), 0);

  worker->RefuseRegistrations();
  StatusOr<std::shared_ptr<FrameAssemblyRing>> refused = FrameAssemblyRing::Create(*worker, 2, 4096, budget);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(budget->in_use(), 0u) << "a ring that could not register gives its reservation back";

  for (int count : {0, 33}) {
    EXPECT_EQ(FrameAssemblyRing::Create(*worker, count, 4096, budget).status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace conveyor
