// The conveyord child process for end-to-end tests (see daemon_process.h).
#include "daemon_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "test_process.h"

#ifndef CONVEYORD_PATH
#error "CONVEYORD_PATH must name the conveyord binary"
#endif

namespace conveyor::e2e {
namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

std::string MakeTempDir() { return testing::MakeTempDir("conveyor-e2e"); }

int Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

DaemonProcess::DaemonProcess(std::vector<std::string> extra_flags) {
  dir_ = MakeTempDir();
  target_ = "unix:" + dir_ + "/conveyord.sock";
  // CONVEYOR_E2E_LOG_LEVEL=debug shows the daemon's log when a test needs looking into.
  // CONVEYOR_E2E_CONVEYORD and CONVEYOR_E2E_WORKERS run another binary on other workers
  // (daemon_process.h); unset or empty, the defaults hold.
  const std::string level = EnvOr("CONVEYOR_E2E_LOG_LEVEL", "warn");
  std::vector<std::string> args = {EnvOr("CONVEYOR_E2E_CONVEYORD", CONVEYORD_PATH),
                                   "--config",
                                   "",
                                   "--listen",
                                   target_,
                                   "--workers",
                                   EnvOr("CONVEYOR_E2E_WORKERS", "cpu"),
                                   "--cpu-threads",
                                   "2",
                                   "--log-level",
                                   level,
                                   "--metrics-listen",
                                   "",
                                   "--endpoints-file",
                                   dir_ + "/endpoints"};
  for (size_t i = 0; i < extra_flags.size(); ++i) {
    if (extra_flags[i] == "--config") args.erase(args.begin() + 1, args.begin() + 3);  // the test's own file
  }
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  pid_ = fork();
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  // Ready once the endpoints file is there (written when every listener is bound) and
  // GetServerStatus answers. Waiting for the file also keeps the channel from meeting a
  // missing socket, after which it backs off for a second or more before it tries again.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::unique_ptr<v1::Transcoder::Stub> stub;
  while (std::chrono::steady_clock::now() < give_up) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;  // exited early
    }
    if (!ReadEndpoints()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (!stub) stub = v1::Transcoder::NewStub(Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::GetServerStatusRequest req;
    v1::ServerStatus resp;
    // UNAUTHENTICATED answers too: a daemon with token auth is up.
    const grpc::Status answer = stub->GetServerStatus(&ctx, req, &resp);
    if (answer.ok() || answer.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      ready_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Lines "grpc ADDRESS" and "metrics HOST:PORT"; a TCP address ends in ":PORT".
bool DaemonProcess::ReadEndpoints() {
  std::ifstream in(dir_ + "/endpoints");
  if (!in) return false;
  auto port_of = [](const std::string& address) {
    const size_t colon = address.rfind(':');
    return colon == std::string::npos ? -1 : std::atoi(address.c_str() + colon + 1);
  };
  for (std::string kind, address; in >> kind >> address;) {
    if (kind == "grpc" && address.rfind("unix:", 0) != 0 && tcp_port_ < 0) tcp_port_ = port_of(address);
    if (kind == "metrics") metrics_port_ = port_of(address);
  }
  return true;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) Stop(10);
  Shell("rm -rf '" + dir_ + "'");
}

uint64_t DaemonProcess::RssBytes() const { return pid_ > 0 ? testing::ProcessRssBytes(pid_) : 0; }

std::shared_ptr<grpc::Channel> DaemonProcess::Channel() const {
  return grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
}

int DaemonProcess::Stop(double timeout_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < give_up) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

}  // namespace conveyor::e2e
