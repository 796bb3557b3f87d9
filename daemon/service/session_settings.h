// From conveyord's config to what the session manager takes: the session limits and the
// options each new session gets. Used at startup and again on every reload.
#pragma once

#include "daemon_config.h"
#include "session_manager.h"

namespace conveyor {

SessionOptions SessionOptionsFromConfig(const config::DaemonConfig& c);
// limits.memory_budget_bytes 0 (auto) is resolved here, from the host's memory and the
// daemon's cgroup limit as they are now (config/host_memory.h).
SessionLimits SessionLimitsFromConfig(const config::DaemonConfig& c);

}  // namespace conveyor
