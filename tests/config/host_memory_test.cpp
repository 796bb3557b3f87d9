// The memory the host gives conveyord (host_memory.h), from directories laid out like
// /proc and /sys/fs/cgroup: MemTotal alone, a cgroup v2 memory.max on the daemon's own
// cgroup or an ancestor (the smallest wins), cgroup v1's memory.limit_in_bytes, "max"
// and v1's unlimited; and the auto budget's share of it.
#include <filesystem>
#include <string>

#include "config_test_util.h"
#include "host_memory.h"

namespace conveyor::config {
namespace {

// A root with /proc/meminfo of `mem_total_kb` and /proc/self/cgroup of `cgroup`.
void LayOut(const TempDir& root, uint64_t mem_total_kb, const std::string& cgroup) {
  std::filesystem::create_directories(root.path() + "/proc/self");
  WriteWholeFile(root.path() + "/proc/meminfo",
                 "MemTotal:       " + std::to_string(mem_total_kb) + " kB\nMemFree:        1000 kB\n");
  WriteWholeFile(root.path() + "/proc/self/cgroup", cgroup);
}

void Limit(const TempDir& root, const std::string& dir, const std::string& file, const std::string& value) {
  std::filesystem::create_directories(root.path() + dir);
  WriteWholeFile(root.path() + dir + "/" + file, value);
}

TEST(HostMemory, MemTotalWithoutACgroupLimit) {
  TempDir root;
  LayOut(root, 8 * 1024 * 1024, "0::/system.slice/conveyord.service\n");
  Limit(root, "/sys/fs/cgroup/system.slice/conveyord.service", "memory.max", "max\n");
  StatusOr<HostMemory> m = ReadHostMemory(root.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->bytes, 8ull << 30);
  EXPECT_EQ(m->source, "MemTotal");
  EXPECT_EQ(EffectiveMemoryBudget(0, *m), 6ull << 30) << "3/4 of it";
  EXPECT_EQ(EffectiveMemoryBudget(1 << 20, *m), 1u << 20) << "a configured budget is taken as it is";
}

TEST(HostMemory, TheSmallestMemoryMaxOfTheCgroupAndItsAncestors) {
  TempDir root;
  LayOut(root, 64 * 1024 * 1024, "0::/system.slice/conveyord.service\n");
  Limit(root, "/sys/fs/cgroup/system.slice/conveyord.service", "memory.max", "4294967296\n");
  Limit(root, "/sys/fs/cgroup/system.slice", "memory.max", "max\n");
  StatusOr<HostMemory> m = ReadHostMemory(root.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, 4ull << 30);
  EXPECT_EQ(m->source, "the memory limit of cgroup /system.slice/conveyord.service");
  EXPECT_EQ(EffectiveMemoryBudget(0, *m), 3ull << 30);

  Limit(root, "/sys/fs/cgroup/system.slice", "memory.max", "2147483648\n");
  m = ReadHostMemory(root.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, 2ull << 30) << "the slice's smaller limit binds the service too";
}

TEST(HostMemory, CgroupV1MemoryControllerAndItsUnlimitedValue) {
  TempDir root;
  LayOut(root, 16 * 1024 * 1024, "4:memory:/job/42\n3:cpu,cpuacct:/job/42\n");
  Limit(root, "/sys/fs/cgroup/memory/job/42", "memory.limit_in_bytes", "9223372036854771712\n");
  StatusOr<HostMemory> m = ReadHostMemory(root.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, 16ull << 30) << "unlimited";
  Limit(root, "/sys/fs/cgroup/memory/job/42", "memory.limit_in_bytes", "1073741824\n");
  m = ReadHostMemory(root.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, 1ull << 30);
  EXPECT_EQ(m->source, "the memory limit of cgroup /job/42");
}

TEST(HostMemory, ALimitAboveMemTotalAndAMissingCgroupAreNoLimit) {
  TempDir root;
  LayOut(root, 2 * 1024 * 1024, "0::/gone.scope\n");
  Limit(root, "/sys/fs/cgroup", "memory.max", "8589934592\n");
  StatusOr<HostMemory> m = ReadHostMemory(root.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, 2ull << 30);
  EXPECT_EQ(m->source, "MemTotal");
}

TEST(HostMemory, NoMeminfoIsAnError) {
  TempDir root;
  EXPECT_FALSE(ReadHostMemory(root.path()).ok());
  EXPECT_TRUE(ReadHostMemory().ok()) << "this host's own";
}

}  // namespace
}  // namespace conveyor::config
