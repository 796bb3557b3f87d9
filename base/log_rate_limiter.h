// A budget for log lines of one kind: at most `budget` lines in each fixed window, the
// rest counted and reported once their window has passed ("suppressed K similar lines"),
// so a flood of one event cannot drown the log, and the log still says it happened.
// Time comes in as arguments, so that tests drive it without waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace conveyor {

class LogRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  LogRateLimiter(int budget, Clock::duration window) : budget_(budget), window_(window) {}

  // Whether a line may be written at `now`; when not, it is counted as suppressed.
  bool Admit(Clock::time_point now);
  // The lines suppressed in windows that have passed by `now`, now reported: the count is
  // returned once and then starts again from 0. Lines suppressed in the window still
  // running wait for its end.
  uint64_t TakeSuppressed(Clock::time_point now);
  // When TakeSuppressed will next return more than 0 (possibly already), or none when no
  // line is suppressed.
  std::optional<Clock::time_point> SummaryDue() const;

 private:
  // Starts a new window at `now` once the current one has passed.
  void Roll(Clock::time_point now);

  const int budget_;
  const Clock::duration window_;
  std::optional<Clock::time_point> window_start_;  // none before the first line
  int admitted_ = 0;            // in the current window
  uint64_t suppressed_ = 0;     // in the current window
  uint64_t unreported_ = 0;     // in windows that have passed
};

}  // namespace conveyor
