// Device node access and the render/video group verdict.
#include "host_access.h"

#include <gtest/gtest.h>

namespace conveyor::doctor {
namespace {

TEST(DoctorHostAccess, GroupVerdicts) {
  const std::vector<GroupWanted> wanted = {{"render", 109}, {"video", 44}};
  const CheckResult root = EvaluateGroups(0, {0}, wanted, false, "/dev/kfd");
  EXPECT_EQ(root.verdict, Verdict::kOk);
  EXPECT_EQ(root.detail, "running as root (not in render,video)");

  const CheckResult member = EvaluateGroups(1000, {1000, 44}, wanted, false, "/dev/kfd");
  EXPECT_EQ(member.verdict, Verdict::kOk);
  EXPECT_EQ(member.detail, "in video; not in render");

  const CheckResult outsider = EvaluateGroups(1000, {1000}, wanted, false, "/dev/kfd");
  EXPECT_EQ(outsider.verdict, Verdict::kWarn);
  EXPECT_NE(outsider.detail.find("usermod -aG render,video"), std::string::npos) << outsider.detail;

  // The node may be open to everyone (mode or ACL): then the groups do not matter.
  EXPECT_EQ(EvaluateGroups(1000, {1000}, wanted, true, "/dev/kfd").verdict, Verdict::kOk);

  const CheckResult no_render = EvaluateGroups(1000, {1000}, {{"render", std::nullopt}, {"video", 44}}, false, "/dev/kfd");
  EXPECT_EQ(no_render.verdict, Verdict::kWarn);
  EXPECT_NE(no_render.detail.find("no group render on this host"), std::string::npos) << no_render.detail;
}

TEST(DoctorHostAccess, MissingNodeIsSkipOrFail) {
  const std::string path = "/dev/conveyor-doctor-no-such-node";
  const CheckResult optional = CheckDeviceNode(path, "test", false);
  EXPECT_EQ(optional.verdict, Verdict::kSkip);
  EXPECT_NE(optional.detail.find("absent"), std::string::npos);
  EXPECT_EQ(CheckDeviceNode(path, "test", true).verdict, Verdict::kFail);
  EXPECT_EQ(CheckDeviceNode("/dev/null", "test", true).verdict, Verdict::kOk);
}

}  // namespace
}  // namespace conveyor::doctor
