// Small process helpers shared by tests and benchmarks: a fresh temporary directory and
// another process's resident set size.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace conveyor::testing {

// A new directory under $TMPDIR (else /tmp) named <prefix>-XXXXXX; empty on failure.
std::string MakeTempDir(const std::string& prefix);

// VmRSS of process `pid` in bytes (/proc), 0 when it cannot be read.
uint64_t ProcessRssBytes(pid_t pid);

}  // namespace conveyor::testing
