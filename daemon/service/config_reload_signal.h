// What conveyord does on SIGHUP: read the config again (file, then the startup flags on
// top), hand the new log level, limits and session options to the running daemon, and log
// what changed, what needs a restart and what a flag overrides. Sessions keep running.
#pragma once

#include <functional>
#include <string>

#include "config_reload.h"
#include "reload_outcome.h"
#include "session_manager.h"
#include "systemd_notifier.h"

namespace conveyor {

// A config that cannot be read, parsed or validated is refused: logged as an error, and
// the running config stays. systemd sees RELOADING=1, then READY=1 with `status()` either
// way; `on_outcome` hears the outcome in between, so that this STATUS= can tell.
void ReloadOnSighup(config::ConfigReloader* reloader, SessionManager* sessions, SystemdNotifier* notifier,
                    const std::function<void(const ReloadOutcome&)>& on_outcome,
                    const std::function<std::string()>& status);

}  // namespace conveyor
