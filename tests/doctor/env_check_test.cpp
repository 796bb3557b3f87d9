// Each runtime variable is shown with what its value does, and the values that serialise
// work or hide devices are warnings.
#include "env_check.h"

#include <gtest/gtest.h>

#include <map>

namespace conveyor::doctor {
namespace {

TEST(DoctorEnv, ListsTheVariablesTheFieldNoteNames) {
  const auto& vars = DoctorEnvVars();
  for (const char* v : {"HSA_ENABLE_SDMA", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                        "GPU_MAX_HW_QUEUES", "HIP_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL",
                        "AMD_SERIALIZE_COPY"}) {
    EXPECT_NE(std::find(vars.begin(), vars.end(), v), vars.end()) << v;
  }
}

TEST(DoctorEnv, UnsetVariablesSayUnsetAndAreFine) {
  for (const std::string& name : DoctorEnvVars()) {
    const CheckResult r = DescribeEnv(name, std::nullopt);
    EXPECT_EQ(r.name, name);
    EXPECT_EQ(r.verdict, Verdict::kOk) << name;
    EXPECT_EQ(r.detail.rfind("unset -- ", 0), 0u) << r.detail;
    EXPECT_GT(r.detail.size(), 20u) << name << " needs an explanation";
  }
}

TEST(DoctorEnv, ValuesThatSerialiseOrHideAreWarnings) {
  const CheckResult sdma_off = DescribeEnv("HSA_ENABLE_SDMA", "0");
  EXPECT_EQ(sdma_off.verdict, Verdict::kWarn);
  EXPECT_EQ(sdma_off.detail.rfind("=0 -- SDMA off", 0), 0u) << sdma_off.detail;
  EXPECT_EQ(DescribeEnv("HSA_ENABLE_SDMA", "1").verdict, Verdict::kOk);

  EXPECT_EQ(DescribeEnv("HIP_LAUNCH_BLOCKING", "1").verdict, Verdict::kWarn);
  EXPECT_EQ(DescribeEnv("HIP_LAUNCH_BLOCKING", "0").verdict, Verdict::kOk);
  EXPECT_EQ(DescribeEnv("CUDA_LAUNCH_BLOCKING", "1").verdict, Verdict::kWarn);
  EXPECT_EQ(DescribeEnv("GPU_MAX_HW_QUEUES", "1").verdict, Verdict::kWarn);
  EXPECT_EQ(DescribeEnv("GPU_MAX_HW_QUEUES", "8").verdict, Verdict::kOk);

  const CheckResult ser = DescribeEnv("AMD_SERIALIZE_KERNEL", "3");
  EXPECT_EQ(ser.verdict, Verdict::kWarn);
  EXPECT_NE(ser.detail.find("before and after each kernel"), std::string::npos) << ser.detail;
  EXPECT_NE(DescribeEnv("AMD_SERIALIZE_COPY", "1").detail.find("before each copy"), std::string::npos);
  EXPECT_EQ(DescribeEnv("AMD_SERIALIZE_COPY", "0").verdict, Verdict::kOk);

  const CheckResult hidden = DescribeEnv("HIP_VISIBLE_DEVICES", "");
  EXPECT_EQ(hidden.verdict, Verdict::kWarn);
  EXPECT_EQ(hidden.detail.rfind("=\"\" -- hides every device", 0), 0u) << hidden.detail;
  const CheckResult some = DescribeEnv("CUDA_VISIBLE_DEVICES", "1,0");
  EXPECT_EQ(some.verdict, Verdict::kOk);
  EXPECT_NE(some.detail.find("renumbered from 0"), std::string::npos);
}

TEST(DoctorEnv, DescribeEnvironmentUsesTheLookup) {
  const std::map<std::string, std::string> env = {{"HSA_ENABLE_SDMA", "0"}, {"ROCR_VISIBLE_DEVICES", "0"}};
  const auto lines = DescribeEnvironment([&](const std::string& n) -> std::optional<std::string> {
    const auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  ASSERT_EQ(lines.size(), DoctorEnvVars().size());
  EXPECT_EQ(lines[0].name, "HSA_ENABLE_SDMA");
  EXPECT_EQ(lines[0].verdict, Verdict::kWarn);
  for (const CheckResult& l : lines) {
    if (l.name == "ROCR_VISIBLE_DEVICES") {
      EXPECT_EQ(l.detail.rfind("=0 -- ", 0), 0u) << l.detail;
    }
    if (l.name == "GPU_MAX_HW_QUEUES") {
      EXPECT_EQ(l.detail.rfind("unset", 0), 0u) << l.detail;
    }
  }
}

}  // namespace
}  // namespace conveyor::doctor
