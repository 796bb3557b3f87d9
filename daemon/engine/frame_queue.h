// A small blocking FIFO for handing work between a worker's threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace conveyor {

template <typename T>
class FrameQueue {
 public:
  void Push(T item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(item));
    }
    cv_.notify_one();
  }

  // Blocks until an item arrives or Close() was called and the queue is empty.
  std::optional<T> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Pop() that calls `tick` on waking, and at least every `period` while waiting, so
  // that an idle thread still shows it is alive (see heartbeat.h).
  template <typename Tick>
  std::optional<T> PopTicking(Tick tick, std::chrono::milliseconds period) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!items_.empty() || closed_) break;
      lock.unlock();
      tick();
      lock.lock();
      cv_.wait_for(lock, period, [&] { return closed_ || !items_.empty(); });
    }
    tick();
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // The next item if one is queued now; never blocks.
  std::optional<T> TryPop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace conveyor
