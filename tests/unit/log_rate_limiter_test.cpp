// The budget for log lines on a clock the test moves: at most `budget` lines a window, the
// rest counted and reported once, after their window has passed.
#include "log_rate_limiter.h"

#include <gtest/gtest.h>

namespace conveyor {
namespace {

using Clock = LogRateLimiter::Clock;
using std::chrono::milliseconds;

const Clock::time_point kStart = Clock::time_point() + std::chrono::hours(1);

TEST(LogRateLimiter, AdmitsTheBudgetThenCountsTheRestUntilTheWindowPasses) {
  LogRateLimiter limit(3, std::chrono::seconds(1));
  EXPECT_FALSE(limit.SummaryDue());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limit.Admit(kStart + milliseconds(10 * i))) << i;
  EXPECT_FALSE(limit.SummaryDue()) << "nothing suppressed yet";
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limit.Admit(kStart + milliseconds(100 + i))) << i;
  // The summary is due when the window ends, not before.
  ASSERT_TRUE(limit.SummaryDue());
  EXPECT_EQ(*limit.SummaryDue(), kStart + std::chrono::seconds(1));
  EXPECT_EQ(limit.TakeSuppressed(kStart + milliseconds(999)), 0u);
  EXPECT_EQ(limit.TakeSuppressed(kStart + milliseconds(1000)), 5u);
  EXPECT_EQ(limit.TakeSuppressed(kStart + milliseconds(1001)), 0u) << "reported once";
  EXPECT_FALSE(limit.SummaryDue());
  // A new window has a whole budget again.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limit.Admit(kStart + milliseconds(1100 + i))) << i;
  EXPECT_FALSE(limit.Admit(kStart + milliseconds(1200)));
}

TEST(LogRateLimiter, ALineAfterTheWindowTakesTheSummaryFirst) {
  LogRateLimiter limit(1, std::chrono::seconds(1));
  EXPECT_TRUE(limit.Admit(kStart));
  EXPECT_FALSE(limit.Admit(kStart + milliseconds(500)));
  EXPECT_FALSE(limit.Admit(kStart + milliseconds(600)));
  // The next line, two windows later: the two suppressed before it are reported, and it
  // is admitted.
  const Clock::time_point later = kStart + std::chrono::seconds(2);
  EXPECT_EQ(limit.TakeSuppressed(later), 2u);
  EXPECT_TRUE(limit.Admit(later));
  EXPECT_FALSE(limit.SummaryDue());
}

TEST(LogRateLimiter, SuppressedLinesOfTwoWindowsAddUpUntilReported) {
  LogRateLimiter limit(1, std::chrono::seconds(1));
  EXPECT_TRUE(limit.Admit(kStart));
  EXPECT_FALSE(limit.Admit(kStart + milliseconds(1)));
  // The next window starts with this line (admitted) and suppresses the one after it.
  EXPECT_TRUE(limit.Admit(kStart + milliseconds(1500)));
  EXPECT_FALSE(limit.Admit(kStart + milliseconds(1600)));
  ASSERT_TRUE(limit.SummaryDue());
  EXPECT_LE(*limit.SummaryDue(), kStart + milliseconds(1600)) << "the first window's count is due already";
  EXPECT_EQ(limit.TakeSuppressed(kStart + milliseconds(2600)), 2u);
}

TEST(LogRateLimiter, QuietTimeNeitherAdmitsMoreNorReportsAnything) {
  LogRateLimiter limit(2, std::chrono::seconds(1));
  EXPECT_EQ(limit.TakeSuppressed(kStart), 0u);
  EXPECT_FALSE(limit.SummaryDue());
  EXPECT_TRUE(limit.Admit(kStart + std::chrono::hours(5)));
  EXPECT_TRUE(limit.Admit(kStart + std::chrono::hours(5)));
  EXPECT_FALSE(limit.Admit(kStart + std::chrono::hours(5)));
}

}  // namespace
}  // namespace conveyor
