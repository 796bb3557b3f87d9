// ByteQueue: a deque of chunks under one mutex, with one condition variable per side.
#include "byte_queue.h"

#include <algorithm>
#include <cstring>

extern "C" {
#include <libavutil/error.h>
}

namespace conveyor::media {

ByteQueue::ByteQueue(size_t capacity_bytes, std::function<void()> on_space)
    : capacity_(capacity_bytes), on_space_(std::move(on_space)) {}

bool ByteQueue::FitsLocked(size_t size) const { return queued_ == 0 || queued_ + size <= capacity_; }

Status ByteQueue::Push(std::vector<uint8_t> chunk) {
  std::unique_lock<std::mutex> lock(mu_);
  writable_.wait(lock, [&] { return cancelled_ || closed_ || FitsLocked(chunk.size()); });
  if (cancelled_) return Status(StatusCode::kCancelled, "byte queue: cancelled");
  if (closed_) return FailedPrecondition("byte queue: push after close");
  if (chunk.empty()) return OkStatus();
  queued_ += chunk.size();
  peak_ = std::max(peak_, queued_);
  chunks_.push_back(std::move(chunk));
  lock.unlock();
  readable_.notify_one();
  return OkStatus();
}

bool ByteQueue::TryPush(std::vector<uint8_t>& chunk) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cancelled_ || closed_ || !FitsLocked(chunk.size())) {
    refused_ = true;
    refused_size_ = chunk.size();
    return false;
  }
  if (chunk.empty()) return true;
  queued_ += chunk.size();
  peak_ = std::max(peak_, queued_);
  chunks_.push_back(std::move(chunk));
  chunk.clear();
  lock.unlock();
  readable_.notify_one();
  return true;
}

void ByteQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  readable_.notify_all();
  writable_.notify_all();
}

void ByteQueue::Cancel() {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    chunks_.clear();
    queued_ = 0;
    front_offset_ = 0;
    notify = refused_;
    refused_ = false;
  }
  readable_.notify_all();
  writable_.notify_all();
  if (notify && on_space_) on_space_();
}

int ByteQueue::Read(uint8_t* buf, int size) {
  if (size <= 0) return 0;
  bool notify = false;
  size_t copied = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    readable_.wait(lock, [&] { return cancelled_ || queued_ > 0 || closed_ || generation_ended_; });
    if (cancelled_) return AVERROR_EXIT;
    if (queued_ == 0) return AVERROR_EOF;  // closed (or the generation ended) and drained
    while (copied < static_cast<size_t>(size) && !chunks_.empty()) {
      std::vector<uint8_t>& front = chunks_.front();
      const size_t n = std::min(static_cast<size_t>(size) - copied, front.size() - front_offset_);
      std::memcpy(buf + copied, front.data() + front_offset_, n);
      copied += n;
      front_offset_ += n;
      if (front_offset_ == front.size()) {
        chunks_.pop_front();
        front_offset_ = 0;
      }
    }
    queued_ -= copied;
    read_total_ += copied;
    position_ += copied;
    if (refused_ && FitsLocked(refused_size_)) {
      notify = true;
      refused_ = false;
    }
  }
  writable_.notify_all();
  if (notify && on_space_) on_space_();
  return static_cast<int>(copied);
}

std::optional<uint64_t> ByteQueue::Reposition(uint64_t offset) {
  bool notify = false;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || closed_) return std::nullopt;
    chunks_.clear();
    queued_ = 0;
    front_offset_ = 0;
    generation = ++generation_;
    push_offset_ = offset;
    position_ = offset;
    generation_ended_ = false;
    notify = refused_;
    refused_ = false;
  }
  writable_.notify_all();
  if (notify && on_space_) on_space_();  // a refused chunk of the old generation: now stale
  return generation;
}

StatusOr<ByteQueue::PushAt> ByteQueue::TryPushAt(uint64_t generation, uint64_t offset, std::vector<uint8_t>& chunk,
                                                 bool end) {
  std::unique_lock<std::mutex> lock(mu_);
  if (generation < generation_) return PushAt::kStale;
  if (generation > generation_) {
    return InvalidArgument("seek_id " + std::to_string(generation) + " was never requested (the last is " +
                           std::to_string(generation_) + ")");
  }
  if (offset != push_offset_) {
    return InvalidArgument("offset " + std::to_string(offset) + " is not where the input goes on (" +
                           std::to_string(push_offset_) + ")");
  }
  if (generation_ended_ && !chunk.empty()) {
    return InvalidArgument("bytes at offset " + std::to_string(offset) + " after end_of_input");
  }
  if (cancelled_ || closed_ || !FitsLocked(chunk.size())) {
    refused_ = true;
    refused_size_ = chunk.size();
    return PushAt::kFull;
  }
  push_offset_ += chunk.size();
  if (!chunk.empty()) {
    queued_ += chunk.size();
    peak_ = std::max(peak_, queued_);
    chunks_.push_back(std::move(chunk));
    chunk.clear();
  }
  if (end) generation_ended_ = true;
  lock.unlock();
  readable_.notify_one();
  return PushAt::kTaken;
}

uint64_t ByteQueue::position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_;
}

bool ByteQueue::generation_ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_ended_;
}

size_t ByteQueue::queued_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

size_t ByteQueue::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

uint64_t ByteQueue::bytes_read() const {
  std::lock_guard<std::mutex> lock(mu_);
  return read_total_;
}

bool ByteQueue::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

bool ByteQueue::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

}  // namespace conveyor::media
