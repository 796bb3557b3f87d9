#include "thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>

namespace conveyor {
namespace {

TEST(ThreadPool, RunsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int n : {0, 1, 3, 100, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](int i) { hits[i].fetch_add(1); });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " i " << i;
    }
  }
}

TEST(ThreadPool, ConcurrentCallersAreServed) {
  ThreadPool pool(3);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r) pool.ParallelFor(10, [&](int) { total.fetch_add(1); });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 10);
}

}  // namespace
}  // namespace conveyor
