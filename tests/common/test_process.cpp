// Process helpers for tests (see test_process.h).
#include "test_process.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <system_error>
#include <vector>

namespace conveyor::testing {
namespace {

// The directories this process made, removed when it exits: a test that fails half-way
// (an ASSERT returns early) or forgets leaves no media, configs or keys behind. ctest runs
// each test in a process of its own, so they go with the test. A forked child that exits
// leaves them to the process that made them.
class MadeDirs {
 public:
  void Add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back(dir);
  }
  ~MadeDirs() {
    if (getpid() != owner_) return;
    const char* keep = std::getenv("CONVEYOR_E2E_KEEP");
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& dir : dirs_) {
      if (keep != nullptr && *keep != '\0') {
        std::fprintf(stderr, "kept %s (CONVEYOR_E2E_KEEP)\n", dir.c_str());
        continue;
      }
      std::error_code ec;  // a test may have removed it already
      std::filesystem::remove_all(dir, ec);
    }
  }

 private:
  const pid_t owner_ = getpid();
  std::mutex mu_;
  std::vector<std::string> dirs_;
};

MadeDirs& Made() {
  static MadeDirs made;
  return made;
}

}  // namespace

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return std::string();
  Made().Add(buf.data());
  return buf.data();
}

uint64_t ProcessRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      uint64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

bool WaitUntil(const std::function<bool()>& done, double timeout_s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace conveyor::testing
