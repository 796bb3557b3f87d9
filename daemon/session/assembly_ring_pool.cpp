// Frame-assembly rings kept registered between sessions (see assembly_ring_pool.h).
#include "assembly_ring_pool.h"

#include <utility>
#include <vector>

namespace conveyor {

StatusOr<std::shared_ptr<FrameAssemblyRing>> AssemblyRingPool::Acquire(Worker& worker, int count,
                                                                       size_t frame_bytes) {
  // Rings let go of here are destroyed after the lock is dropped: unregistering and
  // unmapping take a millisecond or two.
  std::vector<std::shared_ptr<FrameAssemblyRing>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->ring->Fits(worker, count, frame_bytes)) {
        std::shared_ptr<FrameAssemblyRing> ring = std::move(it->ring);
        idle_.erase(it);
        return ring;
      }
    }
    // None of this shape: make room for a new one, if idle rings of other shapes hold it.
    const uint64_t need = FrameAssemblyRing::BytesFor(count, frame_bytes), limit = budget_->limit();
    uint64_t freeing = 0;  // the budget sees the bytes of the rings dropped only once they go
    while (!idle_.empty() && need <= limit && budget_->in_use() - freeing > limit - need) {
      freeing += idle_.front().ring->bytes();
      dropped.push_back(std::move(idle_.front().ring));
      idle_.pop_front();
    }
  }
  // A dropped ring whose last frames are still with the worker gives its bytes back only
  // when they are done; until then the new ring may not fit, and the session assembles
  // in ordinary memory.
  dropped.clear();
  return FrameAssemblyRing::Create(worker, count, frame_bytes, budget_);
}

void AssemblyRingPool::Release(std::shared_ptr<FrameAssemblyRing> ring) {
  if (ring == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(IdleRing{std::move(ring), Clock::now()});
}

int AssemblyRingPool::Trim(Clock::time_point cutoff) {
  std::vector<std::shared_ptr<FrameAssemblyRing>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!idle_.empty() && idle_.front().since < cutoff) {
      dropped.push_back(std::move(idle_.front().ring));
      idle_.pop_front();
    }
  }
  return static_cast<int>(dropped.size());
}

uint64_t AssemblyRingPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t bytes = 0;
  for (const IdleRing& r : idle_) bytes += r.ring->bytes();
  return bytes;
}

uint64_t AssemblyRingPool::in_use_bytes() const {
  const uint64_t idle = idle_bytes(), registered = registered_bytes();
  return registered > idle ? registered - idle : 0;  // a ring may come or go between the reads
}

int AssemblyRingPool::idle_rings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(idle_.size());
}

}  // namespace conveyor
