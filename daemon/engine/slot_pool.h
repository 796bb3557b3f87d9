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

// Frames a worker holds, from Submit() until they are handed over, with a bound: Enter()
// blocks while `limit` frames are held. A slot goes back to its pool as soon as the
// frame's bytes are read back, before the frame waits its turn to be handed over (in
// order within its stream), so this bound, not the slots, caps the finished frames that
// wait behind a slow one.
class InFlightLimit {
 public:
  explicit InFlightLimit(int limit) : limit_(limit) {}

  void Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return count_ < limit_; });
    ++count_;
  }

  void Leave() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --count_;
    }
    cv_.notify_all();
  }

  // Blocks until no frame is held.
  void WaitNone() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return count_ == 0; });
  }

  int Count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const int limit_;
  int count_ = 0;
};

}  // namespace conveyor
