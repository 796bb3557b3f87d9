// The SIGHUP reload of conveyord's config (see config_reload.h): which settings a running
// daemon can take, and the diff between the running config and the file read again.
#include "config_reload.h"

#include <algorithm>
#include <utility>

namespace conveyor::config {
namespace {

// One setting a running daemon can take, with how to copy its value.
struct RuntimeSetting {
  const char* name;
  void (*copy)(const DaemonConfig& from, DaemonConfig* to);
};

#define CONVEYOR_RUNTIME_SETTING(table, field) \
  { #table "." #field, [](const DaemonConfig& from, DaemonConfig* to) { to->field = from.field; } }
const RuntimeSetting kRuntimeSettings[] = {
    CONVEYOR_RUNTIME_SETTING(server, log_level),
    CONVEYOR_RUNTIME_SETTING(limits, max_sessions),
    CONVEYOR_RUNTIME_SETTING(limits, memory_budget_bytes),
    CONVEYOR_RUNTIME_SETTING(limits, max_frame_rate),
    CONVEYOR_RUNTIME_SETTING(limits, max_session_bytes),
    CONVEYOR_RUNTIME_SETTING(limits, idle_timeout_s),
    CONVEYOR_RUNTIME_SETTING(limits, session_queue_frames),
    CONVEYOR_RUNTIME_SETTING(limits, session_output_bytes),
    CONVEYOR_RUNTIME_SETTING(limits, input_queue_bytes),
    CONVEYOR_RUNTIME_SETTING(limits, input_spool_bytes),
    CONVEYOR_RUNTIME_SETTING(workers, decode_threads),
    CONVEYOR_RUNTIME_SETTING(workers, drain_timeout_s),
    CONVEYOR_RUNTIME_SETTING(color, untagged_matrix),
    {"decode.mode", [](const DaemonConfig& from, DaemonConfig* to) { to->decode_mode = from.decode_mode; }},
    {"decode.frames", [](const DaemonConfig& from, DaemonConfig* to) { to->decode_frames = from.decode_frames; }},
    {"decode.held_frames",
     [](const DaemonConfig& from, DaemonConfig* to) { to->decode_held_frames = from.decode_held_frames; }},
};
#undef CONVEYOR_RUNTIME_SETTING

const RuntimeSetting* FindRuntimeSetting(const std::string& setting) {
  for (const RuntimeSetting& r : kRuntimeSettings) {
    if (setting == r.name) return &r;
  }
  return nullptr;
}

StatusOr<CommandLine> Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return ParseCommandLine(static_cast<int>(args.size()), argv.data());
}

std::optional<DaemonConfig> FileValues(const std::string& path) {
  if (path.empty()) return DaemonConfig{};
  StatusOr<DaemonConfig> c = LoadConfigFile(path);
  if (!c.ok()) return std::nullopt;
  return std::move(c).value();
}

}  // namespace

bool ChangeableAtRuntime(const std::string& setting) { return FindRuntimeSetting(setting) != nullptr; }

ConfigReloader::ConfigReloader(std::vector<std::string> args, const CommandLine& startup)
    : args_(std::move(args)), running_(startup.config), file_values_(FileValues(startup.config_path)) {}

StatusOr<ConfigReload> ConfigReloader::Reload() {
  ASSIGN_OR_RETURN(CommandLine cl, Parse(args_));
  if (cl.exit_now) return FailedPrecondition("the command line asks to exit (--help, --print-config)");
  ConfigReload out;
  out.notices = cl.notices;
  const std::optional<DaemonConfig> file = FileValues(cl.config_path);
  if (file && file_values_) {
    const std::vector<std::string> from_flags = ChangedSettings(*file, cl.config);
    for (const std::string& name : ChangedSettings(*file_values_, *file)) {
      if (std::find(from_flags.begin(), from_flags.end(), name) != from_flags.end()) out.overridden.push_back(name);
    }
  }
  DaemonConfig next = running_;
  for (const std::string& name : ChangedSettings(running_, cl.config)) {
    if (const RuntimeSetting* r = FindRuntimeSetting(name)) {
      r->copy(cl.config, &next);
      out.applied.push_back(name);
    } else {
      out.needs_restart.push_back(name);
    }
  }
  if (credential_reload_) {
    ASSIGN_OR_RETURN(const std::vector<std::string> reread, credential_reload_());
    out.applied.insert(out.applied.end(), reread.begin(), reread.end());
  }
  running_ = std::move(next);
  file_values_ = file;
  return out;
}

}  // namespace conveyor::config
