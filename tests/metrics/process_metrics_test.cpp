// The process_* families: /proc/<pid>/stat parsed field by field (a command name with
// spaces and parentheses included), and the live families read from this very process
// with sane values.
#include "process_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <vector>

#include "exposition.h"

namespace conveyor::metrics {
namespace {

// A real line of a process named "a (b) c" (so the name holds ") "): utime 250, stime 50,
// starttime 12345, vsize 104857600, rss 2560 pages.
constexpr char kStat[] =
    "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 7 0 12345 104857600 2560 "
    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";

TEST(ProcessMetrics, ParsesProcStatAfterTheLastParenthesis) {
  StatusOr<ProcStat> s = ParseProcStat(kStat, 100, 4096);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);
  EXPECT_DOUBLE_EQ(s->start_since_boot_s, 123.45);
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 104857600.0);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 2560.0 * 4096);
}

TEST(ProcessMetrics, BadStatTextIsAnError) {
  EXPECT_EQ(ParseProcStat("4242 (x", 100, 4096).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProcStat("4242 (x) S 1 2 3", 100, 4096).status().code(), StatusCode::kInvalidArgument);
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " 2x0 ");
  EXPECT_EQ(ParseProcStat(bad, 100, 4096).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseProcStat(kStat, 0, 4096).ok());
}

TEST(ProcessMetrics, BootTimeComesFromTheBtimeLine) {
  StatusOr<double> b = ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1764979200\nprocesses 9\n");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b, 1764979200.0);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").ok());
}

// The value of the unlabelled family `name`, or NaN when it is missing.
double ValueOf(const Registry& r, const std::string& name) {
  for (const FamilySnapshot& f : r.Collect()) {
    if (f.name == name && f.children.size() == 1) return f.children[0].value;
  }
  return std::nan("");
}

TEST(ProcessMetrics, LiveFamiliesHaveSaneValues) {
  Registry r;
  StatusOr<std::vector<ScopedCallback>> bound = RegisterProcessMetrics(r);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_GT(ValueOf(r, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(ValueOf(r, "process_virtual_memory_bytes"), ValueOf(r, "process_resident_memory_bytes"));
  EXPECT_GE(ValueOf(r, "process_cpu_seconds_total"), 0);
  EXPECT_NEAR(ValueOf(r, "process_start_time_seconds"), now, 60) << "this test started within a minute";
  EXPECT_GE(ValueOf(r, "process_open_fds"), 3) << "stdin, stdout, stderr at least";
  EXPECT_GE(ValueOf(r, "process_max_fds"), ValueOf(r, "process_open_fds"));

  // An fd opened now is counted at the next scrape.
  const double before = ValueOf(r, "process_open_fds");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(ValueOf(r, "process_open_fds"), before + 2);
  close(fds[0]);
  close(fds[1]);

  // CPU time is a counter and grows with work.
  const double cpu = ValueOf(r, "process_cpu_seconds_total");
  volatile double x = 0;
  const std::clock_t until = std::clock() + CLOCKS_PER_SEC / 5;
  while (std::clock() < until) x = x + 1;
  EXPECT_GT(ValueOf(r, "process_cpu_seconds_total"), cpu);

  const std::string text = RenderText(r);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE process_resident_memory_bytes gauge\n"), std::string::npos) << text;
}

TEST(ProcessMetrics, RegisteringTwiceIsAnError) {
  Registry r;
  StatusOr<std::vector<ScopedCallback>> first = RegisterProcessMetrics(r);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(RegisterProcessMetrics(r).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace conveyor::metrics
