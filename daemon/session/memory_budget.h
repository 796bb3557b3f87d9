// Admission by memory: the running sessions' memory estimates (session_memory.h) and the
// budget they must fit in (limits.memory_budget_bytes). A session is admitted only when
// its estimate fits in the budget minus what the running ones are charged; it is charged
// until it is removed. A budget lowered by a reload below what is charged ends no
// session: new ones wait for room.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "session_memory.h"
#include "status.h"

namespace conveyor {

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t budget_bytes) : budget_(budget_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Charges `estimate` to session `id`, or RESOURCE_EXHAUSTED naming the option, the
  // session's size and need, and what is free ("limits.memory_budget_bytes: a 3840x2160
  // session needs about 369 MiB and 180 of 2048 MiB are free").
  Status Reserve(const std::string& id, const SessionMemoryEstimate& estimate);
  // Replaces session `id`'s charge with `estimate` (container input once its size is
  // known). A smaller one always fits; a larger one that does not is RESOURCE_EXHAUSTED
  // as for Reserve, and the old charge stays until Release.
  Status Resize(const std::string& id, const SessionMemoryEstimate& estimate);
  void Release(const std::string& id);

  void SetBudget(uint64_t budget_bytes);
  uint64_t budget() const;
  uint64_t charged() const;  // the running sessions' estimates together

 private:
  // OK when a session charged `held` now may be charged `bytes`; mu_ held.
  Status FitsLocked(uint64_t bytes, uint64_t held, const SessionMemoryEstimate& estimate) const;

  mutable std::mutex mu_;
  uint64_t budget_;
  uint64_t charged_ = 0;
  std::map<std::string, uint64_t> sessions_;  // id -> bytes charged
};

}  // namespace conveyor
