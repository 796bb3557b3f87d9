// BenchDaemon (see bench_daemon.h).
#include "bench_daemon.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "test_process.h"

namespace conveyor::bench {

bool StartBenchDaemon(const std::string& conveyord, const std::vector<std::string>& daemon_args, BenchDaemon* out,
                      std::string* error) {
  out->dir = testing::MakeTempDir("conveyor-bench");
  out->target = "unix:" + out->dir + "/conveyord.sock";
  std::vector<std::string> args = {conveyord, "--listen", out->target, "--log-level", "warn"};
  // No config file unless one is named: not the host's /etc/conveyor/conveyord.toml.
  if (std::find(daemon_args.begin(), daemon_args.end(), "--config") == daemon_args.end()) {
    args.insert(args.end(), {"--config", ""});
  }
  args.insert(args.end(), daemon_args.begin(), daemon_args.end());
  out->pid = fork();
  if (out->pid == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  // Waits for the socket, or reports a daemon that exited instead (a bad flag, a second
  // --config) rather than waiting for ever.
  while (access((out->dir + "/conveyord.sock").c_str(), F_OK) != 0) {
    int wstatus = 0;
    if (waitpid(out->pid, &wstatus, WNOHANG) == out->pid) {
      *error = std::string("conveyord exited before it listened (") + (WIFEXITED(wstatus) ? "status " : "signal ") +
               std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus)) + "); its log is above";
      out->pid = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  out->stub = v1::Transcoder::NewStub(grpc::CreateChannel(out->target, grpc::InsecureChannelCredentials()));
  v1::ServerStatus status;
  for (int i = 0; i < 500; ++i) {
    grpc::ClientContext ctx;
    if (out->stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &status).ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out->worker = status.workers_size() > 0 ? status.workers(0).name() : "?";
  return true;
}

void StopBenchDaemon(BenchDaemon* daemon) {
  if (daemon->pid > 0) {
    kill(daemon->pid, SIGTERM);
    int wstatus = 0;
    waitpid(daemon->pid, &wstatus, 0);
    daemon->pid = -1;
  }
  if (!daemon->dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(daemon->dir, ec);
    daemon->dir.clear();
  }
}

}  // namespace conveyor::bench
