#include "readback_ring.h"

namespace conveyor {

std::optional<size_t> ReadbackRing::Allocate(size_t size) {
  size = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (size == 0) size = kAlignment;
  std::lock_guard<std::mutex> lock(mu_);
  size_t offset = 0;
  if (!blocks_.empty()) {
    const size_t tail = blocks_.front().offset;
    const size_t head = blocks_.back().offset + blocks_.back().size;
    if (head > tail) {  // in use: [tail, head); free: [head, capacity) and [0, tail)
      if (size <= capacity_ - head) {
        offset = head;
      } else if (size <= tail) {
        offset = 0;
      } else {
        return std::nullopt;
      }
    } else {  // wrapped: free is [head, tail)
      if (size > tail - head) return std::nullopt;
      offset = head;
    }
  } else if (size > capacity_) {
    return std::nullopt;
  }
  blocks_.push_back({offset, size, false});
  return offset;
}

void ReadbackRing::Release(size_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Block& b : blocks_) {
    if (b.offset == offset && !b.released) {
      b.released = true;
      break;
    }
  }
  while (!blocks_.empty() && blocks_.front().released) blocks_.pop_front();
}

size_t ReadbackRing::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (blocks_.empty()) return 0;
  const size_t tail = blocks_.front().offset;
  const size_t head = blocks_.back().offset + blocks_.back().size;
  return head > tail ? head - tail : capacity_ - tail + head;
}

}  // namespace conveyor
