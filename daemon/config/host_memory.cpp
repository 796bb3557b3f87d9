// The host's memory and the daemon's cgroup limit (see host_memory.h).
#include "host_memory.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

namespace conveyor::config {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A limit file's value: a number of bytes; "max" (v2) or a value past 2^62 (v1's
// "unlimited" is 2^63 rounded down to a page) is no limit.
std::optional<uint64_t> ParseLimit(const std::string& text) {
  if (text.empty() || text.rfind("max", 0) == 0) return std::nullopt;
  try {
    const unsigned long long v = std::stoull(text);
    if (v == 0 || v >= (1ull << 62)) return std::nullopt;
    return static_cast<uint64_t>(v);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The smallest limit in `file` of the cgroup at `path` under `mount` and its ancestors.
std::optional<uint64_t> SmallestLimit(const std::string& mount, std::string path, const std::string& file) {
  std::optional<uint64_t> smallest;
  for (;;) {
    if (std::optional<std::string> text = ReadSmallFile(mount + path + "/" + file)) {
      if (std::optional<uint64_t> v = ParseLimit(*text)) smallest = std::min(smallest.value_or(*v), *v);
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  }
  return smallest;
}

}  // namespace

StatusOr<HostMemory> ReadHostMemory(const std::string& root) {
  std::optional<std::string> meminfo = ReadSmallFile(root + "/proc/meminfo");
  if (!meminfo) return NotFound("cannot read " + root + "/proc/meminfo");
  const size_t at = meminfo->find("MemTotal:");
  if (at == std::string::npos) return NotFound(root + "/proc/meminfo has no MemTotal");
  HostMemory host;
  try {
    host.bytes = std::stoull(meminfo->substr(at + 9)) * 1024;  // in kB
  } catch (const std::exception&) {
    return InvalidArgument(root + "/proc/meminfo: MemTotal is not a number");
  }
  host.source = "MemTotal";
  // Lines "0::/path" (v2) or "N:memory:/path" (v1, possibly among other controllers).
  std::istringstream cgroups(ReadSmallFile(root + "/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(cgroups, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<uint64_t> limit;
    if (line.rfind("0::", 0) == 0) {
      limit = SmallestLimit(root + "/sys/fs/cgroup", path, "memory.max");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = SmallestLimit(root + "/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
    }
    if (limit && *limit < host.bytes) {
      host.bytes = *limit;
      host.source = "the memory limit of cgroup " + path;
    }
  }
  return host;
}

uint64_t EffectiveMemoryBudget(uint64_t configured, const HostMemory& host) {
  if (configured > 0) return configured;
  return static_cast<uint64_t>(static_cast<double>(host.bytes) * kAutoBudgetShare);
}

}  // namespace conveyor::config
