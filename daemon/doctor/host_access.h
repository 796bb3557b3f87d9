// Access to the GPU driver's device nodes (/dev/kfd for ROCm, /dev/nvidiactl for NVIDIA)
// and membership of the groups that usually grant it (render, video). The group verdict
// is a pure function of ids so the tests can cover every case.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "doctor_report.h"

namespace conveyor::doctor {

// Opens `path` read-write as the runtime does. `required`: a failure blocks GPU use
// (FAIL); otherwise absent is skip and unopenable is warn.
CheckResult CheckDeviceNode(const std::string& path, const std::string& driver, bool required);

struct GroupWanted {
  std::string name;          // "render"
  std::optional<gid_t> gid;  // nullopt: no such group on this host
};

// ok when root, when in one of `wanted`, or when the node opens anyway; warn otherwise.
CheckResult EvaluateGroups(uid_t euid, const std::vector<gid_t>& groups, const std::vector<GroupWanted>& wanted,
                           bool node_opens, const std::string& node);

// EvaluateGroups for this process (geteuid, getegid + getgroups, getgrnam).
CheckResult CheckGpuGroups(const std::vector<std::string>& names, bool node_opens, const std::string& node);

}  // namespace conveyor::doctor
