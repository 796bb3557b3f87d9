// Runs the real conveyord as a child process on a unix socket in a temporary directory,
// for end-to-end tests: started with the given flags, ready once it has written its
// endpoints file (server.endpoints_file) and its socket accepts a gRPC call, stopped with SIGTERM (its exit status is kept for the test to check).
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
  // --cpu-threads 2, --log-level warn, --metrics-listen "": no HTTP endpoint unless a test
  // asks for one, --endpoints-file in dir()), so they can override them. A test that needs
  // a TCP listener or the HTTP endpoint gives port 0 ("127.0.0.1:0") and reads the port
  // the daemon bound from tcp_port() or metrics_port(): no guessed port that another
  // process could take first.
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
  // From the daemon's endpoints file: the port of its first TCP listen address and of its
  // HTTP endpoint, as bound; -1 when it has none.
  int tcp_port() const { return tcp_port_; }
  int metrics_port() const { return metrics_port_; }

  // Sends SIGTERM and waits up to `timeout_s`; returns the exit status (-1: did not exit
  // in time and was killed; -2: died by a signal).
  int Stop(double timeout_s = 30);

 private:
  // Reads the endpoints file; false while it is not there.
  bool ReadEndpoints();

  std::string dir_, target_;
  pid_t pid_ = -1;
  bool ready_ = false;
  int tcp_port_ = -1, metrics_port_ = -1;
};

// A fresh temporary directory, removed with its contents when the test process exits
// (testing::MakeTempDir; CONVEYOR_E2E_KEEP=1 keeps it for a look).
std::string MakeTempDir();
// Runs a shell command; returns its exit status.
int Shell(const std::string& command);
std::vector<uint8_t> ReadFile(const std::string& path);

}  // namespace conveyor::e2e
