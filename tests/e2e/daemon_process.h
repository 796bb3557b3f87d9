// Runs the real conveyord as a child process on a unix socket in a temporary directory,
// for end-to-end tests: started with the given flags, ready once its socket accepts a
// gRPC call, stopped with SIGTERM (its exit status is kept for the test to check).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

namespace conveyor::e2e {

class DaemonProcess {
 public:
  // `extra_flags` go after the defaults (--config "", --listen, --workers cpu,
  // --cpu-threads 2, --log-level warn, --metrics-listen "": no HTTP endpoint, so that
  // daemons of parallel tests never race for a port), so they can override them.
  // The environment can change what runs, for a host without this build tree (the GPU
  // host's portable bundle); unset, nothing changes:
  //   CONVEYOR_E2E_CONVEYORD  the conveyord binary, instead of the one built with the test
  //   CONVEYOR_E2E_WORKERS    --workers, instead of cpu ("gpu": a daemon that finds no GPU
  //                           worker refuses to start, so a GPU run never passes on the CPU)
  //   CONVEYOR_E2E_LOG_LEVEL  --log-level, instead of warn
  explicit DaemonProcess(std::vector<std::string> extra_flags = {});
  ~DaemonProcess();

  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }
  // The daemon's resident set size in bytes (/proc), 0 when it is not running.
  uint64_t RssBytes() const;
  const std::string& target() const { return target_; }
  const std::string& dir() const { return dir_; }
  std::shared_ptr<grpc::Channel> Channel() const;

  // Sends SIGTERM and waits up to `timeout_s`; returns the exit status (-1: did not exit
  // in time and was killed; -2: died by a signal).
  int Stop(double timeout_s = 30);

 private:
  std::string dir_, target_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

// A fresh temporary directory (removed by the caller or left for inspection).
std::string MakeTempDir();
// Runs a shell command; returns its exit status.
int Shell(const std::string& command);
std::vector<uint8_t> ReadFile(const std::string& path);

}  // namespace conveyor::e2e
