// Re-reading conveyord's config on SIGHUP: the file again with the startup flags on top (so
// flags still win, as at startup), split into what the running daemon takes at once and
// what only a restart applies.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daemon_config.h"
#include "status.h"

namespace conveyor::config {

// Whether a running daemon can take a new value of `setting` ("limits.max_sessions"): the
// log level, the limits checked when a session starts, the idle timeout, the per-session
// decode threads and the drain timeout. Everything else (listen addresses, the metrics
// address, the workers, their slots and threads, and limits.max_width/max_height, which
// size the workers' buffers) needs a restart.
bool ChangeableAtRuntime(const std::string& setting);

struct ConfigReload {
  std::vector<std::string> applied;        // changed settings now in running()
  std::vector<std::string> needs_restart;  // changed, kept at their running values
  std::vector<std::string> overridden;     // changed in the file, but a flag sets them
  std::vector<std::string> notices;        // about the file, for the log (CommandLine::notices)
};

class ConfigReloader {
 public:
  // `args`: conveyord's whole argv (argv[0] first); `startup`: what ParseCommandLine gave
  // for it when the daemon started.
  ConfigReloader(std::vector<std::string> args, const CommandLine& startup);

  // Parses the same argv again, which reads the file again. On success running() takes the
  // settings that can change at runtime; on an error (a file that cannot be read or
  // parsed, a value out of range) nothing changes and the error says why.
  StatusOr<ConfigReload> Reload();

  // Reads the credentials' files again (the token file, the TLS key pair and CA) and
  // takes them in, or returns why not; the settings whose files changed. Reload() calls it
  // every time, changed config file or not (those files change on their own), once the
  // file has parsed: its error refuses the reload like a bad file, and its settings count
  // as applied.
  using CredentialReload = std::function<StatusOr<std::vector<std::string>>()>;
  void set_credential_reload(CredentialReload reload) { credential_reload_ = std::move(reload); }

  // The config in effect: the startup config with every reload's runtime settings applied.
  const DaemonConfig& running() const { return running_; }

 private:
  std::vector<std::string> args_;
  DaemonConfig running_;
  // The file's own values (no flags) at the last read, to tell an edit that a flag hides.
  std::optional<DaemonConfig> file_values_;
  CredentialReload credential_reload_;
};

}  // namespace conveyor::config
