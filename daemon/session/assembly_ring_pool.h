// Frame-assembly rings kept registered between sessions. Making a ring is not free: on
// the GPU host, 18 1080p buffers (56 MB) take about 30 ms to fault in and register
// (tests/gpu/h200_host_register.cu), and the default ring is 10 of them; paid by every
// session, that made short raw sessions slower with the ring than without it. So a session
// hands its ring back here when its input ends, and the next session of the same worker
// and shape takes it as it is, still registered.
//
// Idle rings count against the same budget (workers.pinned_input_bytes). A session that
// needs room lets go of idle rings of other shapes, oldest first; and the session
// manager's reaper lets go of any ring idle for longer than kIdleRingKeep, so pinned
// memory goes back to the host some time after a burst of sessions ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "frame_assembly_ring.h"
#include "status.h"
#include "worker.h"

namespace conveyor {

class AssemblyRingPool {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kIdleRingKeep{60};

  explicit AssemblyRingPool(uint64_t limit_bytes) : budget_(std::make_shared<PinnedInputBudget>(limit_bytes)) {}
  AssemblyRingPool(const AssemblyRingPool&) = delete;
  AssemblyRingPool& operator=(const AssemblyRingPool&) = delete;

  // A ring of `count` buffers of `frame_bytes` registered with `worker`: an idle one of
  // that shape if there is one, else a new one (FrameAssemblyRing::Create's errors).
  StatusOr<std::shared_ptr<FrameAssemblyRing>> Acquire(Worker& worker, int count, size_t frame_bytes);
  // The session is done with `ring` (null: nothing). Frames of it still with the worker
  // keep their buffers until they are done, as before.
  void Release(std::shared_ptr<FrameAssemblyRing> ring);
  // Lets go of the rings idle since before `cutoff`; returns how many.
  int Trim(Clock::time_point cutoff);

  // Registered bytes, idle rings included: what the budget holds.
  uint64_t registered_bytes() const { return budget_->in_use(); }
  // Of them, the idle rings', and the rest: rings of running sessions, and rings let go
  // whose last frames are still with a worker (conveyor_pinned_input_bytes{state="idle"}
  // and {state="in_use"}). The two are read one after the other, not as one snapshot.
  uint64_t idle_bytes() const;
  uint64_t in_use_bytes() const;
  int idle_rings() const;

 private:
  struct IdleRing {
    std::shared_ptr<FrameAssemblyRing> ring;
    Clock::time_point since;
  };

  std::shared_ptr<PinnedInputBudget> budget_;
  mutable std::mutex mu_;
  std::deque<IdleRing> idle_;  // oldest first
};

}  // namespace conveyor
