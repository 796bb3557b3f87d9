// spdlog setup: the sink and pattern for the detected style, and level parsing.
#include "logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace conveyor::config {
namespace {

StatusOr<spdlog::level::level_enum> LevelOf(const std::string& level) {
  // spdlog::level::from_str maps any unknown name to "off", so match names here.
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "warn") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  if (level == "off") return spdlog::level::off;
  return InvalidArgument("unknown log level '" + level +
                         "' (expected trace, debug, info, warn, error or off)");
}

// "%*": the syslog priority prefix journald turns into the entry's PRIORITY.
class JournalPriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    int priority = 6;
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: priority = 7; break;
      case spdlog::level::info: priority = 6; break;
      case spdlog::level::warn: priority = 4; break;
      case spdlog::level::err: priority = 3; break;
      case spdlog::level::critical: priority = 2; break;
      default: break;
    }
    const char text[] = {'<', static_cast<char>('0' + priority), '>'};
    dest.append(text, text + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JournalPriorityFlag>();
  }
};

}  // namespace

Status CheckLogLevel(const std::string& level) { return LevelOf(level).status(); }

LogStyle DetectLogStyle() {
  if (const char* stream = std::getenv("JOURNAL_STREAM")) {
    unsigned long long dev = 0, ino = 0;
    struct stat st;
    if (std::sscanf(stream, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
        static_cast<unsigned long long>(st.st_dev) == dev &&
        static_cast<unsigned long long>(st.st_ino) == ino) {
      return LogStyle::kJournal;
    }
  }
  return isatty(STDERR_FILENO) ? LogStyle::kTerminal : LogStyle::kPlain;
}

const char* LogPattern(LogStyle style) {
  switch (style) {
    case LogStyle::kJournal: return "%*[%l] %v";  // journald adds the time
    case LogStyle::kTerminal: return "%Y-%m-%d %H:%M:%S.%e %^[%l]%$ %v";
    case LogStyle::kPlain: return "%Y-%m-%d %H:%M:%S.%e [%l] %v";
  }
  return "[%l] %v";
}

Status InitLogging(const std::string& level) {
  ASSIGN_OR_RETURN(const spdlog::level::level_enum lvl, LevelOf(level));
  const LogStyle style = DetectLogStyle();
  spdlog::sink_ptr sink;
  if (style == LogStyle::kTerminal) {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<JournalPriorityFlag>('*').set_pattern(LogPattern(style));
  sink->set_formatter(std::move(formatter));
  auto logger = std::make_shared<spdlog::logger>("conveyor", std::move(sink));
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
  return OkStatus();
}

Status SetLogLevel(const std::string& level) {
  ASSIGN_OR_RETURN(const spdlog::level::level_enum lvl, LevelOf(level));
  spdlog::set_level(lvl);
  return OkStatus();
}

}  // namespace conveyor::config
