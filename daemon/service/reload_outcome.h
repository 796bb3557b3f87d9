// A SIGHUP reload's outcome, and the file through which `conveyord reload` (the unit's
// ExecReload) learns it: conveyord replaces RUNTIME_DIRECTORY/reload-outcome after each
// reload, stamped with the monotonic time at which the reload began, before it read the
// file. A reload that began after a SIGHUP was sent read the config as it was then.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "status.h"

namespace conveyor {

struct ReloadOutcome {
  bool ok = true;
  std::string error;            // why it was refused
  uint64_t monotonic_usec = 0;  // MonotonicMicroseconds() when the reload began
  double unix_time_s = 0;       // the same moment on the wall clock, for the metric

  // An outcome stamped now, ok until told otherwise.
  static ReloadOutcome BeginningNow();
};

// The first directory of RUNTIME_DIRECTORY (systemd sets it from RuntimeDirectory=, for
// ExecStart= and ExecReload= alike) + "/reload-outcome"; "" when it is unset.
std::string ReloadOutcomePath();
std::string ReloadOutcomePath(const std::string& runtime_directory);

// Owns the file: written by each Write(), removed with the owner.
class ReloadOutcomeFile {
 public:
  explicit ReloadOutcomeFile(std::string path) : path_(std::move(path)) {}  // "": writes nothing
  ~ReloadOutcomeFile();
  ReloadOutcomeFile(const ReloadOutcomeFile&) = delete;
  ReloadOutcomeFile& operator=(const ReloadOutcomeFile&) = delete;

  // Writes PATH.tmp and renames it over the file, so a reader finds one whole outcome.
  Status Write(const ReloadOutcome& outcome);

 private:
  std::string path_;
  bool written_ = false;
};

// The outcome in `path` if process `pid` wrote it; NOT_FOUND when there is none, or when
// another process (an earlier daemon) did.
StatusOr<ReloadOutcome> ReadReloadOutcome(const std::string& path, pid_t pid);

}  // namespace conveyor
