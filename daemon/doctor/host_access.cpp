// Device node and group checks (see host_access.h).
#include "host_access.h"

#include "unique_fd.h"

#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace conveyor::doctor {

using conveyor::UniqueFd;

CheckResult CheckDeviceNode(const std::string& path, const std::string& driver, bool required) {
  CheckResult r;
  r.name = path;
  const UniqueFd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() >= 0) {
    r.verdict = Verdict::kOk;
    r.detail = "opens read-write (" + driver + " driver loaded, access granted)";
    return r;
  }
  const int err = errno;
  if (err == ENOENT || err == ENODEV || err == ENXIO) {
    r.verdict = required ? Verdict::kFail : Verdict::kSkip;
    r.detail = "absent (" + std::string(std::strerror(err)) + "): the " + driver + " kernel driver is not loaded or this host has no such GPU";
  } else if (err == EACCES || err == EPERM) {
    r.verdict = required ? Verdict::kFail : Verdict::kWarn;
    r.detail = "permission denied: the user needs the node's group (render/video) or a udev rule";
  } else {
    r.verdict = required ? Verdict::kFail : Verdict::kWarn;
    r.detail = std::string("open failed: ") + std::strerror(err);
  }
  return r;
}

CheckResult EvaluateGroups(uid_t euid, const std::vector<gid_t>& groups, const std::vector<GroupWanted>& wanted,
                           bool node_opens, const std::string& node) {
  CheckResult r;
  r.name = "groups";
  std::vector<std::string> member, not_member, missing;
  for (const GroupWanted& w : wanted) {
    if (!w.gid) missing.push_back(w.name);
    else if (std::find(groups.begin(), groups.end(), *w.gid) != groups.end()) member.push_back(w.name);
    else not_member.push_back(w.name);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  std::string facts;
  if (!member.empty()) facts += "in " + join(member);
  if (!not_member.empty()) facts += std::string(facts.empty() ? "" : "; ") + "not in " + join(not_member);
  if (!missing.empty()) facts += std::string(facts.empty() ? "" : "; ") + "no group " + join(missing) + " on this host";
  if (euid == 0) {
    r.verdict = Verdict::kOk;
    r.detail = "running as root (" + facts + ")";
  } else if (!member.empty()) {
    r.verdict = Verdict::kOk;
    r.detail = facts;
  } else if (node_opens) {
    r.verdict = Verdict::kOk;
    r.detail = facts + ", but " + node + " opens anyway (mode or ACL)";
  } else {
    r.verdict = Verdict::kWarn;
    r.detail = facts + ": add the user to them (usermod -aG " + join(not_member.empty() ? missing : not_member) +
               " USER) and log in again";
  }
  return r;
}

CheckResult CheckGpuGroups(const std::vector<std::string>& names, bool node_opens, const std::string& node) {
  std::vector<gid_t> groups;
  const int n = getgroups(0, nullptr);
  if (n > 0) {
    groups.resize(static_cast<size_t>(n));
    const int got = getgroups(n, groups.data());
    groups.resize(got > 0 ? static_cast<size_t>(got) : 0);
  }
  groups.push_back(getegid());
  std::vector<GroupWanted> wanted;
  for (const std::string& name : names) {
    const struct group* g = getgrnam(name.c_str());
    wanted.push_back(GroupWanted{name, g != nullptr ? std::optional<gid_t>(g->gr_gid) : std::nullopt});
  }
  return EvaluateGroups(geteuid(), groups, wanted, node_opens, node);
}

}  // namespace conveyor::doctor
