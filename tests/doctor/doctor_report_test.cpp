// The doctor's line format, JSON line, exit-code policy and argument parsing.
#include "doctor_report.h"

#include <gtest/gtest.h>

#include "doctor.h"
#include "gpu_checks.h"

namespace conveyor::doctor {
namespace {

TEST(DoctorReport, FormatsOneLinePerCheckWithAlignedDetails) {
  const CheckResult ok{"sync copy", Verdict::kOk, "4.0 MiB round trip matches", {}};
  EXPECT_EQ(FormatCheck(ok), "[ ok ] sync copy:                    4.0 MiB round trip matches");
  EXPECT_EQ(FormatCheck({"overlap", Verdict::kWarn, "x", {}}).substr(0, 7), "[warn] ");
  EXPECT_EQ(FormatCheck({"devices", Verdict::kFail, "x", {}}).substr(0, 7), "[FAIL] ");
  EXPECT_EQ(FormatCheck({"kernel", Verdict::kSkip, "x", {}}).substr(0, 7), "[skip] ");
  // A name longer than the column still leaves one space before the detail.
  const std::string long_name(40, 'n');
  EXPECT_EQ(FormatCheck({long_name, Verdict::kOk, "d", {}}), "[ ok ] " + long_name + ": d");
}

TEST(DoctorReport, ExitCodePolicy) {
  const std::vector<CheckResult> fine = {{"a", Verdict::kOk, "", {}}, {"b", Verdict::kWarn, "", {}},
                                         {"c", Verdict::kSkip, "", {}}};
  std::vector<CheckResult> broken = fine;
  broken.push_back({"sync copy", Verdict::kFail, "differs", {}});

  EXPECT_EQ(DecideOutcome(true, true, fine), Outcome::kGpuUsable);
  EXPECT_EQ(DecideOutcome(true, true, broken), Outcome::kGpuBlocked);
  // No device and no backend win over individual failures: they say more.
  EXPECT_EQ(DecideOutcome(true, false, broken), Outcome::kNoDevice);
  EXPECT_EQ(DecideOutcome(false, false, broken), Outcome::kNoBackend);

  EXPECT_EQ(ExitCodeFor(Outcome::kGpuUsable), 0);
  EXPECT_EQ(ExitCodeFor(Outcome::kGpuBlocked), kExitGpuBlocked);
  EXPECT_EQ(ExitCodeFor(Outcome::kNoBackend), kExitNoBackend);
  EXPECT_EQ(ExitCodeFor(Outcome::kNoDevice), kExitNoDevice);
  // Every outcome (and usage errors) has its own code.
  EXPECT_NE(kExitNoBackend, kExitNoDevice);
  EXPECT_NE(kExitNoBackend, kExitGpuBlocked);
  EXPECT_NE(kExitNoDevice, kExitGpuBlocked);
  EXPECT_NE(kExitUsage, kExitNoBackend);
}

TEST(DoctorReport, AnExpectationDecidesTheExitCode) {
  const Outcome all[] = {Outcome::kGpuUsable, Outcome::kGpuBlocked, Outcome::kNoDevice, Outcome::kNoBackend};
  for (const Outcome o : all) {
    SCOPED_TRACE(OutcomeName(o));
    // A CPU-only deployment is served in every case; the GPU worker only where a GPU is usable.
    EXPECT_EQ(ExitCodeFor(o, Expect::kCpu), kExitOk);
    EXPECT_EQ(ExitCodeFor(o, Expect::kGpu), ExitCodeFor(o));
    EXPECT_EQ(ExitCodeFor(o, Expect::kGpu) == kExitOk, o == Outcome::kGpuUsable);
    EXPECT_EQ(ExpectationLine(o, Expect::kNone), "");
  }
  EXPECT_EQ(ExpectationLine(Outcome::kNoBackend, Expect::kCpu), "expected: the CPU worker. It serves here");
  EXPECT_NE(ExpectationLine(Outcome::kGpuUsable, Expect::kCpu).find("set workers = \"cpu\""), std::string::npos);
  EXPECT_EQ(ExpectationLine(Outcome::kGpuUsable, Expect::kGpu), "expected: the GPU worker. It serves here");
  EXPECT_NE(ExpectationLine(Outcome::kNoDevice, Expect::kGpu).find("does NOT serve here"), std::string::npos);
  EXPECT_EQ(FormatJsonLine("none", Outcome::kNoBackend, {}, Expect::kCpu),
            "{\"doctor\":\"conveyor\",\"backend\":\"none\",\"outcome\":\"no_backend\",\"expect\":\"cpu\","
            "\"exit_code\":0,\"checks\":[]}");
}

TEST(DoctorReport, ConclusionsSayWhatConveyordWillDo) {
  EXPECT_EQ(Conclusion(Outcome::kNoBackend, ""), "no GPU backend in this build: conveyord will use its CPU worker");
  EXPECT_EQ(Conclusion(Outcome::kNoDevice, "hipGetDeviceCount: hipErrorNoDevice (no ROCm-capable device is detected)"),
            "no usable GPU device (hipGetDeviceCount: hipErrorNoDevice (no ROCm-capable device is detected)): "
            "conveyord will use its CPU worker");
  EXPECT_NE(Conclusion(Outcome::kGpuBlocked, "sync copy: differs").find("sync copy: differs"), std::string::npos);
  EXPECT_EQ(Conclusion(Outcome::kGpuUsable, ""), "GPU usable: conveyord will use its GPU worker");
}

TEST(DoctorReport, JsonLineEscapesAndCarriesMetrics) {
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\x01"), "a\\\"b\\\\c\\nd\\u0001");
  const std::vector<CheckResult> checks = {
      {"overlap", Verdict::kOk, "copy \"1\"", {{"overlap_fraction", 0.5}}},
      {"HSA_ENABLE_SDMA", Verdict::kSkip, "unset", {}},
  };
  EXPECT_EQ(FormatJsonLine("hip-amd", Outcome::kGpuUsable, checks),
            "{\"doctor\":\"conveyor\",\"backend\":\"hip-amd\",\"outcome\":\"gpu_usable\",\"exit_code\":0,\"checks\":["
            "{\"name\":\"overlap\",\"verdict\":\"ok\",\"detail\":\"copy \\\"1\\\"\",\"metrics\":{\"overlap_fraction\":0.5}},"
            "{\"name\":\"HSA_ENABLE_SDMA\",\"verdict\":\"skip\",\"detail\":\"unset\"}]}");
}

TEST(DoctorReport, FormatsBytesAndVersions) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(64.0 * 1024 * 1024), "64.0 MiB");
  EXPECT_EQ(FormatBytes(150080000000.0), "139.8 GiB");
  EXPECT_EQ(FormatCudaVersion(13000), "13.0");
  EXPECT_EQ(FormatCudaVersion(12080), "12.8");
  EXPECT_EQ(FormatHipVersion(50221153), "5.2.21153");
  EXPECT_EQ(FormatHipVersion(60342134), "6.3.42134");
  EXPECT_EQ(FormatHipVersion(1234), "1234");
}

TEST(DoctorReport, OverlapVerdict) {
  // Serial: together = sum -> nothing hidden.
  EXPECT_DOUBLE_EQ(OverlapFraction(2.0, 2.0, 4.0), 0.0);
  // Perfect: together = the longer one.
  EXPECT_DOUBLE_EQ(OverlapFraction(2.0, 3.0, 3.0), 1.0);
  EXPECT_DOUBLE_EQ(OverlapFraction(2.0, 2.0, 3.0), 0.5);
  EXPECT_DOUBLE_EQ(OverlapFraction(2.0, 2.0, 5.0), 0.0);  // clamped
  EXPECT_DOUBLE_EQ(OverlapFraction(0.0, 2.0, 2.0), 0.0);

  const CheckResult good = OverlapVerdict(1.25, 2.0, 2.1, size_t{64} << 20);
  EXPECT_EQ(good.verdict, Verdict::kOk);
  EXPECT_NE(good.detail.find("64.0 MiB 1.25 ms"), std::string::npos) << good.detail;
  EXPECT_NE(good.detail.find("together 2.10 ms: 92% of the shorter hidden"), std::string::npos) << good.detail;
  const CheckResult none = OverlapVerdict(2.0, 2.0, 4.0, size_t{64} << 20);
  EXPECT_EQ(none.verdict, Verdict::kWarn);
  EXPECT_NE(none.detail.find("no overlap"), std::string::npos) << none.detail;
  EXPECT_NE(none.detail.find("HSA_ENABLE_SDMA"), std::string::npos) << none.detail;
}

TEST(DoctorReport, BandwidthVerdict) {
  const CheckResult h2d = BandwidthVerdict("H2D", 53.2, 18.0, size_t{64} << 20, 5);
  EXPECT_EQ(h2d.name, "H2D bandwidth");
  EXPECT_EQ(h2d.verdict, Verdict::kOk);
  EXPECT_EQ(h2d.detail, "pinned 53.2 GB/s, pageable 18.0 GB/s, pinned/pageable 2.96x (64.0 MiB, best of 5)");
  ASSERT_EQ(h2d.metrics.size(), 3u);
  EXPECT_EQ(h2d.metrics[0].first, "h2d_pinned_gbps");
  EXPECT_EQ(BandwidthVerdict("D2H", 10.0, 12.0, 1 << 20, 3).verdict, Verdict::kWarn);
}

TEST(DoctorArgs, ParsesSizesAndFlags) {
  EXPECT_EQ(ParseByteSize("4096").value(), 4096u);
  EXPECT_EQ(ParseByteSize("64M").value(), size_t{64} << 20);
  EXPECT_EQ(ParseByteSize("512k").value(), size_t{512} << 10);
  EXPECT_EQ(ParseByteSize("1G").value(), size_t{1} << 30);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("M").ok());
  EXPECT_FALSE(ParseByteSize("12x").ok());
  EXPECT_FALSE(ParseByteSize("-5").ok());

  bool help = true;
  auto d = ParseDoctorArgs({}, &help);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(help);
  EXPECT_EQ(d->bandwidth_bytes, size_t{64} << 20);
  EXPECT_FALSE(d->json);

  auto o = ParseDoctorArgs({"--bytes", "16M", "--json", "--reps=3", "--device", "1"}, &help);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->bandwidth_bytes, size_t{16} << 20);
  EXPECT_TRUE(o->json);
  EXPECT_EQ(o->reps, 3);
  EXPECT_EQ(o->device, 1);

  EXPECT_FALSE(ParseDoctorArgs({"--bytes"}, &help).ok());
  EXPECT_FALSE(ParseDoctorArgs({"--bytes", "100"}, &help).ok());  // below 4096
  EXPECT_FALSE(ParseDoctorArgs({"--reps", "0"}, &help).ok());
  EXPECT_EQ(ParseDoctorArgs({"--frobnicate"}, &help).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ParseDoctorArgs({"-h"}, &help).ok());
  EXPECT_TRUE(help);
}

}  // namespace
}  // namespace conveyor::doctor
