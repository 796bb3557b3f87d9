// File helpers shared by the tests that run the real daemon: whole-file reads, writes that
// replace a file in one step, and this process's stderr sent to a file while a daemon is
// forked, so that the daemon's log lands there.
#pragma once

#include <string>

namespace conveyor::testing {

// The file's bytes; "" when it cannot be read.
std::string ReadText(const std::string& path);

// Writes PATH.new and renames it over `path`, as an editor or a config tool would: a
// daemon that reads the file (a reload) never sees half of it.
void WriteText(const std::string& path, const std::string& text);

// While alive, this process's stderr goes to `path` (appending), so a daemon forked
// meanwhile writes its log there for good.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path);
  ~StderrToFile();
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace conveyor::testing
