// conveyorctl's default target (see default_target.h).
#include "default_target.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace conveyor::ctl {

bool EffectiveAccess(const std::string& path, int mode) {
  // connect(2) checks the effective IDs; access(2) alone would check the real ones.
  return faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0;
}

std::string DefaultTargetSocketIn(const std::string& system_dir, AccessCheck may_access) {
  // Write permission on the socket is what connect(2) needs; checking it also checks
  // search permission on every directory above it. A daemon that is down behind a socket
  // left there still wins: the error then names the system socket, where the user
  // expects the daemon.
  const std::string socket = system_dir + "/conveyord.sock";
  struct stat st {};
  if (stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && may_access(socket, W_OK)) return socket;
  return config::DefaultSocketPathIn(system_dir);
}

config::ListenAddress DefaultTarget() {
  config::ListenAddress a;
  a.kind = config::ListenAddress::Kind::kUnix;
  a.path = DefaultTargetSocketIn(kSystemSocketDir);
  return a;
}

}  // namespace conveyor::ctl
