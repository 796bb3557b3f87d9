// Small process helpers shared by tests and benchmarks: a fresh temporary directory,
// another process's resident set size, and a wait for a condition.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace conveyor::testing {

// A new directory under $TMPDIR (else /tmp) named <prefix>-XXXXXX; empty on failure.
// Removed with everything in it when this process exits (CONVEYOR_E2E_KEEP=1 keeps it).
std::string MakeTempDir(const std::string& prefix);

// VmRSS of process `pid` in bytes (/proc), 0 when it cannot be read.
uint64_t ProcessRssBytes(pid_t pid);

// Polls `done` every 20 ms until it holds (true) or `timeout_s` passes (false).
bool WaitUntil(const std::function<bool()>& done, double timeout_s);

}  // namespace conveyor::testing
