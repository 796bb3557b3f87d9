// `ldconfig -p` parsing and the duplicate-runtime check, on fixture text.
#include "loader_check.h"

#include <gtest/gtest.h>

#include <map>

namespace conveyor::doctor {
namespace {

// Debian 12 with libamdhip64-dev: the .so and .so.1 links end at one file (merged /usr).
const char* kDebian =
    "1429 libs found in cache `/etc/ld.so.cache'\n"
    "\tlibhsakmt.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libhsakmt.so.1\n"
    "\tlibhsa-runtime64.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libhsa-runtime64.so.1\n"
    "\tlibhsa-runtime64.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libhsa-runtime64.so\n"
    "\tlibhsa-runtime-tools64.so.1 (libc6,x86-64) => /opt/rocm/lib/libhsa-runtime-tools64.so.1\n"
    "\tlibamdhip64.so.5 (libc6,x86-64) => /lib/x86_64-linux-gnu/libamdhip64.so.5\n";

// Debian's ROCm plus a vendor ROCm 6.0 in /opt: two real files, the case the check exists for. The
// /opt/rocm symlink to /opt/rocm-6.0.0 must not count as a third copy.
const char* kTwoInstalls =
    "2000 libs found in cache `/etc/ld.so.cache'\n"
    "\tlibhsa-runtime64.so.1 (libc6,x86-64) => /opt/rocm/lib/libhsa-runtime64.so.1\n"
    "\tlibhsa-runtime64.so.1 (libc6,x86-64) => /opt/rocm-6.0.0/lib/libhsa-runtime64.so.1\n"
    "\tlibhsa-runtime64.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libhsa-runtime64.so.1\n"
    "\tlibhsa-runtime64.so (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libhsa-runtime64.so\n"
    "\tlibhsa-runtime64.so.1 (libc6, hwcap: 0x0000000000000004) => /usr/lib32/libhsa-runtime64.so.1\n"
    "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n";

PathResolver Table(std::map<std::string, std::string> links) {
  return [links](const std::string& p) {
    const auto it = links.find(p);
    return it == links.end() ? p : it->second;
  };
}

const PathResolver kResolver = Table({
    {"/lib/x86_64-linux-gnu/libhsa-runtime64.so.1", "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0"},
    {"/lib/x86_64-linux-gnu/libhsa-runtime64.so", "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0"},
    {"/opt/rocm/lib/libhsa-runtime64.so.1", "/opt/rocm-6.0.0/lib/libhsa-runtime64.so.1.12.60000"},
    {"/opt/rocm-6.0.0/lib/libhsa-runtime64.so.1", "/opt/rocm-6.0.0/lib/libhsa-runtime64.so.1.12.60000"},
});

TEST(DoctorLoader, ParsesEntriesAndSkipsTheHeader) {
  const auto entries = ParseLdconfig(kTwoInstalls);
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0].soname, "libhsa-runtime64.so.1");
  EXPECT_EQ(entries[0].abi, "libc6,x86-64");
  EXPECT_EQ(entries[0].path, "/opt/rocm/lib/libhsa-runtime64.so.1");
  EXPECT_EQ(entries[3].abi, "libc6,x86-64");  // OS ABI note dropped
  EXPECT_EQ(entries[4].abi, "libc6");         // hwcap note dropped
  EXPECT_EQ(entries[4].path, "/usr/lib32/libhsa-runtime64.so.1");
  EXPECT_TRUE(ParseLdconfig("").empty());
  EXPECT_TRUE(ParseLdconfig("garbage\nno arrow (here)\n").empty());
}

TEST(DoctorLoader, MatchesOnlyTheLibraryItself) {
  EXPECT_TRUE(SonameIsLibrary("libhsa-runtime64.so", "libhsa-runtime64"));
  EXPECT_TRUE(SonameIsLibrary("libhsa-runtime64.so.1", "libhsa-runtime64"));
  EXPECT_FALSE(SonameIsLibrary("libhsa-runtime-tools64.so.1", "libhsa-runtime64"));
  EXPECT_FALSE(SonameIsLibrary("libhsa-runtime64.so.", "libhsa-runtime64"));
  EXPECT_FALSE(SonameIsLibrary("libcudart.so.13", "libcuda"));
  EXPECT_TRUE(SonameIsLibrary("libcuda.so.1", "libcuda"));
}

TEST(DoctorLoader, OneInstallIsOneCopy) {
  const auto copies = FindLibraryCopies(ParseLdconfig(kDebian), "libhsa-runtime64", kResolver);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].paths.size(), 2u);
  ASSERT_EQ(copies[0].files.size(), 1u);
  const CheckResult r = CheckLibraryCopies(kDebian, "libhsa-runtime64", kResolver, Verdict::kWarn, "");
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.name, "loader libhsa-runtime64");
  EXPECT_EQ(r.detail, "1 copy (libc6,x86-64): /usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0");
}

TEST(DoctorLoader, TwoInstallsAreDuplicates) {
  const auto copies = FindLibraryCopies(ParseLdconfig(kTwoInstalls), "libhsa-runtime64", kResolver);
  ASSERT_EQ(copies.size(), 2u);  // x86-64 and the 32-bit one, apart
  EXPECT_EQ(copies[0].abi, "libc6,x86-64");
  EXPECT_EQ(copies[0].files,
            (std::vector<std::string>{"/opt/rocm-6.0.0/lib/libhsa-runtime64.so.1.12.60000",
                                      "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0"}));
  EXPECT_EQ(copies[1].abi, "libc6");
  EXPECT_EQ(copies[1].files.size(), 1u);

  const CheckResult r = CheckLibraryCopies(kTwoInstalls, "libhsa-runtime64", kResolver, Verdict::kWarn, "");
  EXPECT_EQ(r.verdict, Verdict::kWarn);
  EXPECT_NE(r.detail.find("2 copies (libc6,x86-64)"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("keep one"), std::string::npos) << r.detail;
  ASSERT_FALSE(r.metrics.empty());
  EXPECT_EQ(r.metrics[0].second, 2);

  // Without symlink resolution every distinct path would count.
  EXPECT_EQ(FindLibraryCopies(ParseLdconfig(kTwoInstalls), "libhsa-runtime64", nullptr)[0].files.size(), 4u);
}

TEST(DoctorLoader, MissingLibraryTakesTheGivenVerdict) {
  const CheckResult skip = CheckLibraryCopies(kDebian, "libcuda", kResolver, Verdict::kSkip, "only a CUDA build needs it");
  EXPECT_EQ(skip.verdict, Verdict::kSkip);
  EXPECT_NE(skip.detail.find("not on the loader path"), std::string::npos);
  EXPECT_NE(skip.detail.find("only a CUDA build needs it"), std::string::npos);
  EXPECT_EQ(CheckLibraryCopies(kTwoInstalls, "libcuda", kResolver, Verdict::kWarn, "").verdict, Verdict::kOk);
}

TEST(DoctorLoader, ThisHostsLdconfigParses) {
  auto text = RunLdconfig();
  if (!text.ok()) GTEST_SKIP() << text.status().ToString();
  EXPECT_FALSE(ParseLdconfig(*text).empty()) << "ldconfig -p printed nothing parseable";
}

}  // namespace
}  // namespace conveyor::doctor
