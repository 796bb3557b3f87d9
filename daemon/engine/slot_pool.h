// Which slots of a worker's ring are free. Acquire() blocks while all are in use, which
// is where a worker pushes back on its producers; Release() hands a slot back only once
// the worker is done with every buffer in it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

namespace conveyor {

class SlotPool {
 public:
  explicit SlotPool(int slots) {
    for (int i = slots - 1; i >= 0; --i) free_.push_back(i);
    total_ = slots;
  }

  int Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty(); });
    const int slot = free_.back();
    free_.pop_back();
    return slot;
  }

  void Release(int slot) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(slot);
    }
    cv_.notify_all();
  }

  // Blocks until every slot is free again.
  void WaitAllFree() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return static_cast<int>(free_.size()) == total_; });
  }

  int InUse() const {
    std::lock_guard<std::mutex> lock(mu_);
    return total_ - static_cast<int>(free_.size());
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> free_;
  int total_ = 0;
};

}  // namespace conveyor
