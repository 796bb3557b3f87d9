// Runs the built conveyor-doctor as a subprocess. Which case applies is decided by
// probing the runtime in this process: no GPU backend (cpu build), a GPU build with no
// device (this Debian machine), or a device present (the GPU host), where the full
// checklist must pass. Each test prints the case it checked.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "doctor_report.h"
#include "gpu_encoder.h"  // ProbeGpus, GpuBackendName

namespace conveyor::doctor {
namespace {

// CONVEYOR_DOCTOR, else a conveyor-doctor next to this test binary, else the build tree's.
std::string DoctorPath() {
  if (const char* env = std::getenv("CONVEYOR_DOCTOR"); env != nullptr && *env != '\0') return env;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    const std::string sibling = dir + "/conveyor-doctor";
    if (access(sibling.c_str(), X_OK) == 0) return sibling;
  }
  return CONVEYOR_DOCTOR_PATH;
}

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) (void)close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct RunResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs the doctor with `args` and extra environment variables; kills it after `timeout`.
RunResult RunDoctorBinary(const std::vector<std::string>& args,
                          const std::vector<std::pair<std::string, std::string>>& env = {},
                          std::chrono::seconds timeout = std::chrono::seconds(300)) {
  RunResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  Fd read_end(fds[0]), write_end(fds[1]);
  const std::string path = DoctorPath();
  std::vector<std::string> argv_s = {path};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    dup2(write_end.get(), STDOUT_FILENO);
    dup2(write_end.get(), STDERR_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execv(path.c_str(), argv.data());
    std::perror("execv conveyor-doctor");
    _exit(127);
  }
  write_end.reset();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      result.output += "\n[test: killed after timeout]";
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = read(read_end.get(), buf, sizeof(buf));
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

enum class Case { kNoBackend, kNoDevice, kDevice };

Case ProbeCase(std::string* why) {
  if (std::string(GpuBackendName()) == "none") {
    *why = "no GPU backend in this build";
    return Case::kNoBackend;
  }
  const GpuProbe probe = ProbeGpus();
  if (probe.devices.empty()) {
    *why = std::string(GpuBackendName()) + " build, no device: " + probe.unavailable_reason;
    return Case::kNoDevice;
  }
  *why = std::string(GpuBackendName()) + " build, device 0: " + probe.devices[0].name;
  return Case::kDevice;
}

TEST(DoctorBinary, ChecklistMatchesWhatTheRuntimeSays) {
  std::string why;
  const Case c = ProbeCase(&why);
  const RunResult r = RunDoctorBinary({"--json"});
  std::printf("case checked: %s\nbinary: %s (exit %d)\n%s", why.c_str(), DoctorPath().c_str(), r.exit_code,
              r.output.c_str());
  RecordProperty("doctor_case", why);

  EXPECT_TRUE(Has(r.output, "== Environment ==")) << r.output;
  EXPECT_TRUE(Has(r.output, "HSA_ENABLE_SDMA:")) << r.output;
  EXPECT_TRUE(Has(r.output, "== Conclusion ==")) << r.output;
  EXPECT_TRUE(Has(r.output, "{\"doctor\":\"conveyor\"")) << r.output;
  switch (c) {
    case Case::kNoBackend:
      EXPECT_EQ(r.exit_code, kExitNoBackend);
      EXPECT_TRUE(Has(r.output, "\nno GPU backend in this build: conveyord will use its CPU worker\n")) << r.output;
      // A CPU build loads no GPU runtime, so it judges none, even where the host has one.
      EXPECT_TRUE(Has(r.output, "[skip] loader libhsa-runtime64:")) << r.output;
      EXPECT_TRUE(Has(r.output, "[skip] loader libcuda:")) << r.output;
      EXPECT_FALSE(Has(r.output, "[ ok ] loader")) << r.output;
      EXPECT_TRUE(Has(r.output, "\"outcome\":\"no_backend\"")) << r.output;
      break;
    case Case::kNoDevice:
      EXPECT_EQ(r.exit_code, kExitNoDevice);
      EXPECT_TRUE(Has(r.output, "\nno usable GPU device (hipGetDeviceCount: ") ||
                  Has(r.output, "\nno usable GPU device (cudaGetDeviceCount: "))
          << r.output;
      EXPECT_TRUE(Has(r.output, "): conveyord will use its CPU worker\n")) << r.output;
      EXPECT_TRUE(Has(r.output, "[FAIL] devices:")) << r.output;
      EXPECT_TRUE(Has(r.output, "[skip] overlap:")) << r.output;
      EXPECT_TRUE(Has(r.output, "\"outcome\":\"no_device\"")) << r.output;
      break;
    case Case::kDevice:
      EXPECT_EQ(r.exit_code, kExitOk);
      EXPECT_TRUE(Has(r.output, "[ ok ] devices:")) << r.output;
      EXPECT_TRUE(Has(r.output, "[ ok ] device 0:")) << r.output;
      EXPECT_TRUE(Has(r.output, "[ ok ] sync copy:")) << r.output;
      EXPECT_TRUE(Has(r.output, "[ ok ] kernel:")) << r.output;
      // Overlap is measured; whether this host overlaps is reported, not asserted.
      EXPECT_TRUE(Has(r.output, "] overlap:") && Has(r.output, "% of the shorter hidden")) << r.output;
      EXPECT_TRUE(Has(r.output, "] H2D bandwidth:") && Has(r.output, "] D2H bandwidth:")) << r.output;
      EXPECT_TRUE(Has(r.output, "GB/s, pinned/pageable")) << r.output;
      EXPECT_TRUE(Has(r.output, "\nGPU usable: conveyord will use its GPU worker\n")) << r.output;
      EXPECT_TRUE(Has(r.output, "\"outcome\":\"gpu_usable\"")) << r.output;
      break;
  }
}

// --expect lets a deployment gate on the exit code: a CPU-only one passes wherever the
// CPU worker serves (a CPU build, a host without a device), a GPU one only on a usable GPU.
TEST(DoctorBinary, ExpectGatesTheDeploymentItNames) {
  std::string why;
  const Case c = ProbeCase(&why);
  std::printf("case checked: %s\n", why.c_str());
  const RunResult cpu = RunDoctorBinary({"--expect", "cpu", "--json", "--bytes", "4M", "--reps", "1"});
  EXPECT_EQ(cpu.exit_code, kExitOk) << cpu.output;
  EXPECT_TRUE(Has(cpu.output, "\nexpected: the CPU worker. It serves here")) << cpu.output;
  EXPECT_TRUE(Has(cpu.output, "\"expect\":\"cpu\",\"exit_code\":0")) << cpu.output;
  const RunResult gpu = RunDoctorBinary({"--expect=gpu", "--bytes", "4M", "--reps", "1"});
  if (c == Case::kDevice) {
    EXPECT_EQ(gpu.exit_code, kExitOk) << gpu.output;
    EXPECT_TRUE(Has(gpu.output, "\nexpected: the GPU worker. It serves here\n")) << gpu.output;
  } else {
    EXPECT_EQ(gpu.exit_code, c == Case::kNoBackend ? kExitNoBackend : kExitNoDevice) << gpu.output;
    EXPECT_TRUE(Has(gpu.output, "\nexpected: the GPU worker. It does NOT serve here")) << gpu.output;
  }
  const RunResult bad = RunDoctorBinary({"--expect", "tpu"});
  EXPECT_EQ(bad.exit_code, kExitUsage) << bad.output;
  EXPECT_TRUE(Has(bad.output, "--expect: cpu or gpu, got 'tpu'")) << bad.output;
}

TEST(DoctorBinary, ShowsTheEnvironmentItRunsIn) {
  const RunResult r = RunDoctorBinary({"--bytes", "4M", "--reps", "2"},
                                      {{"HSA_ENABLE_SDMA", "0"}, {"AMD_SERIALIZE_COPY", "3"}});
  EXPECT_NE(r.exit_code, -1) << r.output;
  EXPECT_TRUE(Has(r.output, "[warn] HSA_ENABLE_SDMA:")) << r.output;
  EXPECT_TRUE(Has(r.output, "=0 -- SDMA off")) << r.output;
  EXPECT_TRUE(Has(r.output, "[warn] AMD_SERIALIZE_COPY:")) << r.output;
  EXPECT_TRUE(Has(r.output, "unset -- ")) << r.output;
}

TEST(DoctorBinary, BadArgumentsAreAUsageError) {
  const RunResult r = RunDoctorBinary({"--bytes", "lots"});
  EXPECT_EQ(r.exit_code, kExitUsage) << r.output;
  EXPECT_TRUE(Has(r.output, "usage: conveyor-doctor")) << r.output;
  const RunResult h = RunDoctorBinary({"--help"});
  EXPECT_EQ(h.exit_code, kExitOk) << h.output;
  EXPECT_TRUE(Has(h.output, "Exit codes:")) << h.output;
}

}  // namespace
}  // namespace conveyor::doctor
