// The gpr log function (see grpc_log.h).
#include "grpc_log.h"

#include <cstring>
#include <string_view>

#include <grpc/support/log.h>
#include <spdlog/spdlog.h>

namespace conveyor {
namespace {

spdlog::level::level_enum LevelOf(gpr_log_severity severity) {
  switch (severity) {
    case GPR_LOG_SEVERITY_DEBUG: return spdlog::level::debug;
    case GPR_LOG_SEVERITY_INFO: return spdlog::level::info;
    case GPR_LOG_SEVERITY_ERROR: return spdlog::level::warn;
  }
  return spdlog::level::warn;
}

void LogGrpcLine(gpr_log_func_args* args) {
  const spdlog::level::level_enum level = LevelOf(args->severity);
  if (!spdlog::should_log(level) || args->message == nullptr) return;
  std::string_view message(args->message);
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.remove_suffix(1);
  // The source file's name without its directories: where in gRPC, for a bug report.
  const char* file = args->file != nullptr ? args->file : "";
  if (const char* slash = std::strrchr(file, '/')) file = slash + 1;
  spdlog::log(level, "grpc: {} ({}:{})", message, file, args->line);
}

}  // namespace

void RouteGrpcLogToDaemonLog() { gpr_set_log_function(&LogGrpcLine); }

}  // namespace conveyor
