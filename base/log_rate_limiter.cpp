// Fixed-window budget for log lines (see log_rate_limiter.h).
#include "log_rate_limiter.h"

namespace conveyor {

void LogRateLimiter::Roll(Clock::time_point now) {
  if (window_start_ && now < *window_start_ + window_) return;
  unreported_ += suppressed_;
  suppressed_ = 0;
  admitted_ = 0;
  window_start_ = now;
}

bool LogRateLimiter::Admit(Clock::time_point now) {
  Roll(now);
  if (admitted_ < budget_) {
    ++admitted_;
    return true;
  }
  ++suppressed_;
  return false;
}

uint64_t LogRateLimiter::TakeSuppressed(Clock::time_point now) {
  if (window_start_ && now >= *window_start_ + window_) Roll(now);
  const uint64_t n = unreported_;
  unreported_ = 0;
  return n;
}

std::optional<LogRateLimiter::Clock::time_point> LogRateLimiter::SummaryDue() const {
  if (unreported_ > 0) return window_start_;
  if (suppressed_ > 0) return *window_start_ + window_;
  return std::nullopt;
}

}  // namespace conveyor
