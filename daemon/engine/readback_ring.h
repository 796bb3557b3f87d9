// Room for band copies in one pinned host allocation, handed out front to back and given
// back in any order. The GPU worker copies each band of a frame straight into the ring,
// and the frame's result holds a lease on that room until the caller drops it, so the
// bytes reach the caller without a host copy. The shape is a circular log: an
// allocation starts at the head, or at the start once the end has no room, and the tail
// moves past allocations only once they are released. This class keeps offsets only;
// the worker owns the memory.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace conveyor {

class ReadbackRing {
 public:
  // Allocations are rounded up to kAlignment bytes.
  static constexpr size_t kAlignment = 256;

  explicit ReadbackRing(size_t capacity) : capacity_(capacity / kAlignment * kAlignment) {}

  // The offset of `size` contiguous bytes, or nullopt when the ring has no such room
  // now (the caller falls back to another path; nothing waits here).
  std::optional<size_t> Allocate(size_t size);
  // Gives back the allocation that starts at `offset`. Any thread, any order.
  void Release(size_t offset);

  size_t capacity() const { return capacity_; }
  size_t in_use() const;  // bytes from the tail to the head, released gaps included

 private:
  struct Block {
    size_t offset, size;
    bool released;
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Block> blocks_;  // oldest first; the head is the end of the newest
};

}  // namespace conveyor
