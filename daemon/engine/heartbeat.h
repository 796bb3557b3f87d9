// Liveness of a worker's threads for /healthz and the systemd watchdog. Each thread beats
// whenever it wakes, with work or idle (queues wake their waiters every second), so a
// stale beat means a thread is stuck: a GPU wait that never returns, a deadlock.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

namespace conveyor {

class Heartbeats {
 public:
  explicit Heartbeats(int threads) : n_(threads), last_ns_(new std::atomic<int64_t>[threads]) {
    for (int i = 0; i < n_; ++i) last_ns_[i].store(Now());
  }

  void Beat(int thread) { last_ns_[thread].store(Now(), std::memory_order_relaxed); }

  // Seconds since the least recent beat of any thread.
  double StalestSeconds() const {
    int64_t oldest = Now();
    for (int i = 0; i < n_; ++i) oldest = std::min(oldest, last_ns_[i].load(std::memory_order_relaxed));
    return (Now() - oldest) / 1e9;
  }

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  const int n_;
  std::unique_ptr<std::atomic<int64_t>[]> last_ns_;
};

// How often an idle worker thread wakes to beat.
constexpr std::chrono::milliseconds kHeartbeatPeriod{1000};

}  // namespace conveyor
