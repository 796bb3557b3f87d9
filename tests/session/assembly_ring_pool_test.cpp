// AssemblyRingPool: a ring handed back is the next session's if the worker and the shape
// match, idle rings of other shapes make room under the budget, and Trim lets old ones go.
#include "assembly_ring_pool.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "registration_counting_worker.h"

namespace conveyor {
namespace {

constexpr auto TestWorker = session_test::SmallCountingWorker;

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

TEST(AssemblyRingPool, AReleasedRingIsTheNextSessionsOfItsWorkerAndShape) {
  auto worker = TestWorker(), other = TestWorker();
  AssemblyRingPool pool(1 << 30);
  StatusOr<std::shared_ptr<FrameAssemblyRing>> first = pool.Acquire(*worker, 4, 3 * kPage);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  FrameAssemblyRing* const made = first->get();
  pool.Release(std::move(first).value());
  EXPECT_EQ(pool.idle_rings(), 1);
  EXPECT_EQ(pool.registered_bytes(), 4 * 3 * kPage) << "kept registered while idle";
  EXPECT_EQ(pool.idle_bytes(), 4 * 3 * kPage);
  EXPECT_EQ(pool.in_use_bytes(), 0u);

  // Another worker, another count, another buffer size: each a ring of its own.
  for (auto [w, count, bytes] : {std::tuple{other.get(), 4, 3 * kPage}, std::tuple{worker.get(), 5, 3 * kPage},
                                 std::tuple{worker.get(), 4, 4 * kPage}}) {
    StatusOr<std::shared_ptr<FrameAssemblyRing>> r = pool.Acquire(*w, count, bytes);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_NE(r->get(), made);
  }
  EXPECT_EQ(worker->registrations(), 3);
  EXPECT_EQ(pool.idle_rings(), 1);

  // The same shape, a frame size that rounds to the same pages: the idle ring itself.
  StatusOr<std::shared_ptr<FrameAssemblyRing>> again = pool.Acquire(*worker, 4, 3 * kPage - 100);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->get(), made);
  EXPECT_EQ(pool.idle_rings(), 0);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  EXPECT_EQ(pool.in_use_bytes(), 4 * 3 * kPage);
  EXPECT_EQ(worker->registrations(), 3) << "no new registration";
  EXPECT_EQ(worker->live_registrations(), 1);
}

// A ring handed back while the worker still holds one of its frames: the next session
// gets it with that buffer still taken, and takes the others.
TEST(AssemblyRingPool, BuffersStillInFlightStayTakenAcrossSessions) {
  auto worker = TestWorker();
  AssemblyRingPool pool(1 << 30);
  std::shared_ptr<FrameAssemblyRing> ring = pool.Acquire(*worker, 2, kPage).value();
  std::shared_ptr<uint8_t> in_flight = ring->TryTake();
  ASSERT_NE(in_flight, nullptr);
  pool.Release(std::move(ring));
  ring = pool.Acquire(*worker, 2, kPage).value();
  EXPECT_EQ(ring->in_use(), 1);
  std::shared_ptr<uint8_t> next = ring->TryTake();
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next.get(), in_flight.get());
  EXPECT_EQ(ring->TryTake(), nullptr);
  in_flight.reset();
  EXPECT_EQ(ring->in_use(), 1);
}

TEST(AssemblyRingPool, IdleRingsOfOtherShapesMakeRoomOldestFirst) {
  auto worker = TestWorker();
  AssemblyRingPool pool(6 * kPage);
  std::shared_ptr<FrameAssemblyRing> a = pool.Acquire(*worker, 2, kPage).value();
  std::shared_ptr<FrameAssemblyRing> b = pool.Acquire(*worker, 3, kPage).value();
  FrameAssemblyRing* const kept = b.get();
  pool.Release(std::move(a));  // the older idle ring
  pool.Release(std::move(b));
  EXPECT_EQ(pool.registered_bytes(), 5 * kPage);

  // 3 pages need room: the 2-page ring (the oldest) goes, the 3-page one stays.
  StatusOr<std::shared_ptr<FrameAssemblyRing>> c = pool.Acquire(*worker, 1, 3 * kPage);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(pool.registered_bytes(), 6 * kPage);
  EXPECT_EQ(worker->live_registrations(), 2);
  EXPECT_EQ(pool.idle_rings(), 1);
  EXPECT_EQ(pool.Acquire(*worker, 3, kPage).value().get(), kept);

  // Past the budget even with nothing idle: RESOURCE_EXHAUSTED, and nothing let go.
  StatusOr<std::shared_ptr<FrameAssemblyRing>> big = pool.Acquire(*worker, 7, kPage);
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(worker->live_registrations(), 1) << "only c is left: the 3-page ring was given out and dropped";
}

// An idle ring let go while a frame of it is still with the worker gives its bytes back
// only when that frame is done: until then a ring that needs them is refused.
TEST(AssemblyRingPool, ALetGoRingsBytesComeBackWithItsLastFrame) {
  auto worker = TestWorker();
  AssemblyRingPool pool(2 * kPage);
  std::shared_ptr<FrameAssemblyRing> a = pool.Acquire(*worker, 2, kPage).value();
  std::shared_ptr<uint8_t> in_flight = a->TryTake();
  pool.Release(std::move(a));
  StatusOr<std::shared_ptr<FrameAssemblyRing>> b = pool.Acquire(*worker, 1, 2 * kPage);
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pool.idle_rings(), 0) << "let go all the same";
  in_flight.reset();
  EXPECT_EQ(pool.registered_bytes(), 0u);
  EXPECT_TRUE(pool.Acquire(*worker, 1, 2 * kPage).ok());
}

TEST(AssemblyRingPool, TrimLetsGoRingsIdleSinceBeforeTheCutoff) {
  auto worker = TestWorker();
  AssemblyRingPool pool(1 << 30);
  pool.Release(pool.Acquire(*worker, 2, kPage).value());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto between = AssemblyRingPool::Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  pool.Release(pool.Acquire(*worker, 3, kPage).value());
  EXPECT_EQ(pool.Trim(between - std::chrono::seconds(1)), 0);
  EXPECT_EQ(pool.Trim(between), 1);
  EXPECT_EQ(pool.idle_rings(), 1);
  EXPECT_EQ(pool.registered_bytes(), 3 * kPage);
  EXPECT_EQ(pool.Trim(AssemblyRingPool::Clock::now() + std::chrono::seconds(1)), 1);
  EXPECT_EQ(pool.registered_bytes(), 0u);
  EXPECT_EQ(worker->live_registrations(), 0);
  pool.Release(nullptr);  // a session that had no ring
  EXPECT_EQ(pool.idle_rings(), 0);
}

}  // namespace
}  // namespace conveyor
