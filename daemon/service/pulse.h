// A timestamp that a loop refreshes on each pass, for liveness checks: the loop is alive
// while its last beat is recent. Cheap enough to beat from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace conveyor {

class Pulse {
 public:
  Pulse() { Beat(); }
  void Beat() { last_ns_.store(NowNs(), std::memory_order_relaxed); }
  double SecondsSinceBeat() const { return (NowNs() - last_ns_.load(std::memory_order_relaxed)) / 1e9; }

 private:
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::atomic<int64_t> last_ns_{0};
};

}  // namespace conveyor
