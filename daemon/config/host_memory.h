// The memory this host lets conveyord use, for limits.memory_budget_bytes = 0 (auto): the
// smallest memory limit of the daemon's cgroup and its ancestors (memory.max, or
// memory.limit_in_bytes on cgroup v1), as a systemd unit's MemoryMax= sets it, else the
// host's MemTotal.
#pragma once

#include <cstdint>
#include <string>

#include "status.h"

namespace conveyor::config {

struct HostMemory {
  uint64_t bytes = 0;
  // Where `bytes` comes from: "the memory limit of cgroup /system.slice/conveyord.service"
  // or "MemTotal", for the log.
  std::string source;
};

// Reads /proc/self/cgroup, the cgroup files under /sys/fs/cgroup and /proc/meminfo, all
// under `root` ("" for the real ones; tests lay out a directory like them). An error
// only when MemTotal cannot be read; an unreadable cgroup counts as no limit.
StatusOr<HostMemory> ReadHostMemory(const std::string& root = "");

// The share of the host's memory that the auto budget takes: the rest is for what the
// daemon holds outside sessions (the workers' pinned slots and readback rings,
// workers.pinned_input_bytes of frame-assembly rings, gRPC) and the page cache.
inline constexpr double kAutoBudgetShare = 0.75;

// limits.memory_budget_bytes in force: `configured`, or for 0 kAutoBudgetShare of `host`.
uint64_t EffectiveMemoryBudget(uint64_t configured, const HostMemory& host);

}  // namespace conveyor::config
