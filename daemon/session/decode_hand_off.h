// The hand-off between a container session's decode thread and its pipeline thread.
//
// The decode thread demuxes and decodes up to `depth` frames ahead of the pipeline
// thread, which converts, selects and submits them to the worker's lane. Without it, one
// thread did both in turn, so the decoder sat idle whenever the session waited for room
// in its lane or for its client to read: a hardware decoder (one session's frames at a
// time on the engines) and FFmpeg's frame threads (fed one packet at a time) alike.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace conveyor {

template <typename Item>
class DecodeHandOff {
 public:
  explicit DecodeHandOff(size_t depth) : depth_(depth > 0 ? depth : 1) {}
  DecodeHandOff(const DecodeHandOff&) = delete;
  DecodeHandOff& operator=(const DecodeHandOff&) = delete;

  // Decode thread: waits while `depth` items are waiting. False (the item dropped) once
  // the pipeline thread has stopped taking them.
  bool Push(Item item) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return stopped_ || items_.size() < depth_; });
    if (stopped_) return false;
    items_.push_back(std::move(item));
    ready_.notify_one();
    return true;
  }

  // Pipeline thread: the next item, waiting for one; nullopt once stopped.
  std::optional<Item> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return stopped_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    Item item = std::move(items_.front());
    items_.pop_front();
    room_.notify_one();
    return item;
  }

  // Pipeline thread: takes no more; wakes and refuses the decode thread. Items still
  // waiting are dropped here, on the calling thread.
  void Stop() {
    std::deque<Item> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      dropped.swap(items_);
    }
    room_.notify_all();
    ready_.notify_all();
  }

  bool stopped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }

  size_t waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return items_.size();
  }

 private:
  const size_t depth_;
  mutable std::mutex mu_;
  std::condition_variable room_, ready_;
  std::deque<Item> items_;
  bool stopped_ = false;
};

}  // namespace conveyor
