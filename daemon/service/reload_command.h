// `conveyord reload`, the unit's ExecReload: sends SIGHUP to the running conveyord and
// waits for that reload's outcome, so that `systemctl reload` returns once the reload is
// done and fails when the daemon refused the config file.
#pragma once

#include <string>
#include <vector>

namespace conveyor {

// `args`: what follows "reload" on the command line. Exit status: 0 applied, 1 refused
// (the reason on stderr), 2 anything else (usage, no such process, no outcome in time).
int ReloadCommandMain(const std::vector<std::string>& args);

}  // namespace conveyor
