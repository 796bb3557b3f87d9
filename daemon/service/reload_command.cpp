// `conveyord reload` (see reload_command.h). It notes the monotonic time, sends SIGHUP,
// and takes the first outcome the daemon stamps at or after that time: that reload read
// the file after the signal, even when a SIGHUP already pending absorbed ours (standard
// signals do not queue), and one that began before the signal never counts.
#include "reload_command.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "reload_outcome.h"
#include "status.h"
#include "systemd_notifier.h"

namespace conveyor {
namespace {

constexpr char kUsage[] =
    "Usage: conveyord reload [--pid PID] [--timeout SECONDS] [--runtime-directory DIR]\n"
    "\n"
    "Sends SIGHUP to conveyord and waits until it has read its config again. Exit status 0:\n"
    "applied; 1: refused, the running config stays (the reason follows); 2: no answer.\n"
    "The unit's ExecReload runs it, so `systemctl reload conveyord` fails on a refused file.\n"
    "\n"
    "  --pid PID                  the daemon (default: $MAINPID, which systemd sets)\n"
    "  --timeout SECONDS          how long to wait for the outcome (default: 30)\n"
    "  --runtime-directory DIR    where the daemon leaves it (default: $RUNTIME_DIRECTORY)\n";

struct Options {
  long pid = 0;
  double timeout_s = 30;
  std::string runtime_directory;
  bool help = false;
};

StatusOr<Options> Parse(const std::vector<std::string>& args) {
  Options o;
  if (const char* mainpid = std::getenv("MAINPID")) o.pid = std::strtol(mainpid, nullptr, 10);
  if (const char* dir = std::getenv("RUNTIME_DIRECTORY")) o.runtime_directory = dir;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    const size_t eq = flag.find('=');
    const bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    if (flag != "--pid" && flag != "--timeout" && flag != "--runtime-directory") {
      return InvalidArgument("unknown argument " + args[i]);
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return InvalidArgument(flag + " needs a value");
      value = args[++i];
    }
    char* end = nullptr;
    if (flag == "--pid") {
      o.pid = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0') return InvalidArgument("--pid " + value + ": not a number");
    } else if (flag == "--timeout") {
      o.timeout_s = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(o.timeout_s > 0)) {
        return InvalidArgument("--timeout " + value + ": not a positive number of seconds");
      }
    } else {
      o.runtime_directory = value;
    }
  }
  if (o.help) return o;
  if (o.pid <= 0) return InvalidArgument("no daemon to reload: give --pid (systemd's ExecReload sets $MAINPID)");
  if (ReloadOutcomePath(o.runtime_directory).empty()) {
    return InvalidArgument("no --runtime-directory and no $RUNTIME_DIRECTORY: nowhere to learn the outcome");
  }
  return o;
}

}  // namespace

int ReloadCommandMain(const std::vector<std::string>& args) {
  StatusOr<Options> options = Parse(args);
  if (!options.ok()) {
    std::fprintf(stderr, "conveyord reload: %s\n%s", options.status().message().c_str(), kUsage);
    return 2;
  }
  if (options->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const pid_t pid = static_cast<pid_t>(options->pid);
  const std::string path = ReloadOutcomePath(options->runtime_directory);
  const uint64_t sent_at = MonotonicMicroseconds();
  if (kill(pid, SIGHUP) != 0) {
    std::fprintf(stderr, "conveyord reload: cannot signal pid %ld: %s\n", options->pid, std::strerror(errno));
    return 2;
  }
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options->timeout_s);
  while (std::chrono::steady_clock::now() < give_up) {
    StatusOr<ReloadOutcome> outcome = ReadReloadOutcome(path, pid);
    if (outcome.ok() && outcome->monotonic_usec >= sent_at) {
      if (outcome->ok) return 0;
      std::fprintf(stderr, "conveyord reload: refused, the running config stays: %s\n", outcome->error.c_str());
      return 1;
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
      std::fprintf(stderr, "conveyord reload: pid %ld exited before it reported the reload\n", options->pid);
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr,
               "conveyord reload: pid %ld reported no reload in %s within %g s (a draining daemon does not "
               "reload; its log says what it did)\n",
               options->pid, path.c_str(), options->timeout_s);
  return 2;
}

}  // namespace conveyor
