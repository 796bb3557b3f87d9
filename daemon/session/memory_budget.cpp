// The running sessions' memory charges against the budget (see memory_budget.h).
#include "memory_budget.h"

namespace conveyor {
namespace {

constexpr uint64_t kMiB = 1 << 20;

}  // namespace

Status MemoryBudget::FitsLocked(uint64_t bytes, uint64_t held, const SessionMemoryEstimate& estimate) const {
  // The session's own charge (`held`, when it grows) counts as free to it.
  const uint64_t free = (budget_ > charged_ ? budget_ - charged_ : 0) + held;
  if (bytes <= free) return OkStatus();
  // What a session needs is rounded up and what is free down, so the numbers never
  // suggest that it would have fit.
  return ResourceExhausted("limits.memory_budget_bytes: a " + estimate.Describe() + " session needs about " +
                           std::to_string((bytes + kMiB - 1) / kMiB) + " MiB and " + std::to_string(free / kMiB) +
                           " of " + std::to_string(budget_ / kMiB) + " MiB are free");
}

Status MemoryBudget::Reserve(const std::string& id, const SessionMemoryEstimate& estimate) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t bytes = estimate.total();
  RETURN_IF_ERROR(FitsLocked(bytes, 0, estimate));
  charged_ += bytes;
  sessions_[id] += bytes;
  return OkStatus();
}

Status MemoryBudget::Resize(const std::string& id, const SessionMemoryEstimate& estimate) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return NotFound("no memory charged to session " + id);
  const uint64_t bytes = estimate.total();
  if (bytes > it->second) RETURN_IF_ERROR(FitsLocked(bytes, it->second, estimate));
  charged_ = charged_ - it->second + bytes;
  it->second = bytes;
  return OkStatus();
}

void MemoryBudget::Release(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  charged_ -= it->second;
  sessions_.erase(it);
}

void MemoryBudget::SetBudget(uint64_t budget_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_ = budget_bytes;
}

uint64_t MemoryBudget::budget() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_;
}

uint64_t MemoryBudget::charged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return charged_;
}

}  // namespace conveyor
