// The SIGHUP reload (see config_reload_signal.h).
#include "config_reload_signal.h"

#include <spdlog/spdlog.h>

#include "logging.h"
#include "session_settings.h"

namespace conveyor {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Status Apply(config::ConfigReloader* reloader, SessionManager* sessions) {
  StatusOr<config::ConfigReload> reload = reloader->Reload();
  if (!reload.ok()) return reload.status();
  const config::DaemonConfig& c = reloader->running();
  RETURN_IF_ERROR(config::SetLogLevel(c.log_level));
  sessions->SetLimits(SessionLimitsFromConfig(c));
  sessions->SetOptions(SessionOptionsFromConfig(c));
  for (const std::string& name : reload->needs_restart) {
    spdlog::warn("reload: {} changed but needs a restart to take effect; the running value stays", name);
  }
  for (const std::string& notice : reload->notices) spdlog::warn("reload: {}", notice);
  for (const std::string& name : reload->overridden) {
    spdlog::warn("reload: {} changed in the config file, but a command-line flag sets it and flags win", name);
  }
  if (reload->applied.empty()) {
    spdlog::info("reload: nothing to change");
  } else {
    spdlog::info("reload: applied {} (max_sessions {}, idle_timeout_s {}, log_level {})", Join(reload->applied),
                 c.max_sessions, c.idle_timeout_s, c.log_level);
  }
  return OkStatus();
}

}  // namespace

void ReloadOnSighup(config::ConfigReloader* reloader, SessionManager* sessions, SystemdNotifier* notifier,
                    const std::function<void(const ReloadOutcome&)>& on_outcome,
                    const std::function<std::string()>& status) {
  // Stamped before the file is read: `conveyord reload` takes an outcome stamped after its
  // SIGHUP as the answer to it.
  ReloadOutcome outcome = ReloadOutcome::BeginningNow();
  if (Status s = notifier->Reloading(outcome.monotonic_usec); !s.ok()) spdlog::warn("{}", s.ToString());
  spdlog::info("SIGHUP: reloading the config");
  if (Status s = Apply(reloader, sessions); !s.ok()) {
    spdlog::error("reload refused, the running config stays: {}", s.ToString());
    outcome.ok = false;
    outcome.error = s.message().empty() ? s.ToString() : s.message();
  }
  if (on_outcome) on_outcome(outcome);
  if (Status s = notifier->Ready(status ? status() : ""); !s.ok()) spdlog::warn("{}", s.ToString());
}

}  // namespace conveyor
