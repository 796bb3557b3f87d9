// Logging setup for conveyord: spdlog on stderr in plain lines that journald can read.
// Under systemd each line starts with a syslog priority ("<6>") so journald records
// the level; on a terminal lines are coloured and timestamped.
#pragma once

#include <string>

#include "status.h"

namespace conveyor::config {

// The levels a config file or flag may name: trace, debug, info, warn, error, off.
Status CheckLogLevel(const std::string& level);

enum class LogStyle {
  kTerminal,  // stderr is a TTY: timestamp, coloured level
  kPlain,     // a file or pipe: timestamp, no colour
  kJournal,   // stderr is the journal stream systemd set up (JOURNAL_STREAM)
};
// Which style fits this process's stderr. kJournal only when JOURNAL_STREAM names the
// very stream fd 2 is (a child of a systemd service inherits the variable, not the
// stream); that is the check sd_journal_stream_fd(3) recommends.
LogStyle DetectLogStyle();
const char* LogPattern(LogStyle style);

// Installs the default spdlog logger on stderr in the detected style at `level`.
// Calling it again replaces the logger.
Status InitLogging(const std::string& level);
Status SetLogLevel(const std::string& level);

}  // namespace conveyor::config
