// Where conveyorctl connects when --target is not given. The system daemon's socket
// comes first whenever this user may connect to it, which takes write permission on the
// socket and search permission on its directory, not write permission on the directory:
// the systemd unit makes /run/conveyor 0750 and the socket 0660, both of the conveyor
// group, so a member of the group connects without being able to write there.
#pragma once

#include <string>

#include "listen_address.h"

namespace conveyor::ctl {

// The systemd unit's RuntimeDirectory, where the system daemon listens.
inline constexpr char kSystemSocketDir[] = "/run/conveyor";

// Whether this process may open `path` with `mode` (R_OK, W_OK, X_OK), as access(2)
// answers with the effective IDs. Tests pass a stand-in.
using AccessCheck = bool (*)(const std::string& path, int mode);
bool EffectiveAccess(const std::string& path, int mode);

// SYSTEM_DIR/conveyord.sock when it is a socket that `may_access` lets this process
// write, else the socket conveyord would serve if this user started it without
// --listen, config::DefaultSocketPathIn(system_dir): $XDG_RUNTIME_DIR/conveyor/
// conveyord.sock when XDG_RUNTIME_DIR is set, else /tmp/conveyor-UID/conveyord.sock
// (SYSTEM_DIR/conveyord.sock for a user who may write SYSTEM_DIR, where that daemon
// would listen).
std::string DefaultTargetSocketIn(const std::string& system_dir, AccessCheck may_access = EffectiveAccess);

// The above for /run/conveyor, as the address --target would give.
config::ListenAddress DefaultTarget();

}  // namespace conveyor::ctl
