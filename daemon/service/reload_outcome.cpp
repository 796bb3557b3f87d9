// The reload outcome and its file (see reload_outcome.h). The file is a few "key value"
// lines; the error comes last and runs to the end of its line.
#include "reload_outcome.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "systemd_notifier.h"

namespace conveyor {

ReloadOutcome ReloadOutcome::BeginningNow() {
  ReloadOutcome o;
  o.monotonic_usec = MonotonicMicroseconds();
  o.unix_time_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return o;
}

std::string ReloadOutcomePath(const std::string& runtime_directory) {
  const std::string first = runtime_directory.substr(0, runtime_directory.find(':'));
  return first.empty() ? "" : first + "/reload-outcome";
}

std::string ReloadOutcomePath() {
  const char* dir = std::getenv("RUNTIME_DIRECTORY");
  return ReloadOutcomePath(dir != nullptr ? dir : "");
}

ReloadOutcomeFile::~ReloadOutcomeFile() {
  if (written_) unlink(path_.c_str());
}

Status ReloadOutcomeFile::Write(const ReloadOutcome& o) {
  if (path_.empty()) return OkStatus();
  std::string error = o.error;
  for (char& c : error) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  char unix_time[32];
  std::snprintf(unix_time, sizeof(unix_time), "%.3f", o.unix_time_s);
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << "pid " << getpid() << "\nmonotonic_usec " << o.monotonic_usec << "\nunix_time " << unix_time << "\nok "
        << (o.ok ? 1 : 0) << "\nerror " << error << "\n";
    out.flush();
    if (!out) {
      unlink(tmp.c_str());
      return Unavailable("reload outcome: cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Unavailable("reload outcome: cannot rename " + tmp + " to " + path_ + ": " + std::strerror(err));
  }
  written_ = true;
  return OkStatus();
}

StatusOr<ReloadOutcome> ReadReloadOutcome(const std::string& path, pid_t pid) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("no reload outcome in " + path);
  ReloadOutcome o;
  long writer = -1;
  bool stamped = false, told = false;
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "pid") {
      writer = std::strtol(value.c_str(), nullptr, 10);
    } else if (key == "monotonic_usec") {
      o.monotonic_usec = std::strtoull(value.c_str(), nullptr, 10);
      stamped = true;
    } else if (key == "unix_time") {
      o.unix_time_s = std::strtod(value.c_str(), nullptr);
    } else if (key == "ok") {
      o.ok = value == "1";
      told = true;
    } else if (key == "error") {
      o.error = value;
    }
  }
  if (writer != static_cast<long>(pid) || !stamped || !told) {
    return NotFound("no reload outcome of pid " + std::to_string(pid) + " in " + path);
  }
  return o;
}

}  // namespace conveyor
